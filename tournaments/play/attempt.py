"""One attempt at playing a table, from its plan to what happened: the orchestration the
Celery task runs, kept out of the task so the task only maps the outcome to a transition or
a retry (`tournaments.tasks.table_play_task`; the table of "what happened -> transition" is
in docs/architecture.md).

An attempt takes the table's plan (which starts it and takes its lease), routes it to a
referee of the pool, notes which version of each bot plays, streams the games from the
referee and records them in batches as they arrive (`tournaments.play.stream`), and
returns an `AttemptOutcome`. It decides what the failure means — absent bots forfeit past
the connect deadline, a lost referee fails over when another live one has room — but it
never closes the table, frees its lease or schedules a retry: the task does.

`LeaseHeld` (another live attempt plays the table) and `LeaseLost` (this attempt was taken
over) propagate: the attempt must write nothing more. So does any unexpected exception.
"""

from __future__ import annotations

import logging
import os
import queue
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import TypeVar

from django.db import (
    DatabaseError,
    OperationalError,
    close_old_connections,
    connection,
    reset_queries,
)

from referee_service.participants import participant_bot_id
from tournaments.play import routing
from tournaments.play.leases import TableLease
from tournaments.play.lifecycle import (
    LeaseHeld,
    lease_owner_process_gone,
    table_lease_break,
    table_waiting_for,
)
from tournaments.play.referee import (
    BotsNotConnected,
    FinishedGame,
    RefereeRejected,
    RefereeUnavailable,
    TableBusy,
    TableOutcome,
    TablePlan,
)
from tournaments.play.stream import event_batches
from tournaments.services.accounts import bot_versions_note
from tournaments.services.hosting import hosted_seats_pending, hosted_sessions_ensure
from tournaments.services.recording import table_games_record
from tournaments.services.tables import (
    LastBatchClose,
    NextSteps,
    table_plan,
    table_seats_forfeit,
)

log = logging.getLogger(__name__)
T = TypeVar("T")


class Happened(StrEnum):
    """How an attempt ended (each row of docs/architecture.md's table but the lease's)."""

    NOTHING_TO_PLAY = "nothing to play"  # closed, or its tournament is not running
    ALL_RECORDED = "all recorded"  # earlier attempts recorded every game: close it
    COMPLETED = "completed"  # every game is recorded (the referee completed the table)
    ABORTED = "aborted"  # the referee stopped the table early (e.g. shutting down)
    BOTS_ABSENT = "bots absent"  # bots not connected, the connect deadline ahead
    FORFEITED_PLAY_ON = "forfeited, others play on"  # past the deadline: absent seats forfeited
    FORFEITED_ALL = "forfeited, nobody plays on"  # past the deadline: no seat plays for itself
    BUSY = "busy"  # the referee plays the table for another attempt already
    REFEREE_UNAVAILABLE = "referee unavailable"
    REJECTED = "rejected"  # the referee refused the request itself: retrying cannot help
    BAD_RECORD = "bad record"  # a game record that contradicts the table
    DATABASE_ERROR = "database error"  # the database went away or was locked mid-table


@dataclass(frozen=True)
class AttemptOutcome:
    """What happened in one attempt, with what the task needs to act on it."""

    happened: Happened
    table_id: int
    #: The table's attempt count with this one (`Table.attempts`): the backoff grows with it.
    attempts: int = 0
    #: Why the attempt ended, as noted on the table (`last_error`).
    error: str = ""
    #: The exception behind it, for the task's retry.
    exc: Exception | None = None
    #: Games recorded by this attempt.
    recorded: int = 0
    #: Participant indices the referee forfeited mid-table (a completed table).
    forfeited: tuple[int, ...] = ()
    #: Participant keys absent past the connect deadline (FORFEITED_*).
    absent: tuple[str, ...] = ()
    #: The referee the table was just lost on, when another live one has room for it
    #: (ABORTED, REFEREE_UNAVAILABLE): the task fails over to another one at once.
    failover_from: str = ""
    #: The address the attempt was routed to (ABORTED, REFEREE_UNAVAILABLE): the task
    #: waits there for the referee to answer again instead of backing off blind.
    target: str = ""
    #: What follows the table's close when the attempt closed it with its last games
    #: (COMPLETED; `LastBatchClose`); None: the task closes it.
    closed: NextSteps | None = None


