"""Celery tasks: thin wrappers that call services and enqueue what follows.

Every task may run twice (acks_late; a killed worker's message is redelivered): services
make that harmless. A tournament finishes exactly once because the last table's completion
is decided under the tournament's row lock and the finish is a conditional update (the
database does what a chord would, and survives a lost chord callback too).
"""

from __future__ import annotations

import contextlib
import logging

from celery import shared_task
from celery.exceptions import Retry
from celery.signals import worker_ready, worker_shutdown
from django.conf import settings
from django.db import DatabaseError
from django.utils import timezone

from tournaments import jobs
from tournaments.jobs import Job
from tournaments.models import Table
from tournaments.play import leases
from tournaments.play.attempt import AttemptOutcome, Happened, table_attempt
from tournaments.play.lifecycle import (
    LeaseHeld,
    LeaseLost,
    table_busy,
    table_wait,
    tables_claim_orphaned,
    tables_claim_stale,
)
from tournaments.play.referee import referee_wait_ready
from tournaments.services.hosting import hosted_sessions_claim_stale
from tournaments.services.recording import deal_baselines_compute
from tournaments.services.tables import table_complete
from tournaments.services.tick import tick_run
from tournaments.services.tournaments import tournament_schedule

log = logging.getLogger(__name__)

MAX_BACKOFF_S = 60
#: The backoff's cap when the referee (or the database) was lost mid-table: they restart in
#: seconds, and a retry costs one refused connection. Growing to a minute, the backoff of a
#: table that failed a few times while its referee restarted kept it waiting up to a minute
#: after the referee was back (recovery runs of 64-150 s instead of ~40).
RECOVERY_BACKOFF_S = 8
#: Attempts against an unavailable referee before the table fails: about 25 minutes of
#: outage at RECOVERY_BACKOFF_S (as 30 attempts were at the minute's cap).
MAX_REFEREE_RETRIES = 200
#: Seconds before a table lost with its referee is retried on another live one.
FAILOVER_COUNTDOWN_S = 1


def backoff_seconds(attempt: int, cap: int = MAX_BACKOFF_S) -> int:
    """2, 4, 8, ... seconds, capped at `cap` (a minute)."""
    return min(cap, 2 ** max(1, min(attempt, 6)))


@shared_task(acks_late=True)
def tournament_schedule_task(tournament_id: int) -> int:
    table_ids = tournament_schedule(tournament_id=tournament_id)
    jobs.enqueue_each_on_commit(Job.PLAY_TABLE, table_ids)
    return len(table_ids)


def _finish(table_id: int, **kwargs) -> None:
    steps = table_complete(table_id=table_id, **kwargs)
    jobs.enqueue_each_on_commit(Job.PLAY_TABLE, steps.tables_to_play)
    if steps.tournament_finished:
        log.info("tournament of table %s finished", table_id)


@shared_task(bind=True, acks_late=True, max_retries=None)
def table_play_task(self, table_id: int, avoid: list[str] | None = None) -> str:
    """Play a table on a referee (or resume it), recording each game as it streams in.

    The attempt itself is `tournaments.play.attempt.table_attempt`; this task maps what
    happened to the table's transition and a retry (`_after`). `avoid` names referees an
    earlier attempt just lost the table on. The attempt holds the table's lease meanwhile
    (tournaments.play.leases): a copy of the task finding it held by a live attempt stops
    at once, and an attempt whose lease was taken over (presumed dead) stops writing."""
    with leases.TableLease(table_id) as lease:
        try:
            outcome = table_attempt(table_id, lease=lease, avoid=tuple(avoid or ()))
            return _after(self, outcome, lease.owner, avoid or [])
        except LeaseHeld as exc:
            log.info("%s; not playing it twice", exc)
            return "played by another worker"
        except LeaseLost as exc:
            log.warning("%s; this attempt stops", exc)
            return "lease lost"
        except Retry:
            raise  # the retry's transition freed the lease until it is due
        except DatabaseError as exc:
            # The database went away outside the stream (the plan, routing, the close: e.g.
            # PostgreSQL restarting). Failing the task would ack its message and leave the
            # table pending with no task at all (found by beat's forgotten-table check only
            # after 10 minutes, and never without beat): retry it instead, and free the lease
            # if the database answers already.
            countdown = backoff_seconds(self.request.retries + 1, RECOVERY_BACKOFF_S)
            with contextlib.suppress(Exception):
                table_wait(table_id=table_id, error=f"database error: {exc}", owner=lease.owner,
                           retry_in_s=countdown)
            raise self.retry(countdown=countdown, exc=exc) from exc
        except Exception as exc:
            # Anything else ended the attempt (a bug, a crash in the recorder): free the lease
            # so a reaper re-enqueues the table within a lease, as for a dead worker.
            with contextlib.suppress(Exception):
                table_wait(table_id=table_id, error=f"attempt failed: {exc!r}", owner=lease.owner, retry_in_s=0)
            raise


