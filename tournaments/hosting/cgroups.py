"""Cgroups for hosted bots: one per session, on cgroup v2 where the host's unified
hierarchy offers the controller, else on a writable v1 hierarchy.

Why both: production hosts are usually pure v2, but hybrid hosts (v1 `memory`, `pids`,
`cpu` mounted and writable, a v2 hierarchy without those controllers, as on the machine
this was built on) are common in VMs and CI. A controller is placed where it is available
(v2 first); the unified hierarchy, when mounted and writable, is always used as well,
even with no controller of its own, because it gives `cgroup.kill` (the whole tree
killed in one write), `cgroup.events` and `cpu.stat` (CPU time used) for free.

What a session cgroup sets (docs/hosting.md has the operators' view):

| limit | v2 | v1 |
| --- | --- | --- |
| memory, no swap | `memory.max`, `memory.swap.max` = 0, `memory.oom.group` = 1 | `memory.limit_in_bytes`, `memory.memsw.limit_in_bytes` (same), `memory.swappiness` = 0 |
| processes | `pids.max` | `pids.max` |
| CPU quota, share | `cpu.max`, `cpu.weight` | `cpu.cfs_quota_us` / `cpu.cfs_period_us`, `cpu.shares` |

No Django here: a runner may use this module bare.
"""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "NEEDED",
    "BotCgroup",
    "CgroupError",
    "CgroupHost",
    "CgroupLimits",
    "CgroupUsage",
    "Hierarchy",
]

# The controllers a hosted bot's limits need.
NEEDED = ("memory", "pids", "cpu")
# Used when available, for statistics and the kill: not required.
OPTIONAL_V1 = ("cpuacct", "freezer")
CPU_PERIOD_US = 100_000


class CgroupError(Exception):
    """A cgroup could not be created or configured; the message names the file."""


@dataclass(frozen=True, slots=True)
class CgroupLimits:
    memory_bytes: int
    pids: int
    cpu_cores: float  # a quota: at most this many cores' worth of CPU time per period
    cpu_weight: int = 100  # the share against other bots when the CPU is contended (v2 scale)


@dataclass(frozen=True, slots=True)
class Hierarchy:
    version: int  # 1 or 2
    mount: Path
    controllers: frozenset[str]  # v1: the mount's; v2: those its root offers


@dataclass(frozen=True, slots=True)
class CgroupUsage:
    """What a session's cgroup recorded, read just before it is removed."""

    memory_peak_bytes: int | None
    memory_current_bytes: int | None
    memory_limit_hits: int  # v2 memory.events "oom" (the cap reached, OOM invoked); v1 failcnt
    oom_kills: int  # processes of the cgroup killed by an OOM killer
    pids_limit_hits: int  # forks refused by pids.max
    cpu_seconds: float | None
    cpu_throttled: int  # periods in which the quota stopped it


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


def _keyed(text: str) -> dict[str, int]:
    out: dict[str, int] = {}
    for line in text.splitlines():
        key, _, value = line.partition(" ")
        with contextlib.suppress(ValueError):
            out[key] = int(value.strip())
    return out


def _write(path: Path, value: str) -> None:
    try:
        path.write_text(value)
    except OSError as exc:
        raise CgroupError(f"cannot write {value.strip()!r} to {path}: {exc.strerror}") from None


def mounted_hierarchies(mountinfo: Path = Path("/proc/self/mountinfo")) -> list[Hierarchy]:
    """The cgroup hierarchies mounted on this host (from mountinfo)."""
    found: list[Hierarchy] = []
    for line in _read(mountinfo).splitlines():
        left, sep, right = line.partition(" - ")
        if not sep:
            continue
        fields = left.split()
        fstype, _source, *rest = right.split()
        if len(fields) < 5:
            continue
        mount = Path(fields[4].replace("\\040", " "))
        if fstype == "cgroup2":
            controllers = frozenset(_read(mount / "cgroup.controllers").split())
            found.append(Hierarchy(2, mount, controllers))
        elif fstype == "cgroup":
            options = set(rest[0].split(",")) if rest else set()
            known = {"memory", "pids", "cpu", "cpuacct", "cpuset", "freezer", "devices",
                     "blkio", "net_cls", "net_prio", "perf_event", "hugetlb", "rdma", "misc"}
            found.append(Hierarchy(1, mount, frozenset(options & known)))
    return found