def table_attempt(
    table_id: int, *, lease: TableLease, avoid: tuple[str, ...] = (), pool: routing.PoolView | None = None,
) -> AttemptOutcome:
    """Play (or resume) the table once, recording its games as they stream in. `avoid`
    names referees earlier attempts just lost the table on; `pool`, a view of the referee
    pool read for several tables (default: read now)."""
    attempt = Attempt(table_id, lease=lease, avoid=avoid)
    early = attempt.begin(pool)
    if early is not None:
        return early
    try:
        for batch in event_batches(attempt.plan, attempt.route.target, routing.route_watch(attempt.route)):
            attempt.record(batch)
    except ENDS_ATTEMPT as exc:
        return attempt.end(exc)
    return attempt.end(None)


#: The errors that end an attempt with an outcome (`Attempt.end`); any other propagates.
ENDS_ATTEMPT = (BotsNotConnected, TableBusy, RefereeRejected, ValueError, OperationalError, RefereeUnavailable)


class Attempt:
    """One attempt in three steps, so that one thread can drive several tables' attempts
    at once (`tournaments.play.tables`): `begin` (the plan, which takes the lease, and the
    route), `record` for each batch of the referee's events, and `end` with the error that
    ended the stream (None: it ended on its own), which says what happened."""

    def __init__(self, table_id: int, *, lease: TableLease, avoid: tuple[str, ...] = ()) -> None:
        self.table_id, self.lease, self.avoid = table_id, lease, avoid
        self.plan: TablePlan = None  # type: ignore[assignment]  # set by begin()
        self.route: routing.Route = None  # type: ignore[assignment]
        self.played = _Played()

    def begin(self, pool: routing.PoolView | None = None) -> AttemptOutcome | None:
        """Take the plan and route the table (over `pool`, a view of the pool read once for
        several tables, or the pool as it is now); an outcome when there is nothing to
        stream, else None."""
        table_id, lease = self.table_id, self.lease
        plan = _plan(table_id, lease)
        if plan is None:
            return AttemptOutcome(Happened.NOTHING_TO_PLAY, table_id)
        lease.keep()
        if plan.first_game_index >= plan.games_planned:
            return AttemptOutcome(Happened.ALL_RECORDED, table_id, plan.attempts)
        # Hosted seats play with no author process: their runner sessions start now (the
        # first attempt usually finds them still starting: BOTS_ABSENT, retried shortly).
        if plan.bot_ids:
            hosted_sessions_ensure(table_id=table_id)
        route = routing.table_route(plan=plan, avoid=self.avoid, pool=pool)
        if plan.bot_ids:  # which version of each bot plays this table, as the referee reports it
            connected = routing.route_connected(route)
            if connected:
                bot_versions_note(connected=connected, bot_ids=plan.bot_ids)
            # Who the table waits for while the referee waits up to the connect deadline:
            # shown on the tournament's page and in the API instead of "playing now".
            _waiting_note(plan, connected)
        self.plan, self.route = plan, route
        return None

    def record(self, batch: list) -> None:
        """Record a batch of the stream's games (one transaction, fenced by the lease) and
        keep the referee's table outcome."""
        games = [e for e in batch if isinstance(e, FinishedGame)]
        outcomes = [e for e in batch if isinstance(e, TableOutcome)]
        completed = outcomes[-1] if outcomes and outcomes[-1].completed else None
        if games:
            # With the referee's "completed" in the batch, these are the table's last games:
            # recorded and the table closed in one transaction.
            close = LastBatchClose(completed.forfeited) if completed is not None else None
            self.played.recorded += len(table_games_record(
                table_id=self.table_id, results=games, lease_owner=self.lease.owner, then=close))
            self.played.closed = close.steps if close is not None else None
        self.lease.check()
        if outcomes:
            self.played.outcome = outcomes[-1]

    def end(self, exc: BaseException | None) -> AttemptOutcome:
        """What happened, from the error that ended the stream or a recording (one of
        ENDS_ATTEMPT; None: the stream ended on its own)."""
        plan, route, played, table_id = self.plan, self.route, self.played, self.table_id
        if played.closed is not None:  # closed with its last games: whatever came after is moot
            return AttemptOutcome(Happened.COMPLETED, table_id, plan.attempts, recorded=played.recorded,
                                  closed=played.closed)
        if isinstance(exc, BotsNotConnected):
            return _bots_absent(plan, route, exc)
        if isinstance(exc, TableBusy):
            log.info("table %s: already running elsewhere, retrying later: %s", table_id, exc)
            return AttemptOutcome(Happened.BUSY, table_id, plan.attempts, str(exc), exc)
        if isinstance(exc, RefereeRejected):
            return AttemptOutcome(Happened.REJECTED, table_id, plan.attempts, str(exc), exc)
        if isinstance(exc, ValueError):
            log.error("table %s: bad game record: %s", table_id, exc)
            return AttemptOutcome(Happened.BAD_RECORD, table_id, plan.attempts,
                                  f"bad game record from the referee: {exc}", exc, played.recorded)
        if isinstance(exc, OperationalError):
            log.warning("table %s: database error, will resume: %s", table_id, exc)
            return AttemptOutcome(Happened.DATABASE_ERROR, table_id, plan.attempts, f"database error: {exc}", exc)
        if isinstance(exc, RefereeUnavailable):
            return AttemptOutcome(Happened.REFEREE_UNAVAILABLE, table_id, plan.attempts, str(exc), exc,
                                  played.recorded, failover_from=_failover_from(route), target=route.target)
        if exc is not None:
            raise exc
        outcome = played.outcome
        if outcome is not None and not outcome.completed:
            return AttemptOutcome(Happened.ABORTED, table_id, plan.attempts, f"aborted: {outcome.detail}",
                                  recorded=played.recorded, failover_from=_failover_from(route), target=route.target)
        return AttemptOutcome(Happened.COMPLETED, table_id, plan.attempts, recorded=played.recorded,
                              forfeited=tuple(outcome.forfeited) if outcome is not None else ())


