"""The platform's processes on one machine: started, probed and always stopped.

`manage.py run_demo` and the end-to-end tests run the whole platform as children of one
process: a referee, Celery workers, Celery beat, a web server and one process per bot.
`ProcessGroup` exists so that every one of them dies with the parent however it ends (Ctrl-C, an
exception, a failed assertion in a test): each child leads its own process group, and the
group is signalled, so grandchildren (Celery's pool processes, uvicorn workers) go too.

This is tooling around the platform, not part of it: it lives outside the `tournaments`
domain app (which must not know about processes, terminals or the web site's URLs).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[2]


class ProcessFailed(RuntimeError):
    """A managed process exited on its own; the message carries the tail of its log."""


@dataclass
class ManagedProcess:
    name: str
    argv: list[str]
    log_path: Path
    popen: subprocess.Popen[bytes]
    expected_exit: bool = field(default=False)

    @property
    def pid(self) -> int:
        return self.popen.pid

    def alive(self) -> bool:
        return self.popen.poll() is None

    def log_tail(self, lines: int = 25) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def signal_group(self, sig: int) -> None:
        with suppress(ProcessLookupError):
            os.killpg(self.popen.pid, sig)


# Every child starts through this one-line launcher: it asks Linux for SIGTERM when its
# parent dies (even by SIGKILL, when no `finally` runs), then execs the real command. A
# `preexec_fn` doing the same would make subprocess fork() and run Python in the child
# before exec; in a parent that has gRPC loaded, gRPC's fork handlers then start a poller
# in that child whose epoll descriptor `close_fds` closes, and the child aborts with
# "epoll_wait error: Bad file descriptor" (seen in CI on a bot process).
_PDEATHSIG_LAUNCHER = (
    "import os, signal, sys\n"
    "if sys.platform.startswith('linux'):\n"
    "    import ctypes\n"
    "    try:\n"
    "        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)\n"
    "    except (OSError, AttributeError):\n"
    "        pass\n"
    # The parent may have died before prctl took effect: then nobody will signal us.
    "if os.getppid() != int(sys.argv[1]):\n"
    "    os._exit(1)\n"
    # Python ignores these; exec would pass that on (subprocess normally restores them).
    "for name in ('SIGPIPE', 'SIGXFSZ'):\n"
    "    if hasattr(signal, name):\n"
    "        signal.signal(getattr(signal, name), signal.SIG_DFL)\n"
    "os.execvp(sys.argv[2], sys.argv[2:])\n"
)


def _with_pdeathsig(argv: Sequence[str]) -> list[str]:
    return [sys.executable, "-c", _PDEATHSIG_LAUNCHER, str(os.getpid()), *argv]


def child_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of every child: ours, with the project and `platform/` importable."""
    env = dict(os.environ)
    path = [str(PROJECT_ROOT / "platform"), str(PROJECT_ROOT)]
    if env.get("PYTHONPATH"):
        path.append(env["PYTHONPATH"])
    env["PYTHONPATH"] = os.pathsep.join(path)
    env.setdefault("DJANGO_SETTINGS_MODULE", "tienlen_site.settings")
    env["PYTHONUNBUFFERED"] = "1"
    env.update(extra or {})
    return env


class ProcessGroup:
    """Starts named child processes and guarantees they are all gone on exit."""

    def __init__(self, log_dir: Path, *, stop_timeout: float = 15.0) -> None:
        self.log_dir = log_dir
        self.stop_timeout = stop_timeout
        self.processes: dict[str, ManagedProcess] = {}
        log_dir.mkdir(parents=True, exist_ok=True)

    def start(
        self, name: str, argv: Sequence[str], *, env: Mapping[str, str] | None = None
    ) -> ManagedProcess:
        if name in self.processes and self.processes[name].alive():
            raise ValueError(f"process {name!r} is already running")
        log_path = self.log_dir / f"{name}.log"
        # A fresh log per run; a restart within this run appends to the same file.
        mode = "ab" if name in self.processes else "wb"
        with open(log_path, mode) as log:
            popen = subprocess.Popen(
                _with_pdeathsig(argv),
                cwd=PROJECT_ROOT,
                env=child_env(env),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # its own process group: we can signal its children
            )
        process = ManagedProcess(name, list(argv), log_path, popen)
        self.processes[name] = process
        return process

    def stop(self, name: str, *, sig: int = signal.SIGTERM) -> int | None:
        """Signal the process group, wait, then SIGKILL what is left; returns the exit code."""
        process = self.processes[name]
        process.expected_exit = True
        if process.alive():
            # The leader first, so it shuts its own children down in order (a Celery worker
            # finishes or requeues its task); whatever is left of the group is killed after.
            with suppress(ProcessLookupError):
                os.kill(process.pid, sig)
            try:
                process.popen.wait(timeout=self.stop_timeout)
            except subprocess.TimeoutExpired:
                process.signal_group(signal.SIGKILL)
                process.popen.wait(timeout=self.stop_timeout)
        # Grandchildren may outlive their parent (e.g. a pool process): finish the group.
        process.signal_group(signal.SIGKILL)
        return process.popen.returncode

    def kill(self, name: str) -> None:
        """SIGKILL the whole group at once: a crash, as the fault tests need it."""
        self.stop(name, sig=signal.SIGKILL)

    def stop_all(self) -> None:
        """Stop every child at once, newest first, within one `stop_timeout` in all.

        One by one, each with its own grace period, a Ctrl-C of the demo took a minute on
        a loaded machine (seven children: web, bots, worker, referee, each shutting down
        slowly); signalled together they shut down side by side."""
        names = list(reversed(list(self.processes)))
        for name in names:
            process = self.processes[name]
            process.expected_exit = True
            if process.alive():
                with suppress(ProcessLookupError):
                    os.kill(process.pid, signal.SIGTERM)
        deadline = time.monotonic() + self.stop_timeout
        for name in names:
            process = self.processes[name]
            try:
                process.popen.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                process.signal_group(signal.SIGKILL)
                process.popen.wait(timeout=self.stop_timeout)
            process.signal_group(signal.SIGKILL)  # grandchildren that outlived their parent

    def check_alive(self) -> None:
        for process in self.processes.values():
            if not process.expected_exit and not process.alive():
                raise ProcessFailed(
                    f"{process.name} exited with status {process.popen.returncode}; "
                    f"last lines of {process.log_path}:\n{process.log_tail()}"
                )

    def __enter__(self) -> ProcessGroup:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop_all()


