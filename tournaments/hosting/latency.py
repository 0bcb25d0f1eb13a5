"""The relay's thread asks the scheduler for short slices, so that on a host whose cores are
all busy its wake-ups need not wait for a busy task's turn to end.

A move of a hosted bot crosses the relay twice more than a remote bot's (referee -> relay ->
bot -> relay -> referee), so the relay's thread is woken twice more per move. On an idle
host that costs ~50 µs a round trip; on a host whose cores are all busy each of those
wake-ups used to wait for the running task's slice to end (EEVDF runs the current task to
its deadline unless the woken one's deadline is earlier): benchmarks/hosting_bench.py
measured 3.9-5.5x the remote bot's median per move with two busy loops on two cores, and
nice -10 on the relay thread did not close it (nice only changes weight, not the wait).

What the relay's loop thread asks for (tournaments.hosting.relay, in the runner's relay
process, tournaments.hosting.relay_process) is the mechanism the kernel has for
latency-sensitive tasks since Linux 6.12: `sched_setattr(2)` with SCHED_OTHER and a small
`sched_runtime` requests a shorter slice. A task with a short slice gets an earlier virtual
deadline when it wakes, so it may preempt the running one at once (EEVDF's PREEMPT_SHORT),
and it gives nothing up in share: weight is unchanged, a task that runs long simply runs in
shorter turns. So unlike SCHED_FIFO/SCHED_RR it cannot starve the host if a hostile bot
floods its relay (a real-time relay would run ahead of every normal task, referees and
other bots included, up to RT throttling's 95 %), and it needs no privilege. Measured
(benchmarks/README.md, "The bar under contention: the candidates side by side"): for the
relay as a thread of the runner, 1.60x and 1.44x a remote bot's median move with every core
busy against 1.76x and 2.64x at the default slice, and no gain in a third run; it is kept
because it costs nothing, not because it meets the bar (it does not, alone).

On an older kernel (before 6.12 `sched_runtime` is ignored for SCHED_OTHER, or before 3.14
there is no sched_setattr at all), on a libc ctypes cannot load, or anywhere the call
fails, the relay runs with the default slice: `request_short_slice()` returns why, and the
relay logs it once. No Django here.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import os
import platform
from dataclasses import dataclass

__all__ = ["RELAY_SLICE_NS", "SchedAttr", "get_attr", "request_short_slice"]

log = logging.getLogger("tournaments.hosting.latency")

#: The slice the relay's thread asks for: the kernel's minimum (0.1 ms; it clamps to
#: [0.1 ms, 100 ms]). A relay's turn is a few microseconds of copying.
RELAY_SLICE_NS = 100_000
SCHED_OTHER = 0

_SYSCALLS = {"x86_64": (314, 315), "aarch64": (274, 275), "arm64": (274, 275)}


class _Attr(ctypes.Structure):
    # struct sched_attr (include/uapi/linux/sched/types.h), SCHED_ATTR_SIZE_VER1
    _fields_ = [("size", ctypes.c_uint32), ("sched_policy", ctypes.c_uint32),
                ("sched_flags", ctypes.c_uint64), ("sched_nice", ctypes.c_int32),
                ("sched_priority", ctypes.c_uint32), ("sched_runtime", ctypes.c_uint64),
                ("sched_deadline", ctypes.c_uint64), ("sched_period", ctypes.c_uint64),
                ("sched_util_min", ctypes.c_uint32), ("sched_util_max", ctypes.c_uint32)]


@dataclass(frozen=True, slots=True)
class SchedAttr:
    policy: int
    nice: int
    runtime_ns: int  # for SCHED_OTHER since 6.12: the task's slice (0 or the default: none asked)


def _syscall() -> tuple[ctypes.CDLL, int, int] | str:
    numbers = _SYSCALLS.get(platform.machine())
    if numbers is None:
        return f"sched_setattr: unknown syscall number on {platform.machine()}"
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
    except OSError as exc:
        return f"sched_setattr: cannot load libc: {exc}"
    return libc, numbers[0], numbers[1]


def get_attr(tid: int = 0) -> SchedAttr | None:
    """The scheduling attributes of thread `tid` (0: the calling thread), or None when
    sched_getattr is unavailable."""
    found = _syscall()
    if isinstance(found, str):
        return None
    libc, _, getattr_nr = found
    attr = _Attr()
    if libc.syscall(getattr_nr, tid, ctypes.byref(attr), ctypes.sizeof(attr), 0) != 0:
        return None
    return SchedAttr(attr.sched_policy, attr.sched_nice, attr.sched_runtime)


def request_short_slice(slice_ns: int = RELAY_SLICE_NS, tid: int = 0) -> str | None:
    """Ask for a `slice_ns` slice for thread `tid` (0: the calling thread), keeping
    SCHED_OTHER and its nice. None when the kernel took it (it reads back), else why not
    (the thread keeps the default slice)."""
    found = _syscall()
    if isinstance(found, str):
        return found
    libc, setattr_nr, _ = found
    try:
        nice = os.getpriority(os.PRIO_PROCESS, tid)  # per thread on Linux
    except OSError:
        nice = 0
    attr = _Attr(size=ctypes.sizeof(_Attr), sched_policy=SCHED_OTHER, sched_nice=nice,
                 sched_runtime=slice_ns)
    if libc.syscall(setattr_nr, tid, ctypes.byref(attr), 0) != 0:
        errno = ctypes.get_errno()
        return f"sched_setattr: {os.strerror(errno)} (errno {errno})"
    got = get_attr(tid)
    if got is None or got.runtime_ns != slice_ns:
        return (f"the kernel ({platform.release()}) ignores a SCHED_OTHER slice "
                f"(needs Linux 6.12 or later)")
    return None