class CgroupHost:
    """The cgroup hierarchies of this host and where each controller is taken from.

    `base` is the path, inside every hierarchy used, under which session cgroups are
    created (`/tienlen-sandbox` by default; on a systemd host with a delegated subtree, e.g.
    `/system.slice/tienlen-runner.service/bots`). It must hold no process of its own."""

    def __init__(self, hierarchies: Sequence[Hierarchy], base: str = "tienlen-sandbox") -> None:
        self.hierarchies = list(hierarchies)
        self.base = base.strip("/")
        # the unified hierarchy, when this process may create cgroups in it
        self.unified = next((h for h in self.hierarchies
                             if h.version == 2 and os.access(h.mount, os.W_OK)), None)
        # controller -> hierarchy: v2 when its root offers it, else a v1 mount; a writable
        # one first (an unwritable one is kept so that missing() can say so)
        self.placement: dict[str, Hierarchy] = {}
        # (without a unified hierarchy: v1 cpuacct for the CPU used, v1 freezer for the kill)
        for name in (*NEEDED, *(OPTIONAL_V1 if self.unified is None else ())):
            offering = sorted((h for h in self.hierarchies if name in h.controllers),
                              key=lambda h: (not os.access(h.mount, os.W_OK), h.version != 2))
            if offering:
                self.placement[name] = offering[0]

    @classmethod
    def detect(cls, base: str = "tienlen-sandbox",
               mountinfo: Path = Path("/proc/self/mountinfo")) -> CgroupHost:
        return cls(mounted_hierarchies(mountinfo), base)

    # ------------------------------------------------------------------ what is there
    def used(self) -> list[Hierarchy]:
        """Every hierarchy a session cgroup is created in (each once)."""
        out: list[Hierarchy] = []
        for h in [*self.placement.values(), *([self.unified] if self.unified else [])]:
            if h not in out:
                out.append(h)
        return out

    def missing(self, needed: Iterable[str] = NEEDED) -> list[str]:
        """Needed controllers that no hierarchy offers, or that cannot be written."""
        problems = []
        for name in needed:
            h = self.placement.get(name)
            if h is None:
                problems.append(name)
            elif not os.access(h.mount, os.W_OK):
                problems.append(f"{name} (its {'v2' if h.version == 2 else 'v1'} hierarchy at "
                                f"{h.mount} is not writable)")
        return problems

    def describe(self) -> str:
        """One line: which hierarchy each controller comes from, and how a tree is killed."""
        parts = [f"{name}: v{self.placement[name].version}" for name in NEEDED if name in self.placement]
        kill = ("v2 cgroup.kill" if self.unified is not None
                else "v1 freezer" if "freezer" in self.placement else "signals")
        parts.append(f"kill: {kill}")
        return ", ".join(parts)

    def base_dir(self, h: Hierarchy) -> Path:
        return h.mount / self.base

    # ------------------------------------------------------------------ sessions
    def prepare(self) -> None:
        """Create the base cgroups and, on v2, enable the controllers for the sessions."""
        for h in self.used():
            base = self.base_dir(h)
            try:
                base.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise CgroupError(f"cannot create the cgroup {base}: {exc.strerror}") from None
            if h.version == 2:
                wanted = [n for n, where in self.placement.items() if where is h]
                if wanted:
                    self._enable_v2(h, base, wanted)

    def _enable_v2(self, h: Hierarchy, base: Path, controllers: list[str]) -> None:
        # every cgroup from the root down to the base passes the controllers on
        chain = [h.mount]
        for part in base.relative_to(h.mount).parts:
            chain.append(chain[-1] / part)
        for cg in chain:
            enabled = set(_read(cg / "cgroup.subtree_control").split())
            todo = [c for c in controllers if c not in enabled]
            if todo:
                _write(cg / "cgroup.subtree_control", " ".join(f"+{c}" for c in todo))

    def create(self, name: str, limits: CgroupLimits) -> BotCgroup:
        """A new session cgroup `name` with `limits` in every hierarchy used."""
        self.prepare()
        cg = BotCgroup(self, name)
        try:
            for h in self.used():
                path = self.base_dir(h) / name
                if path.exists():
                    BotCgroup(self, name).destroy(timeout_s=5)
                try:
                    path.mkdir()
                except OSError as exc:
                    raise CgroupError(f"cannot create the cgroup {path}: {exc.strerror}") from None
                cg.paths[h] = path
            cg.apply(limits)
        except BaseException:
            cg.destroy(timeout_s=5)
            raise
        return cg

    def sessions(self) -> list[str]:
        """Names of the session cgroups that exist now (in any hierarchy used)."""
        names: set[str] = set()
        for h in self.used():
            with contextlib.suppress(OSError):
                names.update(p.name for p in self.base_dir(h).iterdir() if p.is_dir())
        return sorted(names)


