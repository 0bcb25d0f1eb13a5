"""The relay (tournaments.hosting.relay) in a process of its own, one per runner process.

Why a process: a hosted bot's move crosses the relay twice (referee -> relay -> bot -> relay
-> referee). With the relay's loop as a thread of the runner, each crossing also needs the
runner's interpreter lock, shared with every other thread of the runner (a Celery
runner's worker threads, each session's watcher, the spawner); with every core busy, the
thread holding it may be one the scheduler has just preempted, and the relay waits until
it runs again. Measured side by side (benchmarks/hosting_bench.py --candidates --load 2,
benchmarks/README.md, "The bar under contention: the candidates side by side"): with two
busy loops on two cores the sandboxed bot's median move was 1.67x a remote bot's through
this process against 3.67x through the thread in the same run (3.19x vs 4.38x in another,
3.03x vs 2.55x in a third); the bar of 1.2x is met without contention, not with every core
busy (what is left is the hop itself with the bot in a scheduling group of its own; for
a referee on the runner's host there is no hop now: tournaments.hosting.nohop). The relay's sockets,
rules (max_connections, the pool-following) and code are those of RelayHub, unchanged.

`RelayProcess` has RelayHub's interface (`open()` -> a relay with `set_targets`, `close`,
`stats`, `socket_path`; `close()`), started on first use. The child is `python -m tournaments.hosting.relay_process`:
JSON lines on its stdin (requests) and stdout (answers), one at a time; it ends, removing
its sockets, when its stdin closes (the runner stopped or died). Should it fail to start,
the runner keeps its relay in a thread (RelayHub, logged): slower moves on a busy host,
not an outage. No Django here.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import subprocess
import sys
import threading
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import IO, Any

from bots_sdk.client import referee_socket_name
from tournaments.hosting.relay import SEED_SOCKET, Relay, RelayError, RelayHub, RelayStats

__all__ = ["NO_PROCESS_ENV", "RelayProcess", "RemoteRelay"]

log = logging.getLogger("tournaments.hosting.relay_process")

_ROOT = Path(__file__).resolve().parents[2]  # where `tournaments` is importable from
#: Set (to anything): relay in a thread of the runner, as before (benchmarks compare them).
NO_PROCESS_ENV = "TIENLEN_RELAY_IN_THREAD"


class RemoteRelay:
    """A session's relay sockets, served by the relay process."""

    def __init__(self, owner: RelayProcess, relay_id: int, directory: Path) -> None:
        self.owner = owner
        self.relay_id = relay_id
        self.directory = directory
        self.closed = False
        self._stats = RelayStats()

    def set_targets(self, targets: Sequence[str]) -> None:
        self.owner._call({"op": "set_targets", "id": self.relay_id, "targets": list(targets)})

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            answer = self.owner._call({"op": "close", "id": self.relay_id})
            self._stats = RelayStats(**answer["stats"])

    @property
    def stats(self) -> RelayStats:
        if not self.closed and self.owner.alive:
            self._stats = RelayStats(**self.owner._call({"op": "stats", "id": self.relay_id})["stats"])
        return self._stats

    def socket_path(self, address: str | None) -> Path:
        return self.directory / (SEED_SOCKET if address is None else referee_socket_name(address))