def _after(task, outcome: AttemptOutcome, owner: str, avoid: list[str]) -> str:
    """The transition and the retry for what happened (docs/architecture.md's table)."""
    table_id, happened = outcome.table_id, outcome.happened
    countdown = backoff_seconds(outcome.attempts)
    match happened:
        case Happened.NOTHING_TO_PLAY:
            return "nothing to play"
        case Happened.ALL_RECORDED:
            _finish(table_id)
            return "complete"
        case Happened.COMPLETED:
            _finish(table_id, forfeited=outcome.forfeited)
            return f"recorded {outcome.recorded} games"
        case Happened.FORFEITED_ALL:
            _finish(table_id, absent=outcome.absent, error=outcome.error)
            return "forfeited"
        case Happened.REJECTED | Happened.BAD_RECORD:
            _finish(table_id, status=Table.Status.FAILED, error=outcome.error)
            return "failed"
        case Happened.BUSY:
            # Another worker plays this table (a duplicate delivery, or a stale-table
            # re-enqueue while the first worker still runs): back off and look again. If
            # that worker finishes, the retry finds nothing to play; if it dies, it resumes.
            # At most every 8 s: a frozen worker's play ends once it wakes (fenced) or dies,
            # and the table resumes within seconds of that, not a minute.
            countdown = backoff_seconds(task.request.retries + 1, RECOVERY_BACKOFF_S)
            table_busy(table_id=table_id, owner=owner, retry_in_s=countdown)
        case Happened.DATABASE_ERROR:
            countdown = backoff_seconds(outcome.attempts, RECOVERY_BACKOFF_S)
            # The referee call was cancelled (which aborts the table there); the table
            # resumes from its next unrecorded game. Free the lease if the database is back.
            with contextlib.suppress(DatabaseError):
                table_wait(table_id=table_id, error=outcome.error, owner=owner, retry_in_s=countdown)
        case Happened.FORFEITED_PLAY_ON:
            # The others play the rest against the stand-in house bot, at once (with a
            # fresh connect wait for those present).
            countdown = 0
            table_wait(table_id=table_id, error=outcome.error, owner=owner, retry_in_s=countdown)
        case Happened.BOTS_ABSENT:
            table_wait(table_id=table_id, error=outcome.error, waiting_for_bots=True, owner=owner,
                       retry_in_s=countdown)
        case Happened.ABORTED | Happened.REFEREE_UNAVAILABLE:
            countdown = backoff_seconds(outcome.attempts, RECOVERY_BACKOFF_S)
            table_wait(table_id=table_id, error=outcome.error, owner=owner, retry_in_s=countdown)
            if outcome.failover_from:
                _failover(task, outcome, avoid)
            if happened == Happened.REFEREE_UNAVAILABLE and outcome.attempts > MAX_REFEREE_RETRIES:
                _finish(table_id, status=Table.Status.FAILED, error=f"referee unavailable: {outcome.exc}")
                return "failed"
            countdown = _referee_wait(outcome.target, countdown)
    raise task.retry(countdown=countdown, exc=outcome.exc)


def _referee_wait(target: str, countdown: int) -> int:
    """The retry's countdown after waiting, in this task, up to `countdown` seconds for the
    referee at `target` to answer again: 0 either way once waited (the wait was the
    backoff). Waiting here holds the worker's slot, so the worker takes no more tables from
    the queue meanwhile: with the referee down, each of them would fail at once, back off
    and fail again (a retry storm that kept a restarted referee idle for tens of seconds
    while the worker worked through a hundred futile attempts); this way the tables wait in
    the queue and the slots resume within a second or two of the referee's return. The
    table's lease stays free until the retry's due time plus one lease, as before."""
    if not target or countdown <= 0:
        return countdown
    try:
        referee_wait_ready(target=target, timeout_s=countdown)
    except Exception:  # a channel that cannot even be made: back off as before
        log.exception("waiting for the referee at %s", target)
        return countdown
    return 0