class BotCgroup:
    """One session's cgroup, in each hierarchy the host uses."""

    def __init__(self, host: CgroupHost, name: str) -> None:
        self.host = host
        self.name = name
        self.paths: dict[Hierarchy, Path] = {
            h: host.base_dir(h) / name for h in host.used() if (host.base_dir(h) / name).exists()
        }
        self.limits: CgroupLimits | None = None

    def _path(self, controller: str) -> Path | None:
        h = self.host.placement.get(controller)
        return self.paths.get(h) if h is not None else None

    def apply(self, limits: CgroupLimits) -> None:
        self.limits = limits
        quota = max(1000, int(limits.cpu_cores * CPU_PERIOD_US))
        mem = self._path("memory")
        if mem is not None:
            if self.host.placement["memory"].version == 2:
                _write(mem / "memory.max", str(limits.memory_bytes))
                if (mem / "memory.swap.max").exists():
                    _write(mem / "memory.swap.max", "0")
                if (mem / "memory.oom.group").exists():
                    _write(mem / "memory.oom.group", "1")
            else:
                _write(mem / "memory.limit_in_bytes", str(limits.memory_bytes))
                if (mem / "memory.memsw.limit_in_bytes").exists():
                    _write(mem / "memory.memsw.limit_in_bytes", str(limits.memory_bytes))
                with contextlib.suppress(CgroupError):  # refused on some kernels; no swap anyway
                    _write(mem / "memory.swappiness", "0")
        pids = self._path("pids")
        if pids is not None:
            _write(pids / "pids.max", str(limits.pids))
        cpu = self._path("cpu")
        if cpu is not None:
            if self.host.placement["cpu"].version == 2:
                _write(cpu / "cpu.max", f"{quota} {CPU_PERIOD_US}")
                _write(cpu / "cpu.weight", str(max(1, min(10_000, limits.cpu_weight))))
            else:
                _write(cpu / "cpu.cfs_period_us", str(CPU_PERIOD_US))
                _write(cpu / "cpu.cfs_quota_us", str(quota))
                _write(cpu / "cpu.shares", str(max(2, limits.cpu_weight * 1024 // 100)))

    def add(self, pid: int) -> None:
        """Move process `pid` into every hierarchy of this cgroup (before it forks)."""
        for path in self.paths.values():
            _write(path / "cgroup.procs", str(pid))

    def procs(self) -> set[int]:
        out: set[int] = set()
        for path in self.paths.values():
            for line in _read(path / "cgroup.procs").split():
                with contextlib.suppress(ValueError):
                    out.add(int(line))
        return out

    def usage(self) -> CgroupUsage:
        mem = self._path("memory")
        peak = current = None
        limit_hits = oom_kills = 0
        if mem is not None:
            if self.host.placement["memory"].version == 2:
                events = _keyed(_read(mem / "memory.events"))
                limit_hits, oom_kills = events.get("oom", 0), events.get("oom_kill", 0)
                peak = _int(_read(mem / "memory.peak"))
                current = _int(_read(mem / "memory.current"))
            else:
                oom_kills = _keyed(_read(mem / "memory.oom_control")).get("oom_kill", 0)
                limit_hits = _int(_read(mem / "memory.failcnt")) or 0
                peak = _int(_read(mem / "memory.max_usage_in_bytes"))
                current = _int(_read(mem / "memory.usage_in_bytes"))
        pids = self._path("pids")
        pid_hits = _keyed(_read(pids / "pids.events")).get("max", 0) if pids is not None else 0
        cpu_s: float | None = None
        unified = self.paths.get(self.host.unified) if self.host.unified else None
        if unified is not None and (unified / "cpu.stat").exists():
            usec = _keyed(_read(unified / "cpu.stat")).get("usage_usec")
            cpu_s = usec / 1e6 if usec is not None else None
        acct = self._path("cpuacct")
        if cpu_s is None and acct is not None:
            ns = _int(_read(acct / "cpuacct.usage"))
            cpu_s = ns / 1e9 if ns is not None else None
        cpu = self._path("cpu")
        throttled = _keyed(_read(cpu / "cpu.stat")).get("nr_throttled", 0) if cpu is not None else 0
        return CgroupUsage(peak, current, limit_hits, oom_kills, pid_hits, cpu_s, throttled)

    def kill(self) -> None:
        """SIGKILL every process in the cgroup, forks in flight included: one write to
        v2 `cgroup.kill`; else v1 freeze, kill each, thaw; else kill each until none."""
        unified = self.paths.get(self.host.unified) if self.host.unified else None
        if unified is not None and (unified / "cgroup.kill").exists():
            with contextlib.suppress(CgroupError):
                _write(unified / "cgroup.kill", "1")
                return
        freezer = self._path("freezer")
        if freezer is not None:
            with contextlib.suppress(CgroupError):
                _write(freezer / "freezer.state", "FROZEN")
                deadline = time.monotonic() + 2
                while "FROZEN" not in _read(freezer / "freezer.state") and time.monotonic() < deadline:
                    time.sleep(0.01)
        try:
            for _ in range(100):
                left = self.procs()
                if not left:
                    break
                for pid in left:
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(pid, signal.SIGKILL)
                if freezer is None:
                    time.sleep(0.01)
                else:
                    break
        finally:
            if freezer is not None:
                with contextlib.suppress(CgroupError):
                    _write(freezer / "freezer.state", "THAWED")

    def destroy(self, timeout_s: float = 10.0) -> bool:
        """Kill what is left and remove the cgroup everywhere; False if a directory
        stayed (its processes would not die within the timeout)."""
        deadline = time.monotonic() + timeout_s
        if self.procs():
            self.kill()
        while self.procs() and time.monotonic() < deadline:
            time.sleep(0.02)
            self.kill()
        removed = True
        for h, path in list(self.paths.items()):
            while True:
                try:
                    path.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError as exc:
                    if exc.errno != errno.EBUSY or time.monotonic() > deadline:
                        removed = False
                        break
                    time.sleep(0.02)
            if not path.exists():
                del self.paths[h]
        return removed


def _int(text: str) -> int | None:
    try:
        return int(text.strip())
    except ValueError:
        return None