def tables_attempt(table_ids: Sequence[int], *, play: Callable[[int, routing.PoolView | None], T],
                   at_once: int | None = None) -> dict[int, T | Exception]:
    """Play several tables from this process, `at_once` of them streaming at a time
    (default `TIENLEN_GROUP_THREADS`, 2): `play(table_id, pool)` (an attempt and what
    follows it: `table_attempt` and the task's mapping of its outcome) for each table, in
    the group's order, on `at_once` threads (`_TableThreads`); a thread takes the next
    table as soon as its last one is closed. So while one table records and closes, the
    other streams: the referee is kept fed instead of idling through each table's plan,
    route, recording and close (benchmarks/README.md, "Two tables at once"). Each thread
    has its own database connection. Each table is routed over this process's view of
    the pool as it is when the table starts (`routing.PoolView.recent`: read once per
    heartbeat period, no pool query per table; None when it cannot be read: the attempt
    reads it again and fails as its own task would, retried). What each `play` returned
    (or raised), by table."""
    from django.conf import settings

    if at_once is None:
        at_once = int(getattr(settings, "TIENLEN_GROUP_THREADS", 2))
    results: dict[int, T | Exception] = {}

    def call(table_id: int) -> Callable[[], None]:
        def run() -> None:
            try:
                results[table_id] = play(table_id, _pool_view())
            except Exception as exc:  # the caller's to report
                results[table_id] = exc
        return run

    _threads().run_all([call(t) for t in table_ids], at_once=max(1, at_once))
    return results


def _pool_view() -> routing.PoolView | None:
    """This process's recent view of the pool, None when it cannot be read (the database
    is down: the table's attempt then meets the error in its own plan and is retried)."""
    try:
        return routing.PoolView.recent()
    except DatabaseError:
        return None


class _TableThreads:
    """This process's threads for the tables of groups (`tables_attempt`): as many as the
    most tables a group played at once so far, each keeping its database connection from
    one table to the next (checked, and its query log emptied, before each, as Django does
    at a request's start), until `tables_threads_stop`. The calls are taken in the order
    they were given."""

    def __init__(self) -> None:
        self.jobs: queue.Queue[Callable[[], None] | None] = queue.Queue()
        self.threads: list[threading.Thread] = []
        self.lock = threading.Lock()

    def run_all(self, calls: list[Callable[[], None]], *, at_once: int) -> None:
        """Run the calls, up to `at_once` at a time (one a thread); return when all have."""
        finished = threading.Semaphore(0)
        with self.lock:
            while len(self.threads) < min(len(calls), at_once):
                thread = threading.Thread(target=self._loop, name=f"tables-{len(self.threads)}", daemon=True)
                thread.start()
                self.threads.append(thread)
        gate = threading.BoundedSemaphore(at_once)  # threads left from a larger group wait here
        for call in calls:
            self.jobs.put(_gated(_and_release(call, finished), gate))
        for _ in calls:
            finished.acquire()

    def _loop(self) -> None:
        try:
            while (job := self.jobs.get()) is not None:
                close_old_connections()
                reset_queries()  # as before a task (tournaments.tasks.queries_forgotten)
                job()
        finally:
            connection.close()

    def stop(self) -> None:
        with self.lock:
            for _ in self.threads:
                self.jobs.put(None)
            for thread in self.threads:
                thread.join(timeout=10)
            self.threads = []