class RelayProcess:
    """The runner's relay process (started on first use), with RelayHub's interface."""

    def __init__(self) -> None:
        self._proc: subprocess.Popen[str] | None = None
        self._lock = threading.Lock()
        self._next = 0
        self.relays: list[RemoteRelay] = []
        self._fallback: RelayHub | None = None  # the relay in a thread, if the process cannot start

    @property
    def alive(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    def start(self) -> None:
        """Start the child and wait for its first answer (raises OSError/RelayError if it cannot)."""
        with self._lock:
            if self._proc is None:
                if os.environ.get(NO_PROCESS_ENV):
                    raise RelayError(f"{NO_PROCESS_ENV} is set")
                env = {**os.environ, "PYTHONPATH": os.pathsep.join(
                    p for p in (str(_ROOT), os.environ.get("PYTHONPATH", "")) if p)}
                self._proc = subprocess.Popen(
                    [sys.executable, "-m", "tournaments.hosting.relay_process"], env=env, text=True,
                    stdin=subprocess.PIPE, stdout=subprocess.PIPE, close_fds=True, bufsize=1)
                self._request({"op": "ping"})

    def _request(self, request: dict[str, Any]) -> dict[str, Any]:
        proc = self._proc
        if proc is None or proc.stdin is None or proc.stdout is None:
            raise RelayError("the relay process is not running")
        try:
            proc.stdin.write(json.dumps(request) + "\n")
            proc.stdin.flush()
            line = proc.stdout.readline()
        except (OSError, ValueError) as exc:
            raise RelayError(f"the relay process is gone: {exc}") from None
        if not line:
            raise RelayError(f"the relay process ended (exit status {proc.poll()})")
        answer: dict[str, Any] = json.loads(line)
        if not answer.get("ok"):
            raise RelayError(answer.get("error", "the relay process refused"))
        return answer

    def _call(self, request: dict[str, Any]) -> dict[str, Any]:
        self.start()
        with self._lock:
            return self._request(request)

    def open(self, directory: Path, targets: Sequence[str], *, gid: int | None = None,
             max_connections: int = 8) -> RemoteRelay | Relay:
        if self._fallback is None:
            try:
                self.start()
            except (OSError, RelayError) as exc:
                self.close()
                log.warning("hosting relay: no relay process (%s); relaying in a thread of the runner, "
                            "hosted bots' moves wait longer on a busy host", exc)
                self._fallback = RelayHub()
        if self._fallback is not None:
            return self._fallback.open(directory, targets, gid=gid, max_connections=max_connections)
        directory.mkdir(parents=True, exist_ok=True)
        with self._lock:
            self._next += 1
            relay_id = self._next
        self._call({"op": "open", "id": relay_id, "directory": str(directory), "targets": list(targets),
                    "gid": gid, "max_connections": max_connections})
        relay = RemoteRelay(self, relay_id, directory)
        self.relays.append(relay)
        return relay

    def close(self) -> None:
        """End the relay process (every relay's sockets go with it) or the fallback's loop."""
        if self._fallback is not None:
            self._fallback.close()
            self._fallback = None
        with self._lock:
            proc, self._proc = self._proc, None
        self.relays.clear()
        if proc is None:
            return
        assert proc.stdin is not None and proc.stdout is not None
        with contextlib.suppress(OSError):
            proc.stdin.close()  # the child closes every relay and ends
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
        proc.stdout.close()


def serve(requests: IO[str], answers: IO[str]) -> None:
    """The child: one RelayHub, driven by JSON lines until `requests` ends."""
    hub = RelayHub()
    relays: dict[int, Any] = {}
    try:
        for line in requests:
            try:
                request = json.loads(line)
                op = request["op"]
                answer: dict[str, Any] = {"ok": True}
                if op == "open":
                    relays[request["id"]] = hub.open(Path(request["directory"]), request["targets"],
                                                     gid=request["gid"], max_connections=request["max_connections"])
                    answer["slice_problem"] = hub.slice_problem
                elif op == "set_targets":
                    relays[request["id"]].set_targets(request["targets"])
                elif op == "close":
                    relay = relays.pop(request["id"])
                    relay.close()
                    hub.relays.remove(relay)
                    answer["stats"] = asdict(relay.stats)
                elif op == "stats":
                    answer["stats"] = asdict(relays[request["id"]].stats)
                elif op != "ping":
                    raise RelayError(f"unknown request {op!r}")
            except Exception as exc:  # every failure is answered, the loop goes on
                answer = {"ok": False, "error": f"{exc}" if isinstance(exc, RelayError) else f"{type(exc).__name__}: {exc}"}
            answers.write(json.dumps(answer) + "\n")
            answers.flush()
    finally:
        hub.close()


if __name__ == "__main__":
    serve(sys.stdin, sys.stdout)
