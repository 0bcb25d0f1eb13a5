"""One hosted bot session: start it sandboxed, follow it, stop it, and say why it ended.

`Host` is what a runner process holds (one per process: its slots, its relay loop, its
cgroups); `Host.start(BotSpec(...))` starts one sandboxed bot and returns its `HostedBot`,
whose `wait()` / `stop()` give a `SessionEnd`: the exit reason, whose fault it was, the exit
status, the cgroup's record (memory peak, OOM kills, CPU used), the bounded log of its
stdout and stderr and the last lines of its traceback. docs/hosting.md describes the
interface for the platform side.

How a session starts (each step is the platform's, so a failure is `START_FAILED`, never
the bot's fault):

1. claim a free slot (its own host uid; leftovers of a dead runner in that slot killed);
2. copy the bot's code into the session's directory, readable by that uid only, and open
   the relay sockets for the referees;
3. create the session's cgroup (memory without swap, processes, CPU quota and share);
4. start bwrap as the slot's uid (util-linux `setpriv`), under util-linux `prlimit` (open
   files, file size, no core dumps; CPU seconds only for jobs), holding the sandbox before it runs anything
   (`--block-fd`); put the sandbox's first process in the cgroup, then release it;
5. the runtime's launcher, inside, loads the runtime and writes "started" on a
   descriptor it then closes: from there on, an end is the bot's (or the runner's stop).

Stopping: SIGTERM to the bot's main process (the SDK finishes its running tables and
leaves), after `grace_s` SIGKILL of the whole tree (`cgroup.kill`, and the sandbox's
PID namespace dies with its first process): nothing the bot forked survives, not even a
grandchild that double-forked and ignores SIGTERM.

No Django here: a runner may use this module bare. The bwrap processes are started from
one long-lived thread of the Host (`--die-with-parent` is tied to the thread that started
bwrap: a short-lived thread would kill its sandboxes when it ends).
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import enum
import errno
import logging
import os
import secrets
import selectors
import shutil
import signal
import stat
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tournaments.hosting import nohop, runtimes, storage
from tournaments.hosting.cgroups import (
    BotCgroup,
    CgroupError,
    CgroupHost,
    CgroupLimits,
    CgroupUsage,
)
from tournaments.hosting.relay import SEED_SOCKET, Relay, RelayError, RelayHub, RelayStats
from tournaments.hosting.relay_process import RelayProcess, RemoteRelay
from tournaments.hosting.sandbox import (
    INSIDE,
    Binds,
    Layout,
    Limits,
    Slot,
    SlotClaim,
    SlotPool,
    as_slot,
    bwrap_argv,
    rlimits_prefix,
    secret_args,
)
from tournaments.hosting.storage import DEFAULT_STORAGE_MIB, Packed

__all__ = [
    "UNSANDBOXED_VALUE",
    "BotSpec",
    "BoundedLog",
    "ExitReason",
    "HostedBot",
    "Host",
    "HostingConfig",
    "SessionEnd",
    "SlotsFull",
    "classify",
]

log = logging.getLogger("tournaments.hosting")

# The one value of TIENLEN_HOSTING_UNSANDBOXED that turns the sandbox off (development only).
UNSANDBOXED_VALUE = "trusted-bots-only"
UNSANDBOXED_WARNING = (
    "UNSANDBOXED DEVELOPMENT MODE (TIENLEN_HOSTING_UNSANDBOXED=trusted-bots-only): hosted bot "
    "code runs with this runner's own user, files and network; never use it with code you do "
    "not trust")
MAX_CODE_BYTES = 64 * 1024 * 1024
MAX_CODE_FILES = 5000
START_TIMEOUT_S = 20.0
DEFAULT_UID_BASE = 1_500_000
DEFAULT_SLOTS = 16
DEFAULT_CGROUP = "tienlen-sandbox"
# Where this host's referees put their own sockets (`tienlen-referee --unix-dir`): used
# when it exists (no hop, tournaments.hosting.nohop), unless TIENLEN_HOSTING_REFEREE_SOCKETS says otherwise.
DEFAULT_REFEREE_SOCKETS = Path("/run/tienlen/referees")
LOG_DRAIN_S = 5.0


class ExitReason(enum.Enum):
    START_FAILED = "start_failed"  # the sandbox or the runtime could not start: the platform's
    STOPPED = "stopped"  # the runner stopped it
    OUT_OF_MEMORY = "out_of_memory"  # it went over its memory cap
    HOST_OUT_OF_MEMORY = "host_out_of_memory"  # the host's OOM killer, not its cap: the platform's
    TIMED_OUT = "timed_out"  # past the deadline of a job (validation)
    CRASHED = "crashed"  # a non-zero exit status or a signal of its own
    EXITED = "exited"  # exit status 0, on its own


FAULT = {
    ExitReason.START_FAILED: "platform",
    ExitReason.HOST_OUT_OF_MEMORY: "platform",
    ExitReason.STOPPED: "none",
}


@dataclass(frozen=True, slots=True)
class SessionEnd:
    """How a session ended. `fault` is "bot" (count it against the bot: a crash, its
    memory cap, a timeout, leaving on its own), "platform" (never count it: a start that
    failed on our side, the host out of memory) or "none" (the runner stopped it)."""

    reason: ExitReason
    detail: str  # one line for the owner's page
    exit_code: int | None  # the bot's exit status (None: it never started, or a signal)
    signal: int | None  # the signal that killed it
    log: str  # stdout and stderr, bounded (truncated with a marker)
    log_bytes: int  # what it wrote in all
    log_truncated: bool
    last_lines: str  # the end of the log: the traceback of a crash
    started: bool  # the runtime came up (the launcher's line): the bot's code ran
    sandboxed: bool
    started_at: float  # unix time
    ended_at: float
    usage: CgroupUsage | None
    relay: RelayStats | None
    # What it left in its storage (tournaments.hosting.storage), when it had one and its
    # code ran; None otherwise: keep the previous contents (the log says why, if anything
    # was refused).
    storage: Packed | None = None

    @property
    def fault(self) -> str:
        return FAULT.get(self.reason, "bot")

    @property
    def counts_against_bot(self) -> bool:
        return self.fault == "bot"


@dataclass(frozen=True, slots=True)
class HostingConfig:
    """Where a runner keeps its state and which uids its sandboxes run as."""

    state_dir: Path  # sessions and slot locks (keep it short: unix socket paths live there)
    runtimes_dir: Path  # built runtimes (runtimes.ensure)
    uid_base: int = DEFAULT_UID_BASE  # slot n runs as host uid and gid uid_base + n
    slots: int = DEFAULT_SLOTS
    cgroup_base: str = DEFAULT_CGROUP
    bwrap: str = "bwrap"
    unsandboxed: bool = False  # DEVELOPMENT ONLY: run trusted bots without a sandbox
    # The directory of this host's referee sockets (no hop, tournaments.hosting.nohop);
    # None: every referee through the relay.
    referee_sockets: Path | None = None

    @classmethod
    def from_env(cls, var_dir: Path, env: Mapping[str, str] | None = None) -> HostingConfig:
        """TIENLEN_HOSTING_DIR, TIENLEN_HOSTING_RUNTIMES, TIENLEN_SANDBOX_UID_BASE,
        TIENLEN_SANDBOX_SLOTS, TIENLEN_SANDBOX_CGROUP, TIENLEN_HOSTING_UNSANDBOXED (only
        `trusted-bots-only` turns the sandbox off; any other value is an error),
        TIENLEN_HOSTING_REFEREE_SOCKETS (the referees' --unix-dir on this host; default
        /run/tienlen/referees when it exists; `none`: the relay for every referee)."""
        env = os.environ if env is None else env
        unsandboxed = env.get("TIENLEN_HOSTING_UNSANDBOXED", "")
        if unsandboxed not in ("", UNSANDBOXED_VALUE):
            raise ValueError(f"TIENLEN_HOSTING_UNSANDBOXED must be unset or {UNSANDBOXED_VALUE!r} "
                             f"(the development mode without a sandbox), got {unsandboxed!r}")
        state = Path(env.get("TIENLEN_HOSTING_DIR") or runtimes.default_hosting_dir(var_dir))
        named = env.get("TIENLEN_HOSTING_REFEREE_SOCKETS", "")
        local = (None if named == "none" else Path(named) if named
                 else DEFAULT_REFEREE_SOCKETS if DEFAULT_REFEREE_SOCKETS.is_dir() else None)
        return cls(
            state_dir=state,
            runtimes_dir=Path(env.get("TIENLEN_HOSTING_RUNTIMES") or state / "runtimes"),
            uid_base=int(env.get("TIENLEN_SANDBOX_UID_BASE") or DEFAULT_UID_BASE),
            slots=int(env.get("TIENLEN_SANDBOX_SLOTS") or DEFAULT_SLOTS),
            cgroup_base=env.get("TIENLEN_SANDBOX_CGROUP") or DEFAULT_CGROUP,
            unsandboxed=bool(unsandboxed),
            referee_sockets=local,
        )


@dataclass(frozen=True, slots=True)
class BotSpec:
    """What to run. A resident bot: `runtime`, `code_dir`, `token`, `referees`. A job
    (validation): also `command` (argv inside the sandbox, e.g. the Python runtime's
    `[*runtime.launcher(), "check", "/bot/bot.py", "--skip-server"]`), `deadline_s`, and
    `limits.cpu_seconds`; `referees` may be empty (no way out at all)."""

    runtime: str  # "python3.11" or "node20" (runtimes.RUNTIMES)
    code_dir: Path  # the version's files; copied for the session, never changed
    entry: str = ""  # the bot file in code_dir (default bot.py / bot.js)
    token: str = ""  # the bot's own token: only in its environment, never on a command line
    referees: Sequence[str] = ()  # HOST:PORT of each live referee, as the pool advertises them
    max_tables: int = 4
    bot_version: str = ""  # announced in Hello (e.g. the submission's "s3")
    limits: Limits = field(default_factory=Limits)
    command: Sequence[str] | None = None
    deadline_s: float | None = None
    log_bytes: int = 1024 * 1024
    env: Mapping[str, str] = field(default_factory=dict)  # more (non-secret) environment
    label: str = ""  # for the runner's log lines
    # The bot's own storage (tournaments.hosting.storage): a gzipped tar of what its last
    # session left (b"" for none yet), unpacked into a tmpfs of `storage_mib` at /storage;
    # None: no storage at all (validation jobs).
    storage: bytes | None = None
    storage_mib: int = DEFAULT_STORAGE_MIB


class BoundedLog:
    """A session's stdout and stderr, kept to `limit` bytes: the first quarter and the
    last three quarters of what it wrote, with a marker saying how much was left out
    between them. Everything is read (so the bot never blocks on a full pipe) and
    whatever is over the limit is dropped at once: 1 GB of stderr costs no memory or disk."""

    def __init__(self, limit: int) -> None:
        self.limit = max(1024, limit)
        self.head_limit = self.limit // 4
        self.tail_limit = self.limit - self.head_limit
        self.head = bytearray()
        self.tail: collections.deque[bytes] = collections.deque()
        self.tail_size = 0
        self.total = 0

    def write(self, data: bytes) -> None:
        self.total += len(data)
        room = self.head_limit - len(self.head)
        if room > 0:
            self.head += data[:room]
            data = data[room:]
        if not data:
            return
        if len(data) > self.tail_limit:
            data = data[-self.tail_limit:]
        self.tail.append(data)
        self.tail_size += len(data)
        while self.tail and self.tail_size - len(self.tail[0]) >= self.tail_limit:
            self.tail_size -= len(self.tail.popleft())

    @property
    def truncated(self) -> bool:
        return self.total > len(self.head) + min(self.tail_size, self.tail_limit)

    def tail_bytes(self) -> bytes:
        data = b"".join(self.tail)
        return data[-self.tail_limit:] if len(data) > self.tail_limit else data

    def text(self) -> str:
        head = bytes(self.head).decode("utf-8", "replace")
        tail = self.tail_bytes()
        if not self.truncated:
            return head + tail.decode("utf-8", "replace")
        dropped = self.total - len(self.head) - len(tail)
        return (head + f"\n[... {dropped} bytes left out: a session's log is kept to "
                f"{self.limit} bytes, its beginning and its end ...]\n"
                + tail.decode("utf-8", "replace"))

    def last_lines(self, n: int = 25) -> str:
        """The end of the log, from the last Python traceback when there is one."""
        text = (bytes(self.head) if not self.tail else self.tail_bytes()).decode("utf-8", "replace")
        lines = text.rstrip("\n").splitlines()
        for i in range(len(lines) - 1, -1, -1):
            if lines[i].startswith("Traceback (most recent call last):"):
                if len(lines) - i <= 4 * n:
                    return "\n".join(lines[i:][-4 * n:])
                break
        return "\n".join(lines[-n:])


def _host_oom_kills() -> int:
    with contextlib.suppress(OSError, ValueError):
        for line in Path("/proc/vmstat").read_text().splitlines():
            if line.startswith("oom_kill "):
                return int(line.split()[1])
    return 0


def classify(*, started: bool, stop_requested: bool, deadline_hit: bool, status: int | None,
             usage: CgroupUsage | None, memory_cap: int | None, host_oom_delta: int,
             start_error: str = "") -> tuple[ExitReason, str, int | None, int | None]:
    """(reason, detail, exit code, signal) of a session from what was observed.

    `status` is bwrap's: the bot's exit status, 128 + N when a signal N killed it, or a
    negative number when bwrap itself was killed by a signal (the runner's kill)."""
    code: int | None = None
    sig: int | None = None
    if status is not None:
        if status < 0:
            sig = -status
        elif status > 128 and status - 128 < 65:
            sig = status - 128
        else:
            code = status
    how = (f"exit status {code}" if code is not None
           else f"killed by {_signame(sig)}" if sig is not None else "no exit status")
    if start_error or not started:
        if stop_requested and not start_error:
            return ExitReason.STOPPED, "stopped before it had started", code, sig
        return (ExitReason.START_FAILED,
                f"the sandbox could not start ({start_error or how}): the platform's fault, "
                "not the bot's", code, sig)
    if stop_requested:
        return ExitReason.STOPPED, f"stopped by the runner ({how})", code, sig
    if deadline_hit:
        return ExitReason.TIMED_OUT, "still running at its deadline: killed", code, sig
    oom = usage.oom_kills if usage else 0
    if oom and code != 0:
        capped = bool(usage and (usage.memory_limit_hits or (
            memory_cap and usage.memory_peak_bytes and usage.memory_peak_bytes >= 0.9 * memory_cap)))
        if not capped and host_oom_delta > 0:
            return (ExitReason.HOST_OUT_OF_MEMORY,
                    f"the host ran out of memory and its OOM killer ended the bot ({how}): the "
                    "platform's fault, not the bot's", code, sig)
        cap = f"{memory_cap // (1024 * 1024)} MiB " if memory_cap else ""
        return (ExitReason.OUT_OF_MEMORY,
                f"out of memory: it reached its {cap}memory cap and the OOM killer ended "
                f"{oom} process(es) ({how})", code, sig)
    forks = (f"; {usage.pids_limit_hits} fork(s) refused by its process cap"
             if usage and usage.pids_limit_hits else "")
    if code == 0:
        return ExitReason.EXITED, f"it left on its own (exit status 0){forks}", code, sig
    return ExitReason.CRASHED, f"it crashed ({how}){forks}", code, sig


def _signame(sig: int | None) -> str:
    try:
        return signal.Signals(sig or 0).name
    except ValueError:
        return f"signal {sig}"


def check_code(src: Path) -> None:
    """ValueError unless `src` is a folder of regular files and folders only (a link could
    point the runner, which runs as root, at any host file) within MAX_CODE_FILES and
    MAX_CODE_BYTES."""
    if not src.is_dir():
        raise ValueError(f"the bot's code directory {src} does not exist")
    count = size = 0
    for dirpath, dirnames, filenames in os.walk(src, followlinks=False):
        rel = Path(dirpath).relative_to(src)
        for name in [*dirnames, *filenames]:
            st = (Path(dirpath) / name).lstat()
            if stat.S_ISLNK(st.st_mode) or not (stat.S_ISDIR(st.st_mode) or stat.S_ISREG(st.st_mode)):
                raise ValueError(f"the bot's code may hold only files and folders: {rel / name} is not one")
            if stat.S_ISREG(st.st_mode):
                count += 1
                size += st.st_size
        if count > MAX_CODE_FILES or size > MAX_CODE_BYTES:
            raise ValueError(f"the bot's code is over {MAX_CODE_FILES} files or "
                             f"{MAX_CODE_BYTES // (1024 * 1024)} MiB")


def _copy_code(src: Path, dst: Path, gid: int | None) -> None:
    """Copy a bot's files for its session (checked again: check_code), owned by root and
    readable by the slot's group only."""
    check_code(src)
    dst.mkdir(mode=0o750)
    for dirpath, dirnames, filenames in os.walk(src, followlinks=False):
        rel = Path(dirpath).relative_to(src)
        for name in dirnames:
            (dst / rel / name).mkdir(mode=0o750)
        for name in filenames:
            target = dst / rel / name
            shutil.copyfile(Path(dirpath) / name, target, follow_symlinks=False)
            os.chmod(target, 0o640)
    if gid is not None:
        for dirpath, _dirs, filenames in os.walk(dst):
            os.chown(dirpath, 0, gid)
            for name in filenames:
                os.chown(os.path.join(dirpath, name), 0, gid)


class Host:
    """A runner process's hosting: the slots, the relay loop, the cgroups, the runtimes.
    `start()` refuses to run anything before the host passed the sandbox check (or the
    development mode was asked for explicitly, which is logged loudly every time)."""

    def __init__(self, config: HostingConfig) -> None:
        # absolute: bwrap starts in / (a relative bind source would not be found)
        config = dataclasses.replace(config, state_dir=config.state_dir.absolute(),
                                     runtimes_dir=config.runtimes_dir.absolute())
        self.config = config
        self.cgroups = CgroupHost.detect(config.cgroup_base)
        self.slots = SlotPool(config.state_dir / "slots", config.uid_base, config.slots)
        self.hub: RelayProcess | RelayHub = RelayProcess()  # the relay: a process of its own (why: there)
        self.sessions: set[HostedBot] = set()
        self._runtimes: dict[str, runtimes.Runtime] = {}
        self._checked = False
        self._lock = threading.Lock()
        # every bwrap is started from this one thread, alive as long as the Host
        self._spawner = ThreadPoolExecutor(max_workers=1, thread_name_prefix="hosting-spawn")

    def check(self) -> None:
        """Raise SandboxUnavailable (one line naming what is missing) unless this host can
        sandbox bots; in the development mode, log the loud warning instead."""
        from tournaments.hosting.check import require_sandbox

        if self.config.unsandboxed:
            log.warning(UNSANDBOXED_WARNING)
        else:
            require_sandbox(self.config, self.cgroups)
        self._checked = True

    def runtime(self, name: str) -> runtimes.Runtime:
        if name not in self._runtimes:
            self._runtimes[name] = runtimes.load(name, self.config.runtimes_dir)
        return self._runtimes[name]

    def start(self, spec: BotSpec, *, on_end: Callable[[HostedBot], None] | None = None) -> HostedBot:
        """Start one hosted bot. Returns at once with a running HostedBot, or with one
        already ended as START_FAILED when the sandbox could not start (the platform's
        fault). Raises ValueError for a spec that cannot be right (no such code folder,
        unknown runtime, a link or more than MAX_CODE_FILES / MAX_CODE_BYTES in the code),
        runtimes.RuntimeError_ when the runtime is not built, and SlotsFull when every slot
        is taken."""
        if not self._checked:
            self.check()
        if spec.runtime not in runtimes.RUNTIMES:
            raise ValueError(f"unknown runtime {spec.runtime!r} (known: {', '.join(sorted(runtimes.RUNTIMES))})")
        runtime = self.runtime(spec.runtime)
        check_code(spec.code_dir)
        entry = spec.entry or runtime.default_entry
        if spec.command is None and not (spec.code_dir / entry).is_file():
            raise ValueError(f"no {entry} in the bot's code folder {spec.code_dir}")
        claim = self.slots.claim()
        if claim is None:
            raise SlotsFull(f"all {self.config.slots} slots of this host are taken")
        bot = HostedBot(self, spec, runtime, claim, on_end)
        with self._lock:
            self.sessions.add(bot)
        bot._start()
        return bot

    def close(self, grace_s: float = 0.0) -> None:
        """Stop every session (SIGKILL unless grace_s), the relay loop and the spawner."""
        for bot in list(self.sessions):
            with contextlib.suppress(Exception):
                bot.stop(grace_s)
        self.hub.close()
        self._spawner.shutdown(wait=True)

    def _spawn(self, argv: list[str], **kw: Any) -> subprocess.Popen[bytes]:
        def spawn() -> subprocess.Popen[bytes]:
            return subprocess.Popen(argv, **kw)

        return self._spawner.submit(spawn).result()

    def _forget(self, bot: HostedBot) -> None:
        with self._lock:
            self.sessions.discard(bot)


class SlotsFull(Exception):
    """Every slot of this host runs a bot."""


class HostedBot:
    """One hosted bot session (see the module docstring). Thread-safe: `stop()` and
    `set_referees()` may be called from any thread; `wait()` from any number."""

    def __init__(self, host: Host, spec: BotSpec, runtime: runtimes.Runtime, claim: SlotClaim,
                 on_end: Callable[[HostedBot], None] | None) -> None:
        self.host = host
        self.spec = spec
        self.runtime = runtime
        self.claim = claim
        self.slot: Slot = claim.slot
        self.id = f"{self.slot.index}-{secrets.token_hex(5)}"
        self.sandboxed = not host.config.unsandboxed
        self.dir = host.config.state_dir / "s" / self.id
        self.log = BoundedLog(spec.log_bytes)
        self.relay: Relay | RemoteRelay | None = None
        # no hop: the host's referee sockets directory when it may be shown to the bot
        # (bound whole: a local referee that joins later is reached straight too), the
        # referees of spec.referees with a socket there at the start, and the one the bot
        # is started on (None: the relay's seed socket)
        self.local_dir: Path | None = None
        self.local: dict[str, Path] = {}
        self.local_seed: Path | None = None
        self.cgroup: BotCgroup | None = None
        self.popen: subprocess.Popen[bytes] | None = None
        self.sandbox_pid: int | None = None  # the sandbox's first process (its PID 1), host pid
        self.started_at = time.time()
        self.runtime_up = threading.Event()  # the launcher's "started"
        self.ended = threading.Event()
        self.end: SessionEnd | None = None
        self._on_end = on_end
        self._stop_requested = False
        self._deadline_hit = False
        self._start_error = ""
        self._exit_status: int | None = None
        self._host_oom_at_start = _host_oom_kills()
        self._lock = threading.Lock()
        self._fds: dict[str, int] = {}
        self._monitor: threading.Thread | None = None

    def __repr__(self) -> str:
        return f"<HostedBot {self.spec.label or self.id} slot {self.slot.index}>"

    # ------------------------------------------------------------------ public
    @property
    def running(self) -> bool:
        return not self.ended.is_set()

    def wait(self, timeout: float | None = None) -> SessionEnd | None:
        """The end, once the session has ended (None if still running after timeout)."""
        self.ended.wait(timeout)
        return self.end

    def wait_started(self, timeout: float | None = None) -> bool:
        """True once the runtime is up and the bot's own code runs (False if the session
        ended first, or after timeout)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self.runtime_up.is_set() and not self.ended.is_set():
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                break
            self.runtime_up.wait(0.05 if left is None else min(0.05, left))
        return self.runtime_up.is_set()

    def stop(self, grace_s: float = 10.0) -> SessionEnd:
        """Ask the bot to leave (SIGTERM: the SDK finishes its running tables), then kill
        the whole tree after grace_s; returns the end (reason STOPPED unless it had
        ended before)."""
        with self._lock:
            if not self.ended.is_set():
                self._stop_requested = True
        if not self.ended.is_set():
            main = self.bot_pid()
            if grace_s > 0 and main is not None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(main, signal.SIGTERM)
                self.ended.wait(grace_s)
            if not self.ended.is_set():
                self._kill()
        if not self.ended.wait(60):
            raise RuntimeError(f"{self!r} did not end within 60 s of its kill")
        assert self.end is not None
        return self.end

    def set_referees(self, referees: Sequence[str]) -> None:
        """The pool changed: relay sockets for these referees only."""
        if self.relay is not None and not self.ended.is_set():
            self.relay.set_targets(referees)

    def bot_pid(self) -> int | None:
        """Host pid of the bot's main process (the sandbox's PID 2)."""
        if not self.sandboxed:
            return self.popen.pid if self.popen else None
        if self.sandbox_pid is None:
            return None
        with contextlib.suppress(OSError, ValueError, IndexError):
            children = Path(f"/proc/{self.sandbox_pid}/task/{self.sandbox_pid}/children").read_text()
            return int(children.split()[0])
        return None

    def usage(self) -> CgroupUsage | None:
        return self.cgroup.usage() if self.cgroup is not None else None

    # ------------------------------------------------------------------ starting
    def _layout(self) -> Layout:
        if self.sandboxed:
            return INSIDE
        return Layout(runtime=str(self.runtime.root), bot=str(self.dir / "bot"),
                      sockets=str(self.dir / "r"), tmp=str(self.dir / "tmp"), storage=str(self.dir / "storage"),
                      local=str(self.host.config.referee_sockets or ""))

    def _env(self, layout: Layout, status_fd: int) -> dict[str, str]:
        env = {"PATH": "/usr/bin:/bin", "HOME": layout.tmp, "TMPDIR": layout.tmp,
               "LANG": "C.UTF-8", "TIENLEN_HOSTED": "1", "TIENLEN_STATUS_FD": str(status_fd),
               "TIENLEN_MAX_TABLES": str(self.spec.max_tables)}
        if self.spec.referees:
            env["TIENLEN_SERVER"] = f"unix:{layout.sockets}/{SEED_SOCKET}"
            env["TIENLEN_REFEREE_SOCKETS"] = layout.sockets
            if self.local_dir is not None:
                env["TIENLEN_REFEREE_LOCAL"] = layout.local
                if self.local_seed is not None:
                    env["TIENLEN_SERVER"] = f"unix:{layout.local}/{self.local_seed.name}"
                    # should that referee be gone before the bot connects
                    env["TIENLEN_SERVER_FALLBACK"] = f"unix:{layout.sockets}/{SEED_SOCKET}"
        if self.spec.bot_version:
            env["TIENLEN_BOT_VERSION"] = self.spec.bot_version
        if self.spec.storage is not None:
            env["TIENLEN_STORAGE"] = layout.storage
            env["TIENLEN_STORAGE_BYTES"] = str(self.spec.storage_mib * 1024 * 1024)
        env.update(self.runtime.env(layout))
        for key, value in self.spec.env.items():
            if key.startswith("TIENLEN_TOKEN") or key == "TIENLEN_STATUS_FD":
                raise ValueError(f"{key} cannot be set through BotSpec.env")
            env[key] = value
        return env

    def _start(self) -> None:
        try:
            self._prepare()
            self._launch()
        except (CgroupError, RelayError, OSError, RuntimeError, ValueError, TimeoutError) as exc:
            self._kill()
            if self.popen is not None and "log_r" in self._fds:
                self._drain_log(self._fds["log_r"])
            # bwrap's own message says more than what it made fail here (e.g. a cgroup
            # write for a process that had died of it)
            said = [line for line in self.log.text().strip().splitlines() if line.startswith("bwrap:")]
            self._start_error = said[-1] if said else (str(exc) or type(exc).__name__)
            log.error("%r: the sandbox could not start: %s", self, self._start_error)
            self._finish(monitored=False)
            return
        self._monitor = threading.Thread(target=self._watch, name=f"hosted-{self.id}", daemon=True)
        self._monitor.start()

    def _prepare(self) -> None:
        gid = self.slot.gid if self.sandboxed else None
        sessions = self.host.config.state_dir / "s"
        sessions.mkdir(parents=True, exist_ok=True)
        os.chmod(self.host.config.state_dir, 0o711)
        os.chmod(sessions, 0o711)
        # leftovers of this slot from a runner that died
        for old in sessions.glob(f"{self.slot.index}-*"):
            storage.unmount(old / "storage")
            shutil.rmtree(old, ignore_errors=True)
        self.dir.mkdir(mode=0o750)
        if gid is not None:
            os.chown(self.dir, 0, gid)
        _copy_code(self.spec.code_dir, self.dir / "bot", gid)
        if self.spec.storage is not None:
            target = self.dir / "storage"
            target.mkdir(mode=0o700)
            uid = self.slot.uid if self.sandboxed else None
            self._storage_mounted = self.sandboxed and storage.mount(
                target, cap_bytes=self.spec.storage_mib * 1024 * 1024, uid=uid, gid=gid)
            try:
                storage.unpack(self.spec.storage, target, cap_bytes=self.spec.storage_mib * 1024 * 1024,
                               uid=uid, gid=gid)
            except storage.StorageError as exc:
                raise RuntimeError(str(exc)) from exc
        if not self.sandboxed:
            (self.dir / "tmp").mkdir()
        if self.spec.referees:
            sockets = self.dir / "r"
            sockets.mkdir(mode=0o750)
            if gid is not None:
                os.chown(sockets, 0, gid)
            self.relay = self.host.hub.open(sockets, self.spec.referees, gid=gid)
            self._find_local()
        if self.sandboxed:
            for name in self.host.cgroups.sessions():
                if name.startswith(f"{self.slot.index}-"):
                    BotCgroup(self.host.cgroups, name).destroy(timeout_s=10)
            limits = self.spec.limits
            self.cgroup = self.host.cgroups.create(self.id, CgroupLimits(
                memory_bytes=limits.memory_mib * 1024 * 1024, pids=limits.pids,
                cpu_cores=limits.cpu_cores, cpu_weight=limits.cpu_weight))

    def _find_local(self) -> None:
        """No hop (tournaments.hosting.nohop): the referees with a socket of their own in
        the host's referee sockets directory, if it may be shown to the bot."""
        directory = self.host.config.referee_sockets
        if directory is None:
            return
        problem = nohop.directory_problem(directory)
        if problem:
            log.warning("%r: every referee through the relay (no hop refused: %s)", self, problem)
            return
        self.local_dir = directory
        self.local = nohop.local_sockets(directory, self.spec.referees)
        # the seed: the first referee, in the given order, whose own socket accepts
        self.local_seed = nohop.first_accepting(list(self.local.values()))
        if self.local:
            log.info("%r: no hop to %s", self, ", ".join(self.local))

    def _pipe(self, name: str) -> tuple[int, int]:
        r, w = os.pipe2(os.O_CLOEXEC)
        self._fds[name + "_r"], self._fds[name + "_w"] = r, w
        return r, w

    def _close_fd(self, name: str) -> None:
        fd = self._fds.pop(name, None)
        if fd is not None:
            os.close(fd)

    def _launch(self) -> None:
        spec = self.spec
        layout = self._layout()
        log_r, log_w = self._pipe("log")
        status_r, status_w = self._pipe("status")
        command = list(spec.command) if spec.command is not None else self.runtime.play_command(
            spec.entry, layout)
        env = self._env(layout, status_w)
        secrets_env = {"TIENLEN_TOKEN": spec.token} if spec.token else {}
        if not self.sandboxed:
            log.warning("%s: starting %r", UNSANDBOXED_WARNING, self)
            self.popen = self.host._spawn(
                command, env={**env, **secrets_env}, cwd=layout.bot, stdin=subprocess.DEVNULL,
                stdout=log_w, stderr=log_w, pass_fds=(status_w,), start_new_session=True)
            self._close_fd("log_w")
            self._close_fd("status_w")
            return
        json_r, json_w = self._pipe("json")
        block_r, block_w = self._pipe("block")
        args_r, args_w = self._pipe("args")
        os.write(args_w, secret_args(secrets_env))  # a few bytes: the pipe holds them
        self._close_fd("args_w")
        argv = bwrap_argv(command, binds=Binds(runtime=self.runtime.root, bot=self.dir / "bot",
                                               sockets=self.dir / "r" if spec.referees else None,
                                               storage=self.dir / "storage" if spec.storage is not None else None,
                                               local=self.local_dir),
                          env=env, limits=spec.limits, bwrap=self.host.config.bwrap,
                          args_fd=args_r, json_status_fd=json_w, block_fd=block_r)
        self.popen = self.host._spawn(
            [*as_slot(self.slot), *rlimits_prefix(spec.limits), *argv], env={"PATH": "/usr/bin:/bin"},
            cwd="/", stdin=subprocess.DEVNULL, stdout=log_w, stderr=log_w,
            pass_fds=(status_w, json_w, block_r, args_r), start_new_session=True)
        for name in ("log_w", "status_w", "json_w", "block_r", "args_r"):
            self._close_fd(name)
        self.sandbox_pid = self._read_child_pid(json_r, log_r)
        assert self.cgroup is not None
        self.cgroup.add(self.sandbox_pid)  # before it forks: all it starts is in there too
        os.write(block_w, b"1")  # go
        self._close_fd("block_w")

    def _read_child_pid(self, json_r: int, log_r: int) -> int:
        """bwrap's first status line, {"child-pid": N}: the sandbox exists (held at
        --block-fd). Its error text, if it fails first, is in the log."""
        import json

        buf = b""
        deadline = time.monotonic() + START_TIMEOUT_S
        with selectors.DefaultSelector() as sel:
            sel.register(json_r, selectors.EVENT_READ, "json")
            sel.register(log_r, selectors.EVENT_READ, "log")
            while b"\n" not in buf:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"bwrap did not create the sandbox within {START_TIMEOUT_S:.0f} s")
                for key, _ in sel.select(left):
                    data = os.read(key.fd, 65536)
                    if key.data == "log":
                        if data:
                            self.log.write(data)
                        else:
                            sel.unregister(log_r)
                        continue
                    if not data:
                        self._drain_log(log_r)
                        said = self.log.text().strip().splitlines()
                        status = self.popen.returncode if self.popen is not None else None
                        raise RuntimeError("bwrap failed: " + (said[-1] if said else "no message")
                                           + f" (exit status {status})")
                    buf += data
        line = buf.split(b"\n", 1)[0]
        try:
            return int(json.loads(line)["child-pid"])
        except (ValueError, KeyError, TypeError) as exc:
            raise RuntimeError(f"unexpected bwrap status line {line!r}") from exc

    def _drain_log(self, log_r: int) -> None:
        """What a process that failed at once wrote (it exits within seconds)."""
        if self.popen is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.popen.wait(5)
        os.set_blocking(log_r, False)
        with contextlib.suppress(BlockingIOError, OSError):
            while data := os.read(log_r, 65536):
                self.log.write(data)

    # ------------------------------------------------------------------ watching
    def _watch(self) -> None:
        """The session's one monitor thread: drains the log, notes the launcher's line,
        enforces the deadline, and finishes the session when the sandbox is gone."""
        assert self.popen is not None
        deadline = (time.monotonic() + self.spec.deadline_s) if self.spec.deadline_s else None
        sel = selectors.DefaultSelector()
        pidfd = os.pidfd_open(self.popen.pid)
        sel.register(pidfd, selectors.EVENT_READ, "exit")
        for name in ("log_r", "status_r", "json_r"):
            if name in self._fds:
                sel.register(self._fds[name], selectors.EVENT_READ, name)
        exited_at: float | None = None
        try:
            while True:
                timeout = None
                now = time.monotonic()
                if exited_at is not None:
                    timeout = max(0.0, exited_at + LOG_DRAIN_S - now)
                elif deadline is not None:
                    timeout = max(0.0, deadline - now)
                events = sel.select(timeout)
                for key, _ in events:
                    if key.data == "exit":
                        self._exit_status = self.popen.wait()
                        exited_at = time.monotonic()
                        sel.unregister(pidfd)
                        # what the bot forked dies with it (its PID namespace does too)
                        if self.cgroup is not None:
                            self.cgroup.kill()
                        continue
                    try:
                        data = os.read(key.fd, 65536)
                    except OSError as exc:
                        if exc.errno == errno.EINTR:
                            continue
                        data = b""
                    if not data:
                        sel.unregister(key.fd)
                        self._close_fd(key.data)
                        continue
                    if key.data == "log_r":
                        self.log.write(data)
                    elif key.data == "status_r" and b"started" in data:
                        self.runtime_up.set()
                if exited_at is not None and ("log_r" not in self._fds
                                              or time.monotonic() >= exited_at + LOG_DRAIN_S):
                    break
                if (exited_at is None and deadline is not None and time.monotonic() >= deadline
                        and not self._deadline_hit):
                    self._deadline_hit = True
                    log.warning("%r: past its deadline of %.0f s: killing it", self, self.spec.deadline_s)
                    self._kill()
        finally:
            sel.close()
            os.close(pidfd)
            self._finish(monitored=True)

    def _kill(self) -> None:
        """SIGKILL the whole tree: the cgroup, and bwrap itself (its sandbox dies with it)."""
        if self.cgroup is not None:
            with contextlib.suppress(CgroupError, OSError):
                self.cgroup.kill()
        if self.popen is not None and self.popen.returncode is None:
            with contextlib.suppress(ProcessLookupError, OSError):
                if self.sandboxed:
                    self.popen.kill()
                else:
                    os.killpg(self.popen.pid, signal.SIGKILL)

    def _storage_keep(self) -> Packed | None:
        """Pack what the bot left in its storage and unmount it (its processes are gone by
        now: nothing changes under the packing). None when it had none, or its code never ran."""
        if self.spec.storage is None:
            return None
        target = self.dir / "storage"
        try:
            if not self.runtime_up.is_set() or not target.is_dir():
                return None
            packed = storage.pack(target, cap_bytes=self.spec.storage_mib * 1024 * 1024)
        except OSError as exc:
            log.error("%r: its storage could not be read: %s", self, exc)
            return None
        finally:
            if getattr(self, "_storage_mounted", False):
                storage.unmount(target)
        if packed.note:
            self.log.write(f"\n[tienlen: {packed.note}]\n".encode())
        return packed if packed.data else None

    def _finish(self, *, monitored: bool) -> None:
        usage = None
        if self.cgroup is not None:
            with contextlib.suppress(OSError):
                usage = self.cgroup.usage()
            if not self.cgroup.destroy(timeout_s=10):
                log.error("%r: its cgroup %s could not be removed", self, self.cgroup.name)
        if not self.sandboxed and self.popen is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.popen.pid, signal.SIGKILL)
        if self.popen is not None and self.popen.returncode is None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._exit_status = self.popen.wait(10)
        relay_stats = None
        if self.relay is not None:
            with contextlib.suppress(Exception):
                self.relay.close()
            relay_stats = self.relay.stats
        for name in list(self._fds):
            self._close_fd(name)
        kept = self._storage_keep()
        shutil.rmtree(self.dir, ignore_errors=True)
        self.claim.release()
        with self._lock:
            stop_requested = self._stop_requested
        start_error = self._start_error
        if not start_error and not stop_requested and not self.runtime_up.is_set():
            # it ended before its runtime was up: what bwrap or the runtime said is why
            said = self.log.text().strip().splitlines()
            start_error = next((line for line in reversed(said) if line.startswith("bwrap:")),
                               said[-1] if said else "")
        reason, detail, code, sig = classify(
            started=self.runtime_up.is_set(), stop_requested=stop_requested,
            deadline_hit=self._deadline_hit, status=self._exit_status, usage=usage,
            memory_cap=self.spec.limits.memory_mib * 1024 * 1024 if self.sandboxed else None,
            host_oom_delta=_host_oom_kills() - self._host_oom_at_start,
            start_error=start_error)
        if not self.sandboxed:
            detail += " [UNSANDBOXED DEVELOPMENT MODE]"
        self.end = SessionEnd(
            reason=reason, detail=detail, exit_code=code, signal=sig, log=self.log.text(),
            log_bytes=self.log.total, log_truncated=self.log.truncated,
            last_lines=self.log.last_lines(), started=self.runtime_up.is_set(),
            sandboxed=self.sandboxed, started_at=self.started_at, ended_at=time.time(),
            usage=usage, relay=relay_stats, storage=kept)
        log.info("%r ended: %s (%s)", self, reason.value, detail)
        self.host._forget(self)
        self.ended.set()
        if self._on_end is not None:
            try:
                self._on_end(self)
            except Exception:
                log.exception("%r: the on_end callback failed", self)