def _failover(task, outcome: AttemptOutcome, avoid: list[str]) -> None:
    """The table's referee is gone (or going) and another is live: resume the table there
    from its first unrecorded game, at once. Not a failure of the referee: the attempt does
    not count towards MAX_REFEREE_RETRIES (nor the backoff)."""
    log.warning("table %s: failing over from referee %s: %s", outcome.table_id, outcome.failover_from, outcome.error)
    # This attempt does not count; its lease was freed by the `wait` just before.
    table_busy(table_id=outcome.table_id, retry_in_s=FAILOVER_COUNTDOWN_S)
    raise task.retry(countdown=FAILOVER_COUNTDOWN_S, kwargs={"avoid": [*avoid, outcome.failover_from][-3:]})


@shared_task(acks_late=True)
def tournaments_tick() -> dict:
    """Celery beat: start due tournaments, feed ladders, re-enqueue forgotten and stale
    tables and lost baselines, close casual tables whose worker is gone (the work is found
    by `services.tick.tick_run`)."""
    work = tick_run(now=timezone.now())
    for tournament_id in work.tournaments_due:
        tournament_schedule_task.delay(tournament_id)
    jobs.enqueue_each_on_commit(Job.PLAY_TABLE, work.ladder_tables)
    for table_id in work.tables_forgotten:
        table_play_task.delay(table_id)
    stale = tables_reap()
    for tournament_id in work.baselines_behind:
        baselines_enqueue(tournament_id)
    return {
        "started": len(work.tournaments_due), "ladder_tables": len(work.ladder_tables),
        "requeued": len(work.tables_forgotten), "resumed_stale": len(stale),
        "casual_abandoned": len(work.casual_abandoned),
    }


def tables_reap() -> list[int]:
    """Tables whose worker died mid-table (its process gone from this host, its lease
    expired, or silent past the outer bound):
    brokers redeliver those late (Redis, after the visibility timeout) or never
    (filesystem), so every worker's reaper and the beat tick claim and re-enqueue them."""
    # First the tables of this host's dead processes (at once), then the expired leases.
    stale = tables_claim_orphaned()
    stale += tables_claim_stale(stale_after_s=getattr(settings, "TIENLEN_STALE_TABLE_SECONDS", 900.0))
    if stale:
        log.warning("re-enqueueing tables whose worker stopped renewing their lease: %s", stale)
    for table_id in stale:
        table_play_task.delay(table_id)
    # Hosted bots' sessions whose runner died: started again on another runner, before the
    # referee's disconnect grace for hosted seats runs out (TIENLEN_HOSTED_DISCONNECT_GRACE_S).
    sessions = hosted_sessions_claim_stale()
    if sessions:
        log.warning("restarting hosted sessions whose runner stopped renewing their lease: %s", sessions)
    jobs.enqueue_each_on_commit(Job.RUN_HOSTED_SESSION, sessions)
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
@shared_task
def casual_table_play_task(table_id: int) -> str:
    """Play a casual table (a person against bots) to its end: tournaments.play.casual.
    Not retried: a person does not wait for a retry; a failed table says why on its page."""
    from tournaments.play.casual import casual_table_play

    casual_table_play(table_id)
    return "played"


jobs.provide(Job.SCHEDULE_TOURNAMENT, lambda tournament_id: tournament_schedule_task.delay(tournament_id))
jobs.provide(Job.COMPUTE_BASELINES, lambda tournament_id: baselines_enqueue(tournament_id))
jobs.provide(Job.PLAY_TABLE, lambda table_id: table_play_task.delay(table_id))
jobs.provide(Job.PLAY_CASUAL_TABLE, lambda table_id: casual_table_play_task.delay(table_id))

import tournaments.tasks_hosting  # noqa: E402,F401  (the runner queue's tasks and jobs)

