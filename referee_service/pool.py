"""Referee pools: referees that register themselves, so bots and workers find all of them.

A referee started with a pool registry (a plug-in, loaded by dotted path like the token
store: the referee never imports the platform) reports itself every `interval` seconds:
its id, the address bots and workers should use (`--advertise`), its capacity and load,
and which bots are connected with how many free table slots. The registry answers with
the live members of the pool, which the referee passes on to every bot stream as a
`RefereePool` message (after the Welcome, then on every change), so a bot given one
referee's address finds the others. A referee that stops reporting drops out of the pool
after the registry's timeout; one that stops gracefully leaves at once.

The platform's registry is `tournaments.play.pool:DjangoRefereePool` (a row per
referee in the platform's database); `MemoryPoolRegistry` keeps a pool in one process
(tests, several referees embedded in one program).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Protocol, cast, runtime_checkable

from referee_service.plugins import plugin_load

log = logging.getLogger("referee_service.pool")

DEFAULT_HEARTBEAT_S = 1.0
DEFAULT_TIMEOUT_S = 5.0


@dataclass(frozen=True, slots=True)
class BotSlots:
    """A connected bot as one referee sees it."""

    free: int  # tables it could start here now (its streams' room, capped per bot)
    version: str  # the version it reported in Hello
    active: int = 0  # tables it plays here now


@dataclass(frozen=True, slots=True)
class RefereeReport:
    """What a referee says about itself at each heartbeat."""

    referee_id: str
    address: str
    capacity: int  # tables it accepts at once
    active_tables: int
    bots: dict[str, BotSlots]
    started_at: float  # unix time
    draining: bool = False  # shutting down: no new tables


@dataclass(frozen=True, slots=True, order=True)
class PoolMember:
    referee_id: str
    address: str


@runtime_checkable
class PoolRegistry(Protocol):
    """Where referees register. Called from one dedicated thread of each referee (never
    on its event loop), so an implementation may block on a database."""

    def heartbeat(self, report: RefereeReport) -> Sequence[PoolMember]:
        """Store the report (refreshing the referee's liveness) and return the pool's
        live members, this referee included."""
        ...

    def leave(self, referee_id: str) -> None:
        """The referee stops: take it out of the pool now."""
        ...


class MemoryPoolRegistry:
    """A pool in this process's memory (tests, embedding): live = reported within
    `timeout_s`."""

    def __init__(self, timeout_s: float = DEFAULT_TIMEOUT_S) -> None:
        self.timeout_s = timeout_s
        self._rows: dict[str, tuple[RefereeReport, float]] = {}
        self._lock = threading.Lock()

    def heartbeat(self, report: RefereeReport) -> list[PoolMember]:
        with self._lock:
            self._rows[report.referee_id] = (report, time.monotonic())
        return [PoolMember(r.referee_id, r.address) for r in self.live()]

    def leave(self, referee_id: str) -> None:
        with self._lock:
            self._rows.pop(referee_id, None)

    def live(self) -> list[RefereeReport]:
        cutoff = time.monotonic() - self.timeout_s
        with self._lock:
            return sorted((r for r, seen in self._rows.values() if seen >= cutoff),
                          key=lambda r: r.referee_id)


def load_pool_registry(spec: str, token_store: Any = None) -> PoolRegistry | None:
    """The registry of ``--pool``: "none"; "auto" (the default: the token store's own
    pool, when it has one, as the platform's DjangoTokenStore does); or "module:Class"
    (built without arguments). ValueError naming the flag when it cannot be loaded."""
    spec = (spec or "auto").strip()
    if spec == "none":
        return None
    if spec == "auto":
        factory = getattr(token_store, "referee_pool", None)
        return factory() if callable(factory) else None
    name, _, attr = spec.partition(":")
    if not name or not attr:
        raise ValueError(f"--pool {spec!r}: use 'auto', 'none' or 'module:Class'")
    registry = plugin_load("--pool", spec, ("heartbeat", "leave"))
    return cast(PoolRegistry, registry)  # a plug-in: its methods are checked by plugin_load


def default_advertise(listen: str, port: int) -> str:
    """The address to advertise when none is given: the listen host, or this machine's
    host name when listening on every interface."""
    host = listen.rsplit(":", 1)[0].strip("[]")
    if host in ("", "0.0.0.0", "::", "*"):
        host = socket.gethostname()
    if ":" in host:
        host = f"[{host}]"
    return f"{host}:{port}"


@dataclass
class PoolHeartbeat:
    """Reports the referee to the registry every `interval_s` seconds (in one dedicated
    thread) and calls `on_members` whenever the set of live members changes."""

    registry: PoolRegistry
    report: Callable[[], RefereeReport]
    on_members: Callable[[list[PoolMember]], None]
    interval_s: float = DEFAULT_HEARTBEAT_S
    members: list[PoolMember] = field(default_factory=list)
    failures: int = 0
    _task: asyncio.Task[None] | None = None
    _executor: ThreadPoolExecutor = field(
        default_factory=lambda: ThreadPoolExecutor(1, thread_name_prefix="pool-heartbeat"))
    _wake: asyncio.Event | None = None

    async def start(self) -> None:
        """The first heartbeat is awaited, so the referee is in the pool (or the failure
        is logged) before it serves."""
        self._wake = asyncio.Event()
        await self.beat()
        self._task = asyncio.get_running_loop().create_task(self._run(), name="pool-heartbeat")

    def wake(self) -> None:
        """Report now (e.g. a bot connected), not at the next tick."""
        if self._wake is not None:
            self._wake.set()

    async def _run(self) -> None:
        assert self._wake is not None
        while True:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self.interval_s):
                    await self._wake.wait()
            self._wake.clear()
            await self.beat()
            # At most ~5 reports a second however often bots come and go.
            await asyncio.sleep(min(0.2, self.interval_s))

    async def beat(self) -> None:
        loop = asyncio.get_running_loop()
        report = self.report()
        try:
            members = sorted(await loop.run_in_executor(
                self._executor, self.registry.heartbeat, report))
        except Exception as exc:  # the registry is down: keep playing, say so (not every second)
            self.failures += 1
            if self.failures == 1 or self.failures % 30 == 0:
                log.warning("pool heartbeat failed", extra={
                    "event": "pool_heartbeat_failed", "failures": self.failures,
                    "error": f"{type(exc).__name__}: {exc}"})
            return
        if self.failures:
            log.info("pool heartbeat back", extra={"event": "pool_heartbeat_ok",
                                                   "failures": self.failures})
            self.failures = 0
        if members != self.members:
            self.members = members
            log.info("pool changed", extra={"event": "pool_changed",
                                             "referees": [m.referee_id for m in members]})
            self.on_members(members)

    async def stop(self, referee_id: str) -> None:
        """Stop reporting and leave the pool (bounded: a dead registry cannot hold up a
        shutdown; the registry's timeout then takes the referee out)."""
        if self._task is not None:
            self._task.cancel()
            # asyncio.wait, not `await task`: it neither raises the task's CancelledError
            # (which would be indistinguishable from this stop() being cancelled) nor waits
            # without bound for a task that failed to end.
            _, pending = await asyncio.wait({self._task}, timeout=5)
            if pending:
                log.error("the pool heartbeat did not stop", extra={
                    "event": "pool_heartbeat_stuck"})
            self._task = None
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(5):
                await loop.run_in_executor(self._executor, self.registry.leave, referee_id)
        except Exception as exc:
            log.warning("could not leave the pool", extra={
                "event": "pool_leave_failed", "error": f"{type(exc).__name__}: {exc}"})
        self._executor.shutdown(wait=False)
