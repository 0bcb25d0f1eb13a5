"""Which referee plays a table: routing over the referee pool, and failing over.

Referees started with the platform's token store register in the pool
(`tournaments.play.pool`): each reports every second its capacity, its load and the
bots connected to it with their free table slots. A worker plays each table on the live
referee that suits it best, judged in this order:

1. every registered bot of the table is connected there (house-bot seats need nothing);
   the table's bots are not chosen one by one: a bot that reaches only some referees
   still gets all its tables, on those;
2. not the referee an earlier attempt of this table just lost (`avoid`: it died, its
   stream broke, or it was full), as long as another one qualifies as well;
3. the referee the table was on (`current`), if it still qualifies: a resumed table goes
   back where its bots are seated, and a second copy of a running table (a redelivered
   task) reaches the referee that plays it, which refuses it (ALREADY_EXISTS) instead of
   another referee playing it at the same time;
4. those bots have free table slots there, and the referee is below its capacity;
5. the least loaded: tables over capacity, where the tables are the most of what its
   heartbeat reported, the running tables routed there (`Table.referee`, written by every
   worker as it routes) and the tables this process sent there since the last heartbeat
   (so a burst of tables spreads instead of piling onto the referee that looked idle);
   ties drawn at random.

A referee with none of a table's bots therefore never gets it while another has them.
When no referee is registered at all the configured `REFEREE_TARGET` plays every table
(single-referee installs, the demo). The pool itself is written by the referees'
heartbeats; the one write here is `table_route`'s note of the table's current referee.

Failover: a table whose referee dies mid-table (the stream breaks, the call is refused as
unavailable, the referee aborts it while shutting down, or its heartbeat stops while the
stream is silent: `route_watch`) is retried at once on another live referee, from its first
unrecorded game (`failover_target_exists`, used by the task).
"""

from __future__ import annotations

import os
import random
import threading
import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from datetime import timedelta

from django.conf import settings
from django.db.models.functions import Now

from referee_service.participants import participant_bot_id, participant_key
from tournaments.models import Referee, Table
from tournaments.play.pool import pool_connected_bots, referees_live
from tournaments.play.referee import (
    RefereeUnavailable,
    TablePlan,
    referee_channel_drop,
    referee_list_bots,
)
from tournaments.statements import Names, marks, statement

#: Seconds a route this process chose counts towards its referee's load: about the time
#: the referee needs to report the new table in its heartbeat (it reports at once, then
#: every second).
RECENT_ROUTE_S = 2.0

_recent_lock = threading.Lock()
_recent: dict[str, list[float]] = {}


@dataclass(frozen=True)
class Route:
    """Where a table goes: a referee of the pool, or the configured REFEREE_TARGET."""

    target: str  # host:port for the organiser client
    referee_id: str = ""  # "" for REFEREE_TARGET outside a pool
    # Participants ("bot:<id>") not connected there: the referee waits for them up to the
    # connect deadline; past it, they are the ones that forfeit.
    missing: tuple[str, ...] = ()
    # {bot id: version} connected there, as its last heartbeat reported (pool only)
    connected: dict[str, str] = field(default_factory=dict, repr=False)

    @property
    def pooled(self) -> bool:
        return bool(self.referee_id)


def _recent_count(referee_id: str, now: float) -> int:
    with _recent_lock:
        stamps = [t for t in _recent.get(referee_id, ()) if now - t < RECENT_ROUTE_S]
        _recent[referee_id] = stamps
        return len(stamps)


def _note_route(referee_id: str, now: float) -> None:
    with _recent_lock:
        _recent.setdefault(referee_id, []).append(now)


def _slots(referee: Referee) -> dict[str, dict]:
    bots = referee.bots or {}
    return bots if isinstance(bots, dict) else {}


@dataclass(frozen=True)
class PoolView:
    """The pool as read once (two queries: its live referees and their running tables) for
    routing several tables at once (a worker starting a group of tables): each route then
    costs no query, and the routes this process chose meanwhile count as load
    (`RECENT_ROUTE_S`), so the group spreads as tables routed one by one would."""

    live: tuple[Referee, ...]
    running: dict[str, int]

    @classmethod
    def read(cls) -> PoolView:
        live = tuple(r for r in referees_live() if not r.draining)
        return cls(live, _running_per_referee([r.referee_id for r in live]) if live else {})

    @classmethod
    def recent(cls) -> PoolView:
        """This process's view of the pool, read again once it is `POOL_VIEW_S` old: the
        referees report every second, so a fresher read tells nothing new, and routing a
        table cost two pool queries (issue 26). The routes this process chose meanwhile
        count as load (`RECENT_ROUTE_S` outlasts the view). An empty pool is never kept
        (a referee registering is seen at once), nor a view in which a table was just lost
        (`pool_view_forget`)."""
        global _view
        now = time.monotonic()
        with _view_lock:
            kept = _view
        if kept is not None and now - kept[0] < POOL_VIEW_S and kept[2] == os.getpid():
            return kept[1]
        view = cls.read()
        with _view_lock:
            _view = (now, view, os.getpid()) if view.live else None
        return view


#: Seconds a process routes over one view of the pool (`PoolView.recent`): about a
#: referee's heartbeat period.
POOL_VIEW_S = 1.0
_view_lock = threading.Lock()
_view: tuple[float, PoolView, int] | None = None


def pool_view_forget() -> None:
    """Read the pool afresh for the next route (a table was just lost on a referee)."""
    global _view
    with _view_lock:
        _view = None


