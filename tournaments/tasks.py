"""Celery tasks: thin wrappers that call services and enqueue what follows.

Every task may run twice (acks_late; a killed worker's message is redelivered): services
make that harmless. A tournament finishes exactly once because the last table's completion
is decided under the tournament's row lock and the finish is a conditional update (the
database does what a chord would, and survives a lost chord callback too).
"""

from __future__ import annotations

import contextlib
import logging
import queue
import threading
import time
from collections.abc import Callable, Iterator

from celery import shared_task
from celery.exceptions import Retry
from celery.signals import worker_ready, worker_shutdown
from django.conf import settings
from django.db import DatabaseError, OperationalError, transaction
from django.utils import timezone

from tournaments import jobs, leases, routing
from tournaments.jobs import Job
from tournaments.models import Deal, Table, Tournament
from tournaments.referee import (
    BotsNotConnected,
    GameResult,
    RefereeRejected,
    RefereeUnavailable,
    TableBusy,
    TableOutcome,
    TablePlan,
    referee_play_table,
)
from tournaments.services.accounts import bot_versions_note
from tournaments.services.ladder import ladder_tick
from tournaments.services.recording import deal_baselines_compute, table_games_record
from tournaments.services.tables import table_complete, table_plan, table_seats_forfeit
from tournaments.services.tournaments import tournament_schedule
from tournaments.table_lifecycle import (
    LeaseHeld,
    LeaseLost,
    lease_owner_process_gone,
    table_busy,
    table_lease_break,
    table_wait,
    tables_claim_stale,
    tables_forgotten,
)

log = logging.getLogger(__name__)

MAX_BACKOFF_S = 60
MAX_REFEREE_RETRIES = 30
#: Seconds before a table lost with its referee is retried on another live one.
FAILOVER_COUNTDOWN_S = 1


def backoff_seconds(attempt: int) -> int:
    """2, 4, 8, ... seconds, capped at a minute."""
    return min(MAX_BACKOFF_S, 2 ** max(1, min(attempt, 6)))


def _enqueue_tables(table_ids: list[int]) -> None:
    for table_id in table_ids:
        transaction.on_commit(lambda t=table_id: table_play_task.delay(t))


@shared_task(acks_late=True)
def tournament_schedule_task(tournament_id: int) -> int:
    table_ids = tournament_schedule(tournament_id=tournament_id)
    _enqueue_tables(table_ids)
    return len(table_ids)


def _finish(table_id: int, **kwargs) -> None:
    steps = table_complete(table_id=table_id, **kwargs)
    _enqueue_tables(steps.tables_to_play)
    if steps.tournament_finished:
        log.info("tournament of table %s finished", table_id)


_END = object()
MAX_BATCH = 64
#: After a game arrives, seconds the recorder waits for the next ones to record them in the
#: same transaction: a batch costs about the queries of one game, and with fast bots (the
#: house bots play a game in ~4 ms) the games of a table arrive within a few ms of each
#: other. Small beside any game with remote bots, so nothing waits longer for its result.
BATCH_WINDOW_S = 0.02


