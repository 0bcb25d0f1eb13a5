"""Follow-up work a service asks for, enqueued only once its transaction commits.

Services never import the tasks (the tasks import the services): a service names the job
and its argument, and `tournaments.tasks` provides each job when it is imported, which the
app's `ready()` does in every process (web, worker, beat, management commands). A write
that rolls back starts nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from enum import StrEnum
from functools import partial

from django.db import transaction


class Job(StrEnum):
    SCHEDULE_TOURNAMENT = "schedule_tournament"  # create the first tables, enqueue them
    COMPUTE_BASELINES = "compute_baselines"  # luck baselines of newly revealed deals


_runners: dict[Job, Callable[[int], object]] = {}


def provide(job: Job, runner: Callable[[int], object]) -> None:
    """Register what runs `job` (tasks.py: a call of the task's `delay`)."""
    _runners[job] = runner


def enqueue_on_commit(job: Job, argument: int) -> None:
    """Run `job(argument)` after the current transaction commits (at once outside one)."""
    if job not in _runners:
        raise RuntimeError(f"no task provides the job {job.value!r}: tournaments.tasks is not loaded")
    transaction.on_commit(partial(_run, job, argument))


def _run(job: Job, argument: int) -> None:
    _runners[job](argument)