@contextmanager
def terminate_on_signals() -> Iterator[None]:
    """Turn SIGTERM/SIGHUP into KeyboardInterrupt so `finally` blocks clean up children."""

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt(signal.Signals(signum).name)

    previous = {sig: signal.signal(sig, interrupt) for sig in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def port_is_free(host: str, port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


def wait_until(
    condition: Callable[[], bool],
    *,
    timeout: float,
    what: str,
    group: ProcessGroup | None = None,
    interval: float = 0.25,
) -> None:
    """Poll `condition`; fail early with the log of any managed process that died."""
    deadline = time.monotonic() + timeout
    while True:
        if group is not None:
            group.check_alive()
        if condition():
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(interval)


def python_argv(*args: str) -> list[str]:
    return [sys.executable, *args]


def referee_healthy(target: str) -> bool:
    import grpc
    from grpc_health.v1 import health_pb2, health_pb2_grpc

    try:
        with grpc.insecure_channel(target) as channel:
            reply = health_pb2_grpc.HealthStub(channel).Check(
                health_pb2.HealthCheckRequest(service=""), timeout=2
            )
    except grpc.RpcError:
        return False
    return reply.status == health_pb2.HealthCheckResponse.SERVING


def referee_connected_bot_ids(target: str, organizer_token: str) -> set[str]:
    from referee_service.organizer_client import OrganizerClient

    try:
        with OrganizerClient(target, organizer_token) as client:
            return {b.bot_id for b in client.list_bots()}
    except Exception:  # not up yet, or restarting: the caller polls again
        return set()


def web_answering(host: str, port: int) -> bool:
    import urllib.request

    try:
        with urllib.request.urlopen(f"http://{host}:{port}/healthz", timeout=2) as response:
            return response.status == 200
    except OSError:
        return False


def celery_worker_argv(*, concurrency: int, name: str) -> list[str]:
    return python_argv(
        "-m", "celery", "-A", "tienlen_site.celery:app", "worker",
        "--loglevel", "INFO", "--concurrency", str(concurrency),
        # the tables and the luck baselines (settings.TIENLEN_ANALYSIS_QUEUE) alike
        "--queues", f"celery,{os.environ.get('TIENLEN_ANALYSIS_QUEUE', 'analysis')}",
        "--hostname", f"{name}-{os.getpid()}@%h", "--without-gossip", "--without-mingle",
    )


def celery_beat_argv() -> list[str]:
    """Celery beat as a process of its own: what ticks ladders and starts scheduled
    tournaments (`tournaments.tasks.tournaments_tick`, every TIENLEN_TICK_SECONDS).

    Why not the worker's `-B` (beat embedded in the worker)? Celery documents `-B` for a
    single worker in development only: every worker started with it would tick, and two
    beats start a due tournament's job twice and tick each ladder twice. The demo's
    processes are a supervised set the end-to-end tests also start, kill and restart
    (workers above all: tests/e2e/test_lease_recovery.py, test_faults.py); an embedded beat
    dies with its worker and comes back with every new one. As a process of its own there
    is exactly one, whatever happens to the workers, with its own log (`beat.log`). It uses
    the configured scheduler (django-celery-beat's, in the database: the same as the Docker
    deployment's `beat` service), so it keeps no schedule file in the project."""
    return python_argv(
        "-m", "celery", "-A", "tienlen_site.celery:app", "beat", "--loglevel", "INFO",
    )


def web_argv(*, host: str, port: int) -> list[str]:
    return python_argv(
        "-m", "uvicorn", "tienlen_site.asgi:application", "--host", host, "--port", str(port),
        "--no-access-log",
    )