def _event_batches(
    plan: TablePlan, target: str | None = None, watch: Callable[[], None] | None = None,
) -> Iterator[list[GameResult | TableOutcome]]:
    """The referee's events in batches of whatever has arrived.

    A reader thread drains the gRPC stream so the referee never waits for the database;
    the task records everything that piled up in one transaction. `watch` runs whenever the
    stream has been silent for routing.WATCH_INTERVAL_S (it raises when the referee is gone).
    """
    events: queue.Queue = queue.Queue()
    stop = threading.Event()

    def read() -> None:
        try:
            for event in referee_play_table(plan, target=target):
                events.put(event)
                if stop.is_set():  # closing the stream cancels (aborts) the table
                    break
        except BaseException as exc:  # handed to the task thread
            events.put(exc)
        finally:
            events.put(_END)

    thread = threading.Thread(target=read, name=f"referee-{plan.table_id}", daemon=True)
    thread.start()
    try:
        while True:
            while True:
                try:
                    batch = [events.get(timeout=routing.WATCH_INTERVAL_S if watch else None)]
                    break
                except queue.Empty:
                    if watch is not None:
                        watch()
            window_ends = time.monotonic() + BATCH_WINDOW_S
            while len(batch) < MAX_BATCH and batch[-1] is not _END and not isinstance(batch[-1], BaseException):
                try:
                    batch.append(events.get(timeout=max(0.0, window_ends - time.monotonic())))
                except queue.Empty:
                    break
            done = False
            items = []
            error: BaseException | None = None
            for item in batch:
                if item is _END:
                    done = True
                elif isinstance(item, BaseException):
                    error = item
                    break
                else:
                    items.append(item)
            if items:
                yield items  # the games that arrived before an error are recorded first
            if error is not None:
                raise error
            if done:
                return
    finally:
        stop.set()


@shared_task(bind=True, acks_late=True, max_retries=None)
def table_play_task(self, table_id: int, avoid: list[str] | None = None) -> str:
    """Play a table on a referee (or resume it), recording each game as it streams in.

    The referee is chosen by `routing.referee_route` (the pool's best for this table);
    `avoid` names referees an earlier attempt just lost the table on. The attempt holds the
    table's lease meanwhile (tournaments.leases): a copy of the task finding it held by a
    live attempt stops at once, and an attempt whose lease was taken over (presumed dead)
    stops writing."""
    with leases.TableLease(table_id) as lease:
        try:
            return _table_play(self, table_id, avoid, lease)
        except LeaseHeld as exc:
            log.info("%s; not playing it twice", exc)
            return "played by another worker"
        except LeaseLost as exc:
            log.warning("%s; this attempt stops", exc)
            return "lease lost"
        except Retry:
            raise  # the retry's transition freed the lease until it is due
        except Exception as exc:
            # Anything else ended the attempt (a bug, a crash in the recorder): free the lease
            # so a reaper re-enqueues the table within a lease, as for a dead worker.
            with contextlib.suppress(Exception):
                table_wait(table_id=table_id, error=f"attempt failed: {exc!r}", owner=lease.owner, retry_in_s=0)
            raise


