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
from dataclasses import dataclass
from enum import StrEnum

from django.db import OperationalError

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
from tournaments.services.tables import table_plan, table_seats_forfeit

log = logging.getLogger(__name__)


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


def table_attempt(table_id: int, *, lease: TableLease, avoid: tuple[str, ...] = ()) -> AttemptOutcome:
    """Play (or resume) the table once, recording its games as they stream in. `avoid`
    names referees earlier attempts just lost the table on."""
    plan = _plan(table_id, lease)
    if plan is None:
        return AttemptOutcome(Happened.NOTHING_TO_PLAY, table_id)
    lease.keep()
    if plan.first_game_index >= plan.games_planned:
        return AttemptOutcome(Happened.ALL_RECORDED, table_id, plan.attempts)
    # Hosted seats play with no author process: their runner sessions start now (the first
    # attempt usually finds them still starting: BOTS_ABSENT, retried shortly).
    if plan.bot_ids:
        hosted_sessions_ensure(table_id=table_id)
    route = routing.table_route(plan=plan, avoid=avoid)
    if plan.bot_ids:  # which version of each bot plays this table, as the referee reports it
        connected = routing.route_connected(route)
        if connected:
            bot_versions_note(connected=connected, bot_ids=plan.bot_ids)
        # Who the table waits for while the referee waits up to the connect deadline: shown
        # on the tournament's page and in the API instead of "playing now".
        _waiting_note(plan, connected)
    played = _Played()
    try:
        _play(plan, route, lease, played)
    except BotsNotConnected as exc:
        return _bots_absent(plan, route, exc)
    except TableBusy as exc:
        log.info("table %s: already running elsewhere, retrying later: %s", table_id, exc)
        return AttemptOutcome(Happened.BUSY, table_id, plan.attempts, str(exc), exc)
    except RefereeRejected as exc:
        return AttemptOutcome(Happened.REJECTED, table_id, plan.attempts, str(exc), exc)
    except ValueError as exc:
        log.error("table %s: bad game record: %s", table_id, exc)
        return AttemptOutcome(Happened.BAD_RECORD, table_id, plan.attempts,
                              f"bad game record from the referee: {exc}", exc, played.recorded)
    except OperationalError as exc:
        log.warning("table %s: database error, will resume: %s", table_id, exc)
        return AttemptOutcome(Happened.DATABASE_ERROR, table_id, plan.attempts, f"database error: {exc}", exc)
    except RefereeUnavailable as exc:
        return AttemptOutcome(Happened.REFEREE_UNAVAILABLE, table_id, plan.attempts, str(exc), exc,
                              played.recorded, failover_from=_failover_from(route), target=route.target)
    outcome = played.outcome
    if outcome is not None and not outcome.completed:
        return AttemptOutcome(Happened.ABORTED, table_id, plan.attempts, f"aborted: {outcome.detail}",
                              recorded=played.recorded, failover_from=_failover_from(route), target=route.target)
    return AttemptOutcome(Happened.COMPLETED, table_id, plan.attempts, recorded=played.recorded,
                          forfeited=tuple(outcome.forfeited) if outcome is not None else ())


def _plan(table_id: int, lease: TableLease) -> TablePlan | None:
    """The table's plan, which starts the attempt and takes the lease. When the lease's
    holder is a process of this host that is gone (a pool child killed: the broker
    redelivered its task at once), the table is taken over now rather than a lease later."""
    try:
        return table_plan(table_id=table_id, lease_owner=lease.owner)
    except LeaseHeld as exc:
        if not (lease_owner_process_gone(exc.owner) and table_lease_break(table_id=table_id, owner=exc.owner)):
            raise
        log.warning("table %s: its holder %s is gone; taking the table over", table_id, exc.owner)
        return table_plan(table_id=table_id, lease_owner=lease.owner)


@dataclass
class _Played:
    recorded: int = 0
    outcome: TableOutcome | None = None


def _play(plan: TablePlan, route: routing.Route, lease: TableLease, played: _Played) -> None:
    """Stream the table from the referee, recording each batch of games in one transaction
    (fenced by the lease), and keep the referee's table outcome."""
    for batch in event_batches(plan, route.target, routing.route_watch(route)):
        games = [e for e in batch if isinstance(e, FinishedGame)]
        played.recorded += len(table_games_record(table_id=plan.table_id, results=games, lease_owner=lease.owner))
        lease.check()
        outcomes = [e for e in batch if isinstance(e, TableOutcome)]
        if outcomes:
            played.outcome = outcomes[-1]


def _bots_absent(plan: TablePlan, route: routing.Route, exc: BotsNotConnected) -> AttemptOutcome:
    """Bots missing at the referee: wait for them until the connect deadline; past it, the
    absent seats forfeit the table (the others play on against the stand-in house bot)."""
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
    """The route's referee when another live referee could take the table now."""
    return route.referee_id if routing.failover_target_exists(lost=route.referee_id) else ""