def referee_route(
    *, participants: Sequence[str], avoid: Collection[str] = (), current: str = "",
    rng: random.Random | None = None, pool: PoolView | None = None,
) -> Route:
    """The referee to play a table with these participants (participant keys in seat
    order) on: see the module's docstring for the order of preference. `pool`: the pool
    as read for several tables (default: this process's recent view, `PoolView.recent`)."""
    pool = pool or PoolView.recent()
    live = pool.live
    if not live:
        return Route(target=settings.REFEREE_TARGET)
    rng = rng or random
    bots = [b for b in map(participant_bot_id, participants) if b is not None]
    now = time.monotonic()
    running = pool.running

    def rank(referee: Referee) -> tuple:
        slots = _slots(referee)
        missing = sum(1 for b in bots if b not in slots)
        no_room = sum(1 for b in bots if b in slots and int(slots[b].get("free") or 0) < 1)
        tables = max(referee.active_tables + _recent_count(referee.referee_id, now),
                     running.get(referee.referee_id, 0))
        full = tables >= referee.capacity
        return (missing, referee.referee_id in avoid, referee.referee_id != current, no_room + full, tables / max(1, referee.capacity),
                rng.random())

    best = min(live, key=rank)
    _note_route(best.referee_id, now)
    slots = _slots(best)
    return Route(
        target=best.address,
        referee_id=best.referee_id,
        missing=tuple(participant_key(bot_id=b) for b in bots if b not in slots),
        connected={b: str(s.get("version") or "") for b, s in slots.items()},
    )


@statement("routing.running-per-referee", {"referees": 1}, {"referees": 2})
def _running_sql(referees: int) -> str:
    t = Names(Table)
    return (f"SELECT {t.referee}, COUNT(*) FROM {t} WHERE {t.status} = %s AND {t.referee} IN ({marks(referees)}) "
            f"GROUP BY {t.referee}")


def _running_per_referee(referee_ids: list[str]) -> dict[str, int]:
    """Running tables per referee (written out: the ORM spent more building this grouped
    count, on every attempt, than PostgreSQL spent running it)."""
    return dict(_running_sql.rows([Table.Status.RUNNING, *referee_ids], referees=len(referee_ids)))


def table_route(*, plan: TablePlan, avoid: Collection[str] = (), pool: PoolView | None = None) -> Route:
    """Route an attempt of the planned table (`referee_route`, preferring the referee its
    previous attempt was on) and note a new choice on the table (shown to organisers;
    counted as load by every worker)."""
    route = referee_route(participants=plan.participants, avoid=avoid, current=plan.referee, pool=pool)
    chosen = route.referee_id or route.target
    if chosen != plan.referee:
        _note_referee_sql.run([chosen, plan.table_id])
    return route


@statement("routing.note-referee")
def _note_referee_sql() -> str:
    """The table's new referee, once an attempt: written out (the ORM's UPDATE cost more
    to build than to run)."""
    t = Names(Table)
    return f"UPDATE {t.TABLE} SET {t.referee} = %s WHERE {t.id} = %s"


def route_connected(route: Route, *, refresh: bool = False) -> dict[str, str] | None:
    """The bots connected to the route's referee as {bot id: version}: its last
    heartbeat's report in a pool (as routed, or read again with `refresh`, e.g. to decide
    who is absent after the connect wait), else the referee's ListBots (None: unreachable)."""
    if not route.pooled:
        return referee_list_bots(target=route.target)
    if refresh:
        bots = Referee.objects.filter(referee_id=route.referee_id).values_list("bots", flat=True).first()
        if isinstance(bots, dict):
            return {b: str(s.get("version") or "") for b, s in bots.items()}
    return dict(route.connected)


#: Seconds of silence on a table's stream after which the worker checks that its referee is
#: still in the pool.
WATCH_INTERVAL_S = 2.0


def route_watch(route: Route) -> Callable[[], None] | None:
    """For a pool referee: a check the task runs whenever the table's stream has been silent
    for WATCH_INTERVAL_S. When the referee has dropped out of the pool (no heartbeat within
    TIENLEN_REFEREE_TIMEOUT_S: hung, or its machine gone without closing the connection,
    which gRPC keepalive alone would notice only after half a minute), it closes this
    process's channel to it, which ends every stream there, and raises RefereeUnavailable:
    the table fails over. A referee out of the pool whose stream still brings games is left
    to play on."""
    if not route.pooled:
        return None

    def check() -> None:
        timeout = timedelta(seconds=settings.TIENLEN_REFEREE_TIMEOUT_S)
        if not Referee.objects.filter(referee_id=route.referee_id, last_heartbeat__gte=Now() - timeout).exists():
            referee_channel_drop(target=route.target)
            raise RefereeUnavailable(f"referee {route.referee_id} stopped reporting to the pool")

    return check


def failover_target_exists(*, lost: str) -> bool:
    """Another live referee (than `lost`, the one a table was just lost on) could take the
    table now, being below its capacity: the task retries at once instead of backing off,
    and the attempt does not count as a failure of the referee. (When every other referee
    is full, e.g. the lost one refused the table for capacity too, the table backs off.)"""
    return bool(lost) and any(
        r.referee_id != lost and not r.draining and r.active_tables < r.capacity for r in referees_live()
    )


def pool_bots_available() -> dict[str, str] | None:
    """The bots the ladder may seat: {bot id: version} of every bot with a free table slot
    on some live referee of the pool (a bot busy everywhere waits for the next tick).
    Outside a pool: the bots connected to REFEREE_TARGET (None: it cannot be reached)."""
    live = referees_live()
    if not live:
        return referee_list_bots()
    return {bot_id: bot.version for bot_id, bot in pool_connected_bots(live).items() if bot.free > 0}