def _table_play(self, table_id: int, avoid: list[str] | None, lease: leases.TableLease) -> str:
    owner = lease.owner
    try:
        plan = table_plan(table_id=table_id, lease_owner=owner)
    except LeaseHeld as exc:
        # Its holder's process is gone (a pool child killed: the broker redelivered its task
        # at once): take the table over now rather than a lease later.
        if not (lease_owner_process_gone(exc.owner) and table_lease_break(table_id=table_id, owner=exc.owner)):
            raise
        log.warning("table %s: its holder %s is gone; taking the table over", table_id, exc.owner)
        plan = table_plan(table_id=table_id, lease_owner=owner)
    if plan is None:
        return "nothing to play"
    lease.keep()
    if plan.first_game_index >= plan.games_planned:
        _finish(table_id)
        return "complete"
    route = routing.table_route(plan=plan, avoid=avoid or ())
    if plan.bot_ids:  # which version of each bot plays this table, as the referee reports it
        connected = routing.route_connected(route)
        if connected:
            bot_versions_note(connected=connected, bot_ids=plan.bot_ids)
    outcome: TableOutcome | None = None
    recorded = 0
    try:
        for batch in _event_batches(plan, route.target, routing.route_watch(route)):
            games = [e for e in batch if isinstance(e, GameResult)]
            recorded += len(table_games_record(table_id=table_id, results=games, lease_owner=owner))
            lease.check()
            outcomes = [e for e in batch if isinstance(e, TableOutcome)]
            if outcomes:
                outcome = outcomes[-1]
    except BotsNotConnected as exc:
        if not plan.deadline_passed:
            countdown = backoff_seconds(plan.attempts)
            table_wait(table_id=table_id, error=str(exc), waiting_for_bots=True, owner=owner, retry_in_s=countdown)
            raise self.retry(countdown=countdown, exc=exc) from exc
        # Past the connect deadline: the absent seats forfeit the table.
        absent = plan.absent(routing.route_connected(route, refresh=True) or {})
        if table_seats_forfeit(table_id=table_id, absent=absent):
            # The others play the rest of the table against the stand-in house bot (with
            # a fresh connect wait for those present).
            table_wait(table_id=table_id, error=f"forfeit: {exc}", owner=owner, retry_in_s=0)
            raise self.retry(countdown=0, exc=exc) from exc
        _finish(table_id, absent=absent, error=f"forfeit: {exc}")
        return "forfeited"
    except TableBusy as exc:
        # Another worker is playing this table (a duplicate delivery, or a stale-table
        # re-enqueue while the first worker still runs): back off and look again. If that
        # worker finishes, the retry finds nothing to play; if it dies, the retry resumes.
        log.info("table %s: already running elsewhere, retrying later: %s", table_id, exc)
        countdown = backoff_seconds(self.request.retries + 1)
        table_busy(table_id=table_id, owner=owner, retry_in_s=countdown)
        raise self.retry(countdown=countdown, exc=exc) from exc
    except RefereeRejected as exc:
        _finish(table_id, status=Table.Status.FAILED, error=str(exc))
        return "failed"
    except ValueError as exc:
        # A game record that contradicts the table (wrong seats, points not zero-sum):
        # keep what was recorded, stop the table and say why.
        log.error("table %s: bad game record: %s", table_id, exc)
        _finish(table_id, status=Table.Status.FAILED, error=f"bad game record from the referee: {exc}")
        return "failed"
    except OperationalError as exc:
        # The database went away or was locked mid-table: the referee call is cancelled
        # (which aborts the table there) and the table resumes from its next unrecorded game.
        log.warning("table %s: database error, will resume: %s", table_id, exc)
        countdown = backoff_seconds(plan.attempts)
        with contextlib.suppress(DatabaseError):  # free the lease for the retry if it is back
            table_wait(table_id=table_id, error=f"database error: {exc}", owner=owner, retry_in_s=countdown)
        raise self.retry(countdown=countdown, exc=exc) from exc
    except RefereeUnavailable as exc:
        countdown = backoff_seconds(plan.attempts)
        table_wait(table_id=table_id, error=str(exc), owner=owner, retry_in_s=countdown)
        if routing.failover_target_exists(lost=route.referee_id):
            _failover(self, table_id, route, avoid, f"referee {route.referee_id} unavailable: {exc}")
        if plan.attempts > MAX_REFEREE_RETRIES:
            _finish(table_id, status=Table.Status.FAILED, error=f"referee unavailable: {exc}")
            return "failed"
        raise self.retry(countdown=countdown, exc=exc) from exc
    if outcome is not None and not outcome.completed:
        # Aborted (e.g. the referee is shutting down): resume from the next unrecorded game.
        countdown = backoff_seconds(plan.attempts)
        table_wait(table_id=table_id, error=f"aborted: {outcome.detail}", owner=owner, retry_in_s=countdown)
        if routing.failover_target_exists(lost=route.referee_id):
            _failover(self, table_id, route, avoid, f"aborted on referee {route.referee_id}: {outcome.detail}")
        raise self.retry(countdown=countdown)
    _finish(table_id, forfeited=outcome.forfeited if outcome is not None else ())
    return f"recorded {recorded} games"


def _failover(task, table_id: int, route: routing.Route, avoid: list[str] | None, why: str) -> None:
    """The table's referee is gone (or going) and another is live: resume the table there
    from its first unrecorded game, at once. Not a failure of the referee: the attempt does
    not count towards MAX_REFEREE_RETRIES (nor the backoff)."""
    log.warning("table %s: failing over from referee %s: %s", table_id, route.referee_id, why)
    # This attempt does not count; its lease was freed by the `wait` just before.
    table_busy(table_id=table_id, retry_in_s=FAILOVER_COUNTDOWN_S)
    raise task.retry(countdown=FAILOVER_COUNTDOWN_S, kwargs={"avoid": [*(avoid or ()), route.referee_id][-3:]})


