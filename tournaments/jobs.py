"""Follow-up work, enqueued only once the current transaction commits: the one
enqueue-after-commit mechanism, used by the services and by the tasks themselves.

Services never import the tasks (the tasks import the services): a service names the job
and its argument, and `tournaments.tasks` provides each job when it is imported, which the
app's `ready()` does in every process (web, worker, beat, management commands). A write
that rolls back starts nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from enum import StrEnum
from functools import partial
from typing import Any

from django.db import transaction


class Job(StrEnum):
    SCHEDULE_TOURNAMENT = "schedule_tournament"  # create the first tables, enqueue them
    COMPUTE_BASELINES = "compute_baselines"  # luck baselines of newly revealed deals
    PLAY_TABLE = "play_table"  # play (or resume) a table on a referee
    PLAY_TABLES = "play_tables"  # a group of new tables, streamed at once by one worker process
    VALIDATE_SUBMISSION = "validate_submission"  # a hosted bot's new version, on a runner
    RUN_HOSTED_SESSION = "run_hosted_session"  # a hosted bot's session for a table, on a runner
    PLAY_CASUAL_TABLE = "play_casual_table"  # a person's casual table (tournaments.play.casual)
    RUN_GATE = "run_gate"  # a new version's duplicate set against its predecessor, on a runner


_runners: dict[Job, Callable[[Any], object]] = {}


def provide(job: Job, runner: Callable[[Any], object]) -> None:
    """Register what runs `job` (tasks.py: a call of the task's `delay`)."""
    _runners[job] = runner


def enqueue_on_commit(job: Job, argument: Any) -> None:
    """Run `job(argument)` after the current transaction commits (at once outside one)."""
    if job not in _runners:
        raise RuntimeError(f"no task provides the job {job.value!r}: tournaments.tasks is not loaded")
    transaction.on_commit(partial(_run, job, argument))


def enqueue_each_on_commit(job: Job, arguments: Iterable[int]) -> None:
    """`enqueue_on_commit` for each argument (e.g. every table a service created)."""
    for argument in arguments:
        enqueue_on_commit(job, argument)


def enqueue_tables_on_commit(table_ids: Iterable[int]) -> None:
    """Play new tables (a schedule's, a knockout's next round) after commit, in groups of
    TIENLEN_TABLES_PER_TASK (default 1; e.g. 8): each group is one task whose worker
    process plays its tables TIENLEN_GROUP_THREADS (2) at a time
    (tournaments.play.attempt.tables_attempt), so the referee plays the next table while
    the worker records and closes the last one, and a table costs no task of its own. A group of one is the table's own task (Job.PLAY_TABLE). Every retry, resume
    and re-enqueue of a table is the table's own task."""
    from django.conf import settings

    ids = list(table_ids)
    size = max(1, int(getattr(settings, "TIENLEN_TABLES_PER_TASK", 1)))
    for start in range(0, len(ids), size):
        group = ids[start:start + size]
        if len(group) == 1:
            enqueue_on_commit(Job.PLAY_TABLE, group[0])
        else:
            enqueue_on_commit(Job.PLAY_TABLES, tuple(group))


def _run(job: Job, argument: Any) -> None:
    _runners[job](argument)
