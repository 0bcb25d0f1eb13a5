"""The bubblewrap command line of a hosted bot, its limits, and the unprivileged uid it
runs as.

Every hosted bot runs in bubblewrap (`bwrap`, Debian's `bubblewrap`, the sandbox under
Flatpak), never in home-made namespaces, started as an **unprivileged host uid of its own
slot** (`uid_base + slot`), never as root: a bwrap started by root leaves the bot host root
for files and for RLIMIT_NPROC (docs/hosting.md). Inside: its own user, PID, network, IPC,
UTS and cgroup namespaces (`--unshare-all`: the network is an empty namespace with only
`lo`), no capability, a cleared environment, read-only binds of the OS's `/usr`, of the
runtime and of the bot's code, the directory of its referee sockets (read-only: a unix
socket is connected to, never written) and, for referees on the runner's own host, the
directory of their own sockets (no hop: nothing but sockets in it), a private
size-capped tmpfs at `/tmp` (the only writable place), a fresh `/proc` of its own PID namespace and a fresh `/dev` (null, zero,
full, random, urandom, tty: gRPC's abseil aborts without urandom), then the root remounted
read-only as the last mount option. Creating further user namespaces inside is refused
(`--disable-userns`).

No Django here: a runner may use this module bare.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import signal
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

__all__ = [
    "INSIDE",
    "Binds",
    "as_slot",
    "Layout",
    "Limits",
    "Slot",
    "SlotClaim",
    "SlotPool",
    "bwrap_argv",
    "rlimits_prefix",
    "secret_args",
    "system_binds",
]

# The uid and gid the bot has inside its user namespace (mapped to its slot's host uid).
SANDBOX_UID = 1000
SANDBOX_GID = 1000


@dataclass(frozen=True, slots=True)
class Limits:
    """What one hosted bot may use. Memory, processes and CPU are cgroup limits; open
    files and file size are rlimits; the tmpfs size caps what it can write at all.
    `cpu_seconds` (RLIMIT_CPU) is cumulative, so it is for short jobs such as validation,
    never for a resident bot (it would kill a healthy bot after N seconds of play)."""

    memory_mib: int = 512
    pids: int = 64
    cpu_cores: float = 1.0
    cpu_weight: int = 100
    open_files: int = 256
    file_size_mib: int = 64
    tmp_mib: int = 64
    cpu_seconds: int | None = None

    def __post_init__(self) -> None:
        for name in ("memory_mib", "pids", "open_files", "file_size_mib", "tmp_mib"):
            if getattr(self, name) < 1:
                raise ValueError(f"Limits.{name} must be at least 1")
        if not 0.01 <= self.cpu_cores <= 64:
            raise ValueError("Limits.cpu_cores must be between 0.01 and 64")


@dataclass(frozen=True, slots=True)
class Layout:
    """Where things are as the bot sees them. In the sandbox these fixed paths; in the
    development mode without a sandbox, the host's own paths."""

    runtime: str = "/runtime"
    bot: str = "/bot"
    sockets: str = "/run/tienlen/referee"
    tmp: str = "/tmp"
    storage: str = "/storage"  # the bot's own storage, writable (tournaments.hosting.storage)
    local: str = "/run/tienlen/local"  # the referees' own sockets on this host (no hop)


INSIDE = Layout()


@dataclass(frozen=True, slots=True)
class Slot:
    """A place for one hosted bot at a time on this host: its own host uid and gid."""

    index: int
    uid: int
    gid: int


class SlotClaim:
    """A slot held by this process (an exclusive lock on its lock file, released when
    the claim is released or the process dies, so a crashed runner's slots free
    themselves); any process left over by a dead holder is killed when it is claimed."""

    def __init__(self, slot: Slot, fd: int) -> None:
        self.slot = slot
        self._fd: int | None = fd

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> SlotClaim:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


class SlotPool:
    """The slots of this host: `count` uids from `uid_base` (slot n runs as uid and gid
    `uid_base + n`). Several runner processes on one host share the pool through lock
    files in `lock_dir`, so no two sessions ever run as the same uid."""

    def __init__(self, lock_dir: Path, uid_base: int, count: int) -> None:
        if uid_base < 1000 or uid_base + count > 2**31:
            raise ValueError(f"a sandbox uid range must lie in 1000..2^31, got {uid_base}+{count}")
        self.lock_dir = lock_dir
        self.uid_base = uid_base
        self.count = count

    def slot(self, index: int) -> Slot:
        return Slot(index, self.uid_base + index, self.uid_base + index)

    def claim(self) -> SlotClaim | None:
        """A free slot, or None when every slot is taken."""
        self.lock_dir.mkdir(parents=True, exist_ok=True)
        for index in range(self.count):
            fd = os.open(self.lock_dir / f"slot-{index}.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC,
                         0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                continue
            slot = self.slot(index)
            kill_uid(slot.uid)
            return SlotClaim(slot, fd)
        return None


def processes_of(uid: int) -> list[int]:
    """PIDs of the live host processes whose real uid is `uid` (zombies, already dead and
    waiting to be reaped, are not counted)."""
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError), open(f"/proc/{entry.name}/status") as f:
            zombie = False
            for line in f:
                if line.startswith("State:"):
                    zombie = line.split()[1] in ("Z", "X")
                elif line.startswith("Uid:"):
                    if int(line.split()[1]) == uid and not zombie:
                        found.append(int(entry.name))
                    break
    return found


