"""Celery tasks: thin wrappers that call services and enqueue what follows.

Every task may run twice (acks_late; a killed worker's message is redelivered): services
make that harmless. A tournament finishes exactly once because the last table's completion
is decided under the tournament's row lock and the finish is a conditional update (the
database does what a chord would, and survives a lost chord callback too).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable
from types import SimpleNamespace

from celery import shared_task
from celery.exceptions import Retry
from celery.signals import task_prerun, worker_ready, worker_shutdown
from django.conf import settings
from django.db import DatabaseError, connections, reset_queries
from django.utils import timezone

from tournaments import jobs
from tournaments.jobs import Job
from tournaments.models import Table
from tournaments.play import leases
from tournaments.play.attempt import (
    AttemptOutcome,
    Happened,
    table_attempt,
    tables_attempt,
    tables_threads_stop,
)
from tournaments.play.lifecycle import (
    LeaseHeld,
    LeaseLost,
    table_busy,
    table_wait,
    tables_claim_lost,
    tables_claim_orphaned,
    tables_claim_stale,
)
from tournaments.play.referee import referee_wait_ready
from tournaments.play.routing import PoolView
from tournaments.services.hosting import hosted_sessions_claim_stale
from tournaments.services.recording import deal_baselines_compute
from tournaments.services.tables import NextSteps, table_complete
from tournaments.services.tick import tick_run
from tournaments.services.tournaments import tournament_schedule
from tournaments.table_rows import lock_holders_frozen_end

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
#: Seconds a pending table never attempted waits, with the tables' queue empty, before its
#: first task is taken for lost and sent again (`tables_claim_lost`).
LOST_TABLE_S = 30
#: The broker priority of a new table's task (`Job.PLAY_TABLE`, `Job.PLAY_TABLES`); every
#: resume (a reaper's or the tick's re-enqueue, a retry, a failover) goes at RESUME_PRIORITY,
#: ahead of them. On Redis a lower number is taken first (kombu keeps one list per step of
#: 0, 3, 6, 9; other brokers without priorities ignore it). Resumes at the back of the
#: queue waited behind every new table of the tournament (~100 after a fault, 40-50 s under
#: load): the table killed with its worker was the last to finish, every later game's
#: rating waited for it (ratings go in plan order), and a retry waiting there past its
#: lease's grace was taken for lost and sent again (benchmarks/README.md, "Recovery").
NEW_TABLE_PRIORITY = 6
RESUME_PRIORITY = 0


def backoff_seconds(attempt: int, cap: int = MAX_BACKOFF_S) -> int:
    """2, 4, 8, ... seconds, capped at `cap` (a minute)."""
    return min(cap, 2 ** max(1, min(attempt, 6)))


@shared_task(acks_late=True)
def tournament_schedule_task(tournament_id: int) -> int:
    table_ids = tournament_schedule(tournament_id=tournament_id)
    jobs.enqueue_tables_on_commit(table_ids)
    return len(table_ids)


def _finish(table_id: int, *, steps: NextSteps | None = None, **kwargs) -> None:
    """Close the table (unless the attempt closed it with its last games: `steps`) and
    start what follows."""
    steps = table_complete(table_id=table_id, **kwargs) if steps is None else steps
    jobs.enqueue_tables_on_commit(steps.tables_to_play)
    if steps.tournament_finished:
        log.info("tournament of table %s finished", table_id)


@shared_task(bind=True, acks_late=True, max_retries=None)
def table_play_task(self, table_id: int, avoid: list[str] | None = None, succeeds: str = "") -> str:
    """Play a table on a referee (or resume it), recording each game as it streams in.

    The attempt itself is `tournaments.play.attempt.table_attempt`; this task maps what
    happened to the table's transition and a retry (`_after`). `avoid` names referees an
    earlier attempt just lost the table on. The attempt holds the table's lease meanwhile
    (tournaments.play.leases): a copy of the task finding it held by a live attempt stops
    at once, and an attempt whose lease was taken over (presumed dead) stops writing.
    `succeeds` is the lease owner of the run this retry continues (`_retry`)."""
    with leases.TableLease(table_id, succeeds=succeeds) as lease:
        return _settle(self, table_id, lease, avoid or [],
                       lambda: table_attempt(table_id, lease=lease, avoid=tuple(avoid or ())))


def _settle(task, table_id: int, lease: leases.TableLease, avoid: list[str],
            attempt: Callable[[], AttemptOutcome]) -> str:
    """Run the attempt and map what happened to the table's transition and retry; raises
    Retry for a retry, and whatever else ended the attempt after freeing the lease."""
    try:
        return _after(task, attempt(), lease.owner, avoid)
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
        countdown = backoff_seconds(task.request.retries + 1, RECOVERY_BACKOFF_S)
        with contextlib.suppress(Exception):
            table_wait(table_id=table_id, error=f"database error: {exc}", owner=lease.owner,
                       retry_in_s=countdown)
        raise _retry(task, countdown, exc, lease.owner, avoid) from exc
    except Exception as exc:
        # Anything else ended the attempt (a bug, a crash in the recorder): free the lease
        # so a reaper re-enqueues the table within a lease, as for a dead worker.
        with contextlib.suppress(Exception):
            table_wait(table_id=table_id, error=f"attempt failed: {exc!r}", owner=lease.owner, retry_in_s=0)
        raise


class _GroupTable:
    """A table of a group (`tables_play_task`) as `_settle` and `_after` see a task: no
    retries yet, and a retry that sends the table a task of its own (the group plays its
    other tables on). It does not wait for a lost referee in the group's thread."""

    waits_for_referee = False

    def __init__(self, table_id: int) -> None:
        self.table_id = table_id
        self.request = SimpleNamespace(retries=0)

    def retry(self, *, countdown: float | None = None, exc: BaseException | None = None,
              kwargs: dict | None = None, priority: int = RESUME_PRIORITY) -> Retry:
        table_play_task.apply_async((self.table_id,), kwargs or None, countdown=countdown, priority=priority)
        return Retry(exc=exc, when=countdown)