def _gated(call: Callable[[], None], gate: threading.BoundedSemaphore) -> Callable[[], None]:
    def run() -> None:
        with gate:
            call()
    return run


def _and_release(call: Callable[[], None], finished: threading.Semaphore) -> Callable[[], None]:
    def run() -> None:
        try:
            call()
        finally:
            finished.release()
    return run


_table_threads: dict[int, _TableThreads] = {}
_table_threads_lock = threading.Lock()


def _threads() -> _TableThreads:
    """This process's table threads (a prefork child makes its own)."""
    with _table_threads_lock:
        return _table_threads.setdefault(os.getpid(), _TableThreads())


def tables_threads_stop() -> None:
    """Stop this process's table threads, closing their database connections (a worker
    shutting down; a test)."""
    with _table_threads_lock:
        threads = _table_threads.pop(os.getpid(), None)
    if threads is not None:
        threads.stop()


def _plan(table_id: int, lease: TableLease) -> TablePlan | None:
    """The table's plan, which starts the attempt and takes the lease. When the lease's
    holder is a process of this host that is gone (a pool child killed: the broker
    redelivered its task at once), or the ended attempt this one continues (`lease.succeeds`:
    its lease outlived it because the database failed), the table is taken over now rather
    than a lease later."""
    try:
        return table_plan(table_id=table_id, lease_owner=lease.owner)
    except LeaseHeld as exc:
        ended = exc.owner == lease.succeeds or lease_owner_process_gone(exc.owner)
        if not (ended and table_lease_break(table_id=table_id, owner=exc.owner)):
            raise
        log.warning("table %s: its holder %s has ended; taking the table over", table_id, exc.owner)
        return table_plan(table_id=table_id, lease_owner=lease.owner)


@dataclass
class _Played:
    recorded: int = 0
    outcome: TableOutcome | None = None
    closed: NextSteps | None = None


def _bots_absent(plan: TablePlan, route: routing.Route, exc: BotsNotConnected) -> AttemptOutcome:
    """Bots missing at the referee: wait for them until the connect deadline; past it, the
    absent seats forfeit the table (the others play on against the stand-in house bot).
    The next route reads the pool afresh: the bots may be connecting elsewhere."""
    routing.pool_view_forget()
    if not plan.deadline_passed:
        _waiting_note(plan, routing.route_connected(route, refresh=True))
        return AttemptOutcome(Happened.BOTS_ABSENT, plan.table_id, plan.attempts, str(exc), exc)
    absent = tuple(plan.absent(routing.route_connected(route, refresh=True) or {}))
    # A hosted bot absent because of the platform (its session still starting, or its
    # runner failed) is not the bot's forfeit: the table waits for it instead.
    pending = {str(b) for b in hosted_seats_pending(table_id=plan.table_id)}
    if any(participant_bot_id(key) in pending for key in absent):
        return AttemptOutcome(Happened.BOTS_ABSENT, plan.table_id, plan.attempts,
                              f"{exc} (a hosted bot's session is starting on a runner)", exc)
    still_playing = table_seats_forfeit(table_id=plan.table_id, absent=absent)
    happened = Happened.FORFEITED_PLAY_ON if still_playing else Happened.FORFEITED_ALL
    return AttemptOutcome(happened, plan.table_id, plan.attempts, f"forfeit: {exc}", exc, absent=absent)


def _waiting_note(plan: TablePlan, connected: dict[str, str] | None) -> None:
    """Write the names of the table's bots not connected to its referee (none known when
    the referee cannot say which are: nothing is claimed then)."""
    absent = [] if connected is None else [b for b in plan.bot_ids if str(b) not in connected]
    table_waiting_for(table_id=plan.table_id, bot_ids=absent)


def _failover_from(route: routing.Route) -> str:
    """The route's referee when another live referee could take the table now (the
    pool is read afresh for the next route: this one was just lost)."""
    routing.pool_view_forget()
    return route.referee_id if routing.failover_target_exists(lost=route.referee_id) else ""