def kill_uid(uid: int) -> None:
    """SIGKILL every process of `uid` (a slot's leftovers; the uid is the slot's alone)."""
    for pid in processes_of(uid):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def system_binds() -> list[str]:
    """bwrap options giving the bot the OS's programs and libraries, read-only: `/usr/bin`
    and `/usr/lib` (not `/usr/local`, `/usr/share`, `/etc`), with `/bin`, `/lib`,
    `/lib64` as on the host (symlinks into /usr on a merged-/usr system)."""
    out = ["--ro-bind", "/usr/bin", "/usr/bin", "--ro-bind", "/usr/lib", "/usr/lib"]
    if Path("/usr/lib64").is_dir():
        out += ["--ro-bind", "/usr/lib64", "/usr/lib64"]
    for name in ("bin", "lib", "lib64"):
        top = Path("/") / name
        if top.is_symlink():
            out += ["--symlink", os.readlink(top), str(top)]
        elif top.is_dir():
            out += ["--ro-bind", str(top), str(top)]
    # the dynamic linker's cache: faster start-up, and nothing secret
    out += ["--ro-bind-try", "/etc/ld.so.cache", "/etc/ld.so.cache"]
    return out


@dataclass(frozen=True, slots=True)
class Binds:
    """Host directories the sandbox gets, read-only, at the Layout's fixed paths; but
    `storage`, the bot's own (a size-capped tmpfs of its session's), bound writable."""

    runtime: Path
    bot: Path
    sockets: Path | None = None
    extra: Sequence[tuple[Path, str]] = field(default_factory=tuple)
    storage: Path | None = None
    # The directory of this host's referee sockets (referees listening with --unix-dir;
    # it holds referee sockets only, checked by the runner): no hop.
    local: Path | None = None


def bwrap_argv(command: Sequence[str], *, binds: Binds, env: Mapping[str, str], limits: Limits,
               bwrap: str = "bwrap", args_fd: int | None = None,
               json_status_fd: int | None = None, block_fd: int | None = None,
               layout: Layout = INSIDE) -> list[str]:
    """The whole bwrap command line for `command` (argv inside the sandbox).

    `env` is the bot's whole environment and goes on this command line: nothing secret
    (the command line of a process is readable by every host user). Secrets go in
    `args_fd`: a pipe carrying more NUL-separated options (`--setenv TIENLEN_TOKEN ...`),
    read by bwrap after `--clearenv`. `json_status_fd` gets the sandbox's PID at once;
    `block_fd` holds the sandbox before it runs `command` until a byte arrives, so the
    runner can put it in its cgroup and set its rlimits first."""
    argv = [
        bwrap,
        "--unshare-all", "--unshare-user", "--disable-userns",
        "--die-with-parent", "--new-session", "--cap-drop", "ALL",
        "--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_GID), "--hostname", "bot",
        "--clearenv",
    ]
    for key, value in env.items():
        argv += ["--setenv", key, value]
    if args_fd is not None:
        argv += ["--args", str(args_fd)]
    if json_status_fd is not None:
        argv += ["--json-status-fd", str(json_status_fd)]
    if block_fd is not None:
        argv += ["--block-fd", str(block_fd)]
    argv += system_binds()
    argv += ["--ro-bind", str(binds.runtime), layout.runtime,
             "--ro-bind", str(binds.bot), layout.bot]
    if binds.sockets is not None:
        argv += ["--ro-bind", str(binds.sockets), layout.sockets]
    if binds.local is not None:
        argv += ["--ro-bind", str(binds.local), layout.local]
    for host, inside in binds.extra:
        argv += ["--ro-bind", str(host), inside]
    if binds.storage is not None:
        argv += ["--bind", str(binds.storage), layout.storage]
    argv += [
        "--size", str(limits.tmp_mib * 1024 * 1024), "--perms", "1777", "--tmpfs", layout.tmp,
        "--proc", "/proc",
        "--dev", "/dev",
        "--remount-ro", "/dev",
        "--chdir", layout.bot,
        # last: every mount point above exists by now (a bind after it would fail with
        # "Can't mkdir parents ... Read-only file system")
        "--remount-ro", "/",
        "--",
        *command,
    ]
    return argv


def as_slot(slot: Slot, setpriv: str = "setpriv") -> list[str]:
    """util-linux `setpriv` becoming the slot's uid and gid (no other group, no capability
    left) before it runs the rest. Rather than subprocess's own user=/group=: with those
    Python must fork() instead of vfork(), and in a process using gRPC a fork() runs
    gRPC's fork handlers in the child, which can abort it ("epoll_wait error: Bad file
    descriptor", SIGABRT) before it ever runs bwrap."""
    return [setpriv, f"--reuid={slot.uid}", f"--regid={slot.gid}", "--clear-groups", "--"]


def rlimits_prefix(limits: Limits, prlimit: str = "prlimit") -> list[str]:
    """util-linux `prlimit` setting the sandbox's rlimits on itself, then running bwrap:
    open files, file size, no core dumps (CPU seconds only for jobs). A process lowers its
    own limits with no privilege (setting them on another process needs CAP_SYS_RESOURCE,
    which a runner's root may lack), and every process of the sandbox inherits them."""
    size = limits.file_size_mib * 1024 * 1024
    out = [prlimit, f"--nofile={limits.open_files}:{limits.open_files}", f"--fsize={size}:{size}",
           "--core=0:0"]
    if limits.cpu_seconds is not None:
        out.append(f"--cpu={limits.cpu_seconds}:{limits.cpu_seconds + 2}")
    return [*out, "--"]


def secret_args(secret_env: Mapping[str, str]) -> bytes:
    """The NUL-separated bwrap options for `--args FD`: the environment that must not be
    on a command line."""
    parts: list[str] = []
    for key, value in secret_env.items():
        if "\0" in key or "\0" in value or "=" in key:
            raise ValueError(f"bad environment variable {key!r}")
        parts += ["--setenv", key, value]
    return b"".join(p.encode() + b"\0" for p in parts)