@shared_task(bind=True, acks_late=True)
def tables_play_task(self, table_ids: list[int]) -> dict[str, int]:
    """Play a group of new tables in this worker process (`Job.PLAY_TABLES`), in order,
    `TIENLEN_GROUP_THREADS` (2) streaming at a time, each on a thread
    (`tournaments.play.attempt.tables_attempt`): the referee plays the next table while
    the last one records and closes. Each table has its own lease and its own
    attempt, mapped as `table_play_task` maps its one (`_settle`); a table whose attempt
    must be retried gets a task of its own (every retry, failover and resume is the
    table's own task). A copy of the group (a redelivery) finds its tables held or closed
    and plays nothing twice."""

    def play(table_id: int, pool: PoolView | None) -> str:
        with leases.TableLease(table_id) as lease:
            try:
                return _settle(_GroupTable(table_id), table_id, lease, [],
                               lambda: table_attempt(table_id, lease=lease, pool=pool))
            except Retry:
                return "retrying"
            except Exception:
                log.exception("table %s: attempt failed", table_id)
                return "failed"

    said: dict[str, int] = {}
    for what in tables_attempt(table_ids, play=play).values():
        key = what if isinstance(what, str) else "failed"
        said[key] = said.get(key, 0) + 1
    return said


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
            _finish(table_id, steps=outcome.closed, forfeited=outcome.forfeited)
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
            if getattr(task, "waits_for_referee", True):
                countdown = _referee_wait(outcome.target, countdown)
    raise _retry(task, countdown, outcome.exc, owner, avoid)


def _retry(task, countdown: float, exc: BaseException | None, owner: str, avoid: list[str]) -> Retry:
    """The task's retry, continuing this attempt (`owner`): when its last transition could
    not free the lease (the database was what failed: PostgreSQL restarting), the retry
    takes that lease back at once instead of finding it held and leaving the table to a
    reaper once it expires (TIENLEN_LEASE_SECONDS and a reaper period: up to 40 s after a
    PostgreSQL restart, benchmarks/README.md "Recovery")."""
    return task.retry(countdown=countdown, exc=exc, kwargs={"avoid": avoid, "succeeds": owner},
                      priority=RESUME_PRIORITY)


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
    raise task.retry(countdown=FAILOVER_COUNTDOWN_S, kwargs={"avoid": [*avoid, outcome.failover_from][-3:]},
                     priority=RESUME_PRIORITY)


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
    # A session frozen inside a statement holding a lock others wait for (the tournament's
    # row lock: every batch and close) ended first: the claims below would wait on it too.
    frozen = lock_holders_frozen_end()
    if frozen:
        log.warning("ended database sessions frozen mid-statement holding a lock others wait for: %s", frozen)
    # First the tables of this host's dead processes (at once), then the expired leases,
    # then the pending tables whose first task is lost (nothing in the queue for them).
    stale = tables_claim_orphaned()
    stale += tables_claim_stale(stale_after_s=getattr(settings, "TIENLEN_STALE_TABLE_SECONDS", 900.0))
    if _tables_queue_empty():
        stale += tables_claim_lost(older_than_s=LOST_TABLE_S)
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