@shared_task(acks_late=True)
def tournaments_tick() -> dict:
    """Celery beat: start due tournaments, feed ladders, re-enqueue forgotten tables."""
    now = timezone.now()
    started = 0
    for tournament_id in Tournament.objects.filter(
        status=Tournament.Status.SCHEDULED, starts_at__lte=now
    ).values_list("id", flat=True):
        tournament_schedule_task.delay(tournament_id)
        started += 1
    ladder_tables = 0
    ladders = list(Tournament.objects.filter(status=Tournament.Status.RUNNING, format=Tournament.Format.LADDER))
    if ladders:
        connected = routing.pool_bots_available()  # bots with a free slot across the pool
        for ladder in ladders:
            ids = ladder_tick(tournament=ladder, connected=connected)
            _enqueue_tables(ids)
            ladder_tables += len(ids)
    forgotten = tables_forgotten(now=now)
    for table_id in forgotten:
        table_play_task.delay(table_id)
    stale = tables_reap()
    # Baselines whose task was lost (a worker died before it ran): revealed deals with games
    # and no baseline yet.
    behind = list(
        Deal.objects.filter(revealed_at__isnull=False, baseline__isnull=True, games__isnull=False)
        .order_by("tournament_id").values_list("tournament_id", flat=True).distinct()[:20]
    )
    for tournament_id in behind:
        baselines_enqueue(tournament_id)
    return {
        "started": started, "ladder_tables": ladder_tables,
        "requeued": len(forgotten), "resumed_stale": len(stale),
    }


def tables_reap() -> list[int]:
    """Tables whose worker died mid-table (lease expired, or silent past the outer bound):
    brokers redeliver those late (Redis, after the visibility timeout) or never
    (filesystem), so every worker's reaper and the beat tick claim and re-enqueue them."""
    stale = tables_claim_stale(stale_after_s=getattr(settings, "TIENLEN_STALE_TABLE_SECONDS", 900.0))
    if stale:
        log.warning("re-enqueueing tables whose worker stopped renewing their lease: %s", stale)
    for table_id in stale:
        table_play_task.delay(table_id)
    return stale


@worker_ready.connect
def _reaper_start(**_: object) -> None:
    """Every worker looks for dead workers' tables: recovery needs no beat."""
    leases.reaper_start(tables_reap)


@worker_shutdown.connect
def _reaper_stop(**_: object) -> None:
    leases.reaper_stop()


@shared_task(acks_late=True, ignore_result=True)
def deal_baselines_task(tournament_id: int) -> int:
    """Luck baselines of a tournament's newly revealed deals (tournaments.scoring.baseline):
    its own task on its own queue (`baselines_enqueue`), so recording never waits for the
    simulations nor shares a worker process with them; re-enqueued while more remain."""
    batch = 500
    done = deal_baselines_compute(tournament_id=tournament_id, limit=batch)
    if done == batch:
        baselines_enqueue(tournament_id)
    return done


def baselines_enqueue(tournament_id: int) -> None:
    """Send the baselines task to the analysis queue (settings.TIENLEN_ANALYSIS_QUEUE), not
    the tables' queue: a worker recording games never spends its CPU on simulations."""
    deal_baselines_task.apply_async((tournament_id,), queue=settings.TIENLEN_ANALYSIS_QUEUE)


# The jobs the services enqueue after commit (tournaments.jobs). Looked up at call time, so
# a test that replaces a task's `delay` sees its own.
jobs.provide(Job.SCHEDULE_TOURNAMENT, lambda tournament_id: tournament_schedule_task.delay(tournament_id))
jobs.provide(Job.COMPUTE_BASELINES, lambda tournament_id: baselines_enqueue(tournament_id))
