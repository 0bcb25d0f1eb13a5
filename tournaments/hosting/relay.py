"""A way out of a hosted bot's sandbox: unix sockets relayed to the referees.

A sandboxed bot has no network at all (its own empty network namespace). The runner gives
it one directory, bind-mounted read-only, holding unix sockets that this relay listens on
(on the host side) and forwards, byte for byte, to referee TCP addresses the runner chose;
nothing else is reachable. In that directory:

- `seed.sock` reaches a live referee of the pool (the first of the targets that accepts,
  in order): the address the bot is started with (`TIENLEN_SERVER=unix:.../seed.sock`);
- one socket per live referee, named `referee_socket_name(address)` for the address the
  referee advertises in the pool (`bots_sdk.client`), so the SDK's pool-following maps
  every `RefereePool` address to its socket (`BotClient(address_map=...)`) and fails over
  between referees exactly as a remote bot does.

A referee on the runner's own host may be reached with no relay at all (its own unix
socket, tournaments.hosting.nohop); its relay socket is still there.

`set_targets()` follows the pool: sockets of referees that left are removed (their open
streams are cut), new ones appear. A session may hold at most `max_connections` relayed
connections at once (a bot cannot make the relay flood a referee).

One event loop in one daemon thread serves every session of a process (`RelayHub`): uvloop's
(libuv, in C) when it is installed (the platform's `hosting` extra), else asyncio's own. The relay moves
bytes with protocol callbacks and no task per message. What it adds to a move is measured
in benchmarks/hosting_bench.py: on a loaded machine uvloop's loop cost a round trip about
half of what asyncio's did, as much as socat. The loop's thread asks for a short
scheduling slice (tournaments.hosting.latency). A runner runs the hub in a process of its
own (tournaments.hosting.relay_process: why). No Django here.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from bots_sdk.client import referee_socket_name
from tournaments.hosting import latency

__all__ = ["SEED_SOCKET", "Relay", "RelayError", "RelayHub", "RelayStats"]

log = logging.getLogger("tournaments.hosting.relay")

SEED_SOCKET = "seed.sock"
MAX_SOCKET_PATH = 107  # sun_path is 108 bytes with its NUL
HIGH_WATER = 1 << 20
CONNECT_TIMEOUT_S = 5.0


class RelayError(Exception):
    """A relay socket could not be created (the message says which and why)."""


@dataclass
class RelayStats:
    accepted: int = 0
    refused: int = 0  # over max_connections
    failed: int = 0  # the referee could not be reached
    open: int = 0
    bytes_up: int = 0  # bot -> referee
    bytes_down: int = 0


class _Side(asyncio.Protocol):
    """One end of a relayed connection; what it receives is written to its peer."""

    def __init__(self, relay: Relay, upstream: bool) -> None:
        self.relay = relay
        self.upstream = upstream  # this side receives from the bot
        self.transport: asyncio.Transport | None = None
        self.peer: _Side | None = None
        self.early: list[bytes] = []  # received before the peer is connected
        self.early_eof = False
        self.closed = False
        self.on_made: Callable[[_Side], None] | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # (uvloop's are not subclasses)
        if self.on_made is not None:
            self.on_made(self)

    def data_received(self, data: bytes) -> None:
        if self.upstream:
            self.relay.stats.bytes_up += len(data)
        else:
            self.relay.stats.bytes_down += len(data)
        peer = self.peer
        if peer is not None and peer.transport is not None:
            peer.transport.write(data)
        else:
            self.early.append(data)
            if sum(map(len, self.early)) > HIGH_WATER and self.transport is not None:
                self.transport.pause_reading()

    def eof_received(self) -> bool:
        peer = self.peer
        if peer is not None and peer.transport is not None:
            if peer.transport.can_write_eof():
                peer.transport.write_eof()
            else:
                peer.transport.close()
        else:
            self.early_eof = True
        return True  # keep our writing half open until the peer closes

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        peer = self.peer
        if peer is not None and peer.transport is not None:
            peer.transport.close()  # after what it still has to write
        self.relay._lost(self)

    # flow control: a slow reader on one side pauses reading on the other
    def pause_writing(self) -> None:
        if self.peer is not None and self.peer.transport is not None:
            self.peer.transport.pause_reading()

    def resume_writing(self) -> None:
        if self.peer is not None and self.peer.transport is not None:
            self.peer.transport.resume_reading()

    def link(self, peer: _Side) -> None:
        self.peer = peer
        assert peer.transport is not None
        for chunk in self.early:
            peer.transport.write(chunk)
        self.early.clear()
        if self.early_eof and peer.transport.can_write_eof():
            peer.transport.write_eof()
        if self.transport is not None:
            self.transport.resume_reading()


class Relay:
    """The relay sockets of one session, in `directory` (owned by the runner: the bot can
    connect to the sockets, not create or remove any)."""

    def __init__(self, hub: RelayHub, directory: Path, *, gid: int | None, max_connections: int) -> None:
        self.hub = hub
        self.directory = directory
        self.gid = gid
        self.max_connections = max_connections
        self.targets: list[str] = []
        self.servers: dict[str, asyncio.AbstractServer] = {}  # socket name -> server
        self.sides: dict[str, set[_Side]] = {}  # socket name -> the bot-side ends of its connections
        self.stats = RelayStats()
        self.closed = False
        self._connecting: set[asyncio.Task[None]] = set()

    # ------------------------------------------------------------------ from any thread
    def set_targets(self, targets: Sequence[str]) -> None:
        """The referees' addresses (HOST:PORT as the pool advertises them), the seed's
        preferred one first. Sockets of addresses no longer given are removed."""
        self.hub.call(self._set_targets(list(dict.fromkeys(targets))))

    def close(self) -> None:
        if not self.closed:
            self.hub.call(self._close())

    def socket_path(self, address: str | None) -> Path:
        """The host path of the socket for `address` (None: the seed socket)."""
        return self.directory / (SEED_SOCKET if address is None else referee_socket_name(address))

    # ------------------------------------------------------------------ on the loop
    async def _set_targets(self, targets: list[str]) -> None:
        for address in targets:
            host, sep, port = address.rpartition(":")
            if not sep or not host or not port.isdigit():
                raise RelayError(f"a referee address must be HOST:PORT, got {address!r}")
        self.targets = targets
        wanted = {referee_socket_name(a): a for a in targets}
        if targets:
            wanted[SEED_SOCKET] = ""
        for name in [n for n in self.servers if n not in wanted]:
            await self._remove(name)
        for name, address in wanted.items():
            if name not in self.servers:
                await self._listen(name, address or None)

    async def _listen(self, name: str, address: str | None) -> None:
        path = self.directory / name
        if len(os.fsencode(path)) > MAX_SOCKET_PATH:
            raise RelayError(f"relay socket path too long for a unix socket ({len(str(path))} "
                             f"bytes, at most {MAX_SOCKET_PATH}): {path}; use a shorter state directory")
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
        loop = asyncio.get_running_loop()
        self.sides[name] = set()
        try:
            server = await loop.create_unix_server(lambda: self._accepted(name, address), str(path))
            os.chmod(path, 0o660)
            if self.gid is not None:
                os.chown(path, 0, self.gid)
        except OSError as exc:
            raise RelayError(f"cannot listen on {path}: {exc}") from None
        self.servers[name] = server

    async def _remove(self, name: str) -> None:
        server = self.servers.pop(name)
        server.close()
        for side in list(self.sides.pop(name, ())):
            if side.transport is not None:
                side.transport.abort()
        with contextlib.suppress(FileNotFoundError):
            (self.directory / name).unlink()

    async def _close(self) -> None:
        self.closed = True
        for task in list(self._connecting):
            task.cancel()
        for name in list(self.servers):
            await self._remove(name)

    def _accepted(self, name: str, address: str | None) -> _Side:
        side = _Side(self, upstream=True)
        live = sum(len(s) for s in self.sides.values())
        if live >= self.max_connections:
            self.stats.refused += 1
            side.closed = True
            side.on_made = self._refuse
            return side
        self.stats.accepted += 1
        self.stats.open += 1
        self.sides.setdefault(name, set()).add(side)

        def made(side: _Side) -> None:
            task = asyncio.ensure_future(self._connect(side, address))
            self._connecting.add(task)
            task.add_done_callback(self._connecting.discard)

        side.on_made = made
        return side

    @staticmethod
    def _refuse(side: _Side) -> None:
        assert side.transport is not None
        side.transport.abort()

    async def _connect(self, side: _Side, address: str | None) -> None:
        assert side.transport is not None
        side.transport.pause_reading()
        candidates = [address] if address else list(self.targets)
        loop = asyncio.get_running_loop()
        for target in candidates:
            host, _, port = target.rpartition(":")
            try:
                async with asyncio.timeout(CONNECT_TIMEOUT_S):
                    _, peer = await loop.create_connection(
                        lambda: _Side(self, upstream=False), host.strip("[]"), int(port))
            except (OSError, TimeoutError) as exc:
                log.info("relay %s: %s unreachable: %s", self.directory, target, exc)
                continue
            if side.closed:
                assert peer.transport is not None
                peer.transport.close()
                return
            peer.peer = side
            side.link(peer)
            peer.link(side)
            return
        self.stats.failed += 1
        side.transport.close()

    def _lost(self, side: _Side) -> None:
        if side.upstream:
            for sides in self.sides.values():
                if side in sides:
                    sides.discard(side)
                    self.stats.open -= 1


def _new_loop() -> asyncio.AbstractEventLoop:
    try:
        import uvloop
    except ImportError:  # the SDK alone, a laptop: asyncio's loop does the same, slower
        return asyncio.new_event_loop()
    return uvloop.new_event_loop()


class RelayHub:
    """The relay loop of this process: one daemon thread running asyncio, started on
    first use; `close()` stops it (tests, a runner shutting down).

    The thread asks the kernel for short scheduling slices (tournaments.hosting.latency:
    why, and what it does where the kernel cannot); `short_slice=False` keeps the default
    (benchmarks compare both). `slice_problem` says why the request failed, if it did."""

    def __init__(self, *, short_slice: bool = True) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self.relays: list[Relay] = []
        self.short_slice = short_slice
        self.slice_problem: str | None = None
        self.thread_id: int | None = None  # the relay thread's kernel tid, once started

    def _ensure(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None:
                loop = _new_loop()
                ready = threading.Event()

                def main() -> None:
                    self.thread_id = threading.get_native_id()
                    if self.short_slice:
                        self.slice_problem = latency.request_short_slice()
                        if self.slice_problem:
                            log.warning("hosting relay: default scheduling slice (%s): hosted "
                                        "bots' moves wait longer on a busy host", self.slice_problem)
                    asyncio.set_event_loop(loop)
                    loop.call_soon(ready.set)
                    loop.run_forever()
                    loop.close()

                self._thread = threading.Thread(target=main, name="hosting-relay", daemon=True)
                self._thread.start()
                ready.wait(10)
                self._loop = loop
            return self._loop

    def call(self, coro: Any, timeout: float = 30.0) -> Any:
        """Run `coro` on the relay loop from another thread and return its result."""
        loop = self._ensure()
        if threading.current_thread() is self._thread:
            raise RuntimeError("RelayHub.call() from the relay loop itself")
        future: Future[Any] = asyncio.run_coroutine_threadsafe(coro, loop)
        return future.result(timeout)

    def open(self, directory: Path, targets: Sequence[str], *, gid: int | None = None,
             max_connections: int = 8) -> Relay:
        """A session's relay: the sockets in `directory` (created if missing) for `targets`."""
        directory.mkdir(parents=True, exist_ok=True)
        relay = Relay(self, directory, gid=gid, max_connections=max_connections)
        try:
            relay.set_targets(targets)
        except BaseException:
            relay.close()
            raise
        self.relays.append(relay)
        return relay

    def close(self) -> None:
        with self._lock:
            loop, thread = self._loop, self._thread
            self._loop = self._thread = None
        if loop is None or thread is None:
            return
        for relay in self.relays:
            if not relay.closed:
                asyncio.run_coroutine_threadsafe(relay._close(), loop).result(10)
        self.relays.clear()
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
