"""Celery tasks of the runner queue (settings.TIENLEN_RUNNER_QUEUE): thin wrappers over
tournaments.runner. Only runners consume that queue: workers on hosts that can sandbox,
whose concurrency is their sandbox slots (docs/hosting.md). acks_late, so a runner that
dies has its jobs redelivered to another one; the services make a second run harmless."""

from __future__ import annotations

import logging

from celery import shared_task
from celery.signals import celeryd_after_setup
from django.conf import settings

from tournaments import jobs
from tournaments.hosting.check import SandboxUnavailable
from tournaments.jobs import Job
from tournaments.services import hosting

log = logging.getLogger(__name__)

PLATFORM_RETRY_S = 5


@shared_task(bind=True, acks_late=True, max_retries=20)
def submission_validate_task(self, submission_id: int) -> str:
    from tournaments.models import BotSubmission
    from tournaments.runner import PlatformFailure, validate_submission

    if not hosting.submission_validation_begin(submission_id=submission_id):
        return "already validated or being validated"
    submission = BotSubmission.objects.get(pk=submission_id)
    try:
        verdict = validate_submission(submission)
    except (PlatformFailure, SandboxUnavailable) as exc:
        log.warning("validation of submission %s failed on the runner's side: %s", submission_id, exc)
        hosting.submission_validation_retry(submission_id=submission_id)
        raise self.retry(countdown=PLATFORM_RETRY_S, exc=exc) from exc
    hosting.submission_validation_finish(submission_id=submission_id, ok=verdict.ok, log=verdict.log,
                                         detail=verdict.detail)
    return "ready" if verdict.ok else "failed"


@shared_task(bind=True, acks_late=True, max_retries=None)
def hosted_session_task(self, session_id: int) -> str:
    from tournaments.runner import PlatformFailure, run_session

    try:
        return run_session(session_id)
    except (PlatformFailure, SandboxUnavailable) as exc:
        log.warning("hosted session %s failed on the runner's side, trying again: %s", session_id, exc)
        raise self.retry(countdown=PLATFORM_RETRY_S, exc=exc) from exc


@shared_task(bind=True, acks_late=True, max_retries=20)
def gate_task(self, submission_id: int) -> str:
    """A new version's gate: its duplicate sets against its predecessor (tournaments.runner)."""
    from tournaments.runner import PlatformFailure, run_gate

    submission = hosting.gate_begin(submission_id=submission_id)
    if submission is None:
        return "gate already played or being played"
    try:
        result = run_gate(submission)
    except (PlatformFailure, SandboxUnavailable) as exc:
        log.warning("the gate of submission %s failed on the runner's side: %s", submission_id, exc)
        hosting.gate_retry(submission_id=submission_id)
        raise self.retry(countdown=PLATFORM_RETRY_S, exc=exc) from exc
    hosting.gate_finish(submission_id=submission_id, result=result)
    return result.verdict or "failed"


def runner_refusal(consumed: set[str]) -> str | None:
    """Why a worker consuming `consumed` must not start: it takes the runner queue on a host
    that cannot sandbox (one line, the host check's), else None."""
    from pathlib import Path

    from tournaments.hosting.check import problems
    from tournaments.hosting.process import HostingConfig

    if settings.TIENLEN_RUNNER_QUEUE not in consumed:
        return None
    found = problems(HostingConfig.from_env(Path(settings.VAR_DIR)))
    if not found:
        return None
    return (f"this worker consumes the runner queue {settings.TIENLEN_RUNNER_QUEUE!r} but cannot run "
            f"hosted bots on this host: {'; '.join(found)}")


@celeryd_after_setup.connect
def _runner_check(sender=None, instance=None, **_: object) -> None:
    """`celery worker --queues runner` on a host that cannot sandbox refuses to start with
    one line saying what is missing (it would otherwise fail every hosted bot's job): a
    bot never runs unsandboxed by accident. SystemExit passes Celery's signal dispatch."""
    if instance is None:
        return
    refusal = runner_refusal(set(instance.app.amqp.queues.consume_from or ()))
    if refusal:
        raise SystemExit(f"tienlen runner: {refusal}")


def _runner_queue(task, argument: int) -> None:
    task.apply_async((argument,), queue=settings.TIENLEN_RUNNER_QUEUE)


jobs.provide(Job.VALIDATE_SUBMISSION, lambda submission_id: _runner_queue(submission_validate_task, submission_id))
jobs.provide(Job.RUN_GATE, lambda submission_id: _runner_queue(gate_task, submission_id))
jobs.provide(Job.RUN_HOSTED_SESSION, lambda session_id: _runner_queue(hosted_session_task, session_id))