def connections_usable() -> None:
    """Before every task: each database connection this process keeps is one that works.

    The worker keeps a process's connection from task to task (CELERY_DB_REUSE_MAX), and
    Django drops a broken or obsolete one only at the edges of a web request
    (`close_old_connections`), never in a worker. So a connection PostgreSQL dropped while
    the process was idle (a restart, pg_terminate_backend, an idle timeout) failed the next
    task with AdminShutdown and every task after it with "the connection is closed", for
    good: after a PostgreSQL restart the soak's ladder seated no table again, its tick
    failing at its first query in the pool process that ran it. Here, what a request's
    edge does (a connection with errors since its last commit checked, one past
    CONN_MAX_AGE or left with autocommit off closed), a connection left inside an atomic
    block dropped (Django's `close()` keeps one, waiting for the block's end, which an
    interrupted task never reaches), and one SELECT 1 for a connection PostgreSQL dropped
    while idle: the next query connects afresh."""
    for conn in connections.all(initialized_only=True):
        if conn.connection is None:
            continue
        if conn.in_atomic_block or conn.closed_in_transaction:
            log.warning("dropping the %s database connection the last task left in a transaction", conn.alias)
            with contextlib.suppress(Exception):
                conn.connection.close()
            conn.connection = None  # connecting again resets the transaction state
            continue
        try:
            conn.close_if_unusable_or_obsolete()
            if conn.connection is not None and not conn.is_usable():
                conn.close()
        except DatabaseError:
            conn.connection = None


def queries_forgotten() -> None:
    """Before every task: the query log of each connection this process keeps is emptied.

    With DEBUG on (the development default, the soak's and the demo's workers) Django logs
    every query on its connection (`queries_log`, up to 9,000 entries with their SQL), and
    only a web request's start empties it (`reset_queries` on `request_started`): in a
    worker the log filled task after task, the largest part of the workers' RSS growth in
    the 20-minute soak (benchmarks/README.md "Soak")."""
    reset_queries()


@task_prerun.connect
def _connections_usable(task=None, **_: object) -> None:
    # Not for a task run eagerly (`apply()`): that runs inside its caller's transaction.
    if task is not None and not getattr(task.request, "is_eager", False):
        queries_forgotten()
        connections_usable()


def _tables_queue_empty() -> bool:
    """Whether the broker's queue of table tasks holds no message (False when it cannot
    tell): a pending table never attempted while nothing waits in the queue had its task
    lost with a worker that received it (killed before it began, or stopped)."""
    from amqp.exceptions import NotFound
    from kombu.exceptions import ChannelError

    app = table_play_task.app
    try:
        with app.connection_for_read() as conn:
            queue = app.conf.task_default_queue
            return conn.default_channel.queue_declare(queue=queue, passive=True).message_count == 0
    except (ChannelError, NotFound) as exc:
        return "NOT_FOUND" in str(exc) or isinstance(exc, NotFound)  # Redis drops an empty queue's key
    except Exception:  # a broker that cannot say (or is down): the beat tick's 10-minute check remains
        return False


@worker_ready.connect
def _reaper_start(**_: object) -> None:
    """Every worker looks for dead workers' tables: recovery needs no beat."""
    leases.reaper_start(tables_reap)


@worker_shutdown.connect
def _reaper_stop(**_: object) -> None:
    leases.reaper_stop()
    tables_threads_stop()


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
jobs.provide(Job.PLAY_TABLE, lambda table_id: table_play_task.apply_async((table_id,), priority=NEW_TABLE_PRIORITY))
jobs.provide(Job.PLAY_TABLES,
             lambda table_ids: tables_play_task.apply_async((list(table_ids),), priority=NEW_TABLE_PRIORITY))
jobs.provide(Job.PLAY_CASUAL_TABLE, lambda table_id: casual_table_play_task.delay(table_id))

import tournaments.tasks_hosting  # noqa: E402,F401  (the runner queue's tasks and jobs)

