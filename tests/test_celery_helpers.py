"""The shared test worker: tasks sent inside it run, and it leaves the Celery app as found.

Guards the order dependence that once made the live-progress browser test hang after the
tournaments worker tests (a later worker consumed the earlier test's private queue).
"""

from __future__ import annotations

import threading
from typing import Any

import pytest

from tests.celery_helpers import isolated_celery_worker

pytestmark = pytest.mark.django_db(transaction=True)


def _app_state(app: Any) -> dict[str, Any]:
    queues = app.amqp.queues
    return {
        "conf": {key: app.conf.get(key) for key in
                 ("broker_url", "broker_transport_options", "result_backend", "task_default_queue")},
        "effective_broker": app.conf.broker_url,
        "queues": sorted(queues),
        "consume_from": None if queues._consume_from is None else sorted(queues._consume_from),
        "pools": (app._pool, app.amqp._producer_pool),
    }


def test_workers_in_sequence_each_run_their_tasks_and_restore_the_app() -> None:
    from tienlen_site.celery import app

    ran: list[str] = []
    done = threading.Event()

    @app.task(name="tests.celery_helpers.note")
    def note(tag: str) -> None:
        ran.append(tag)
        done.set()

    before = _app_state(app)
    try:
        with isolated_celery_worker(concurrency=1) as first:
            note.delay("first")
            assert done.wait(30), "the first worker never ran its task"
        assert _app_state(app) == before
        done.clear()
        with isolated_celery_worker(concurrency=1) as second:
            assert second != first
            # its private queue and its private analysis queue (the luck baselines), nothing else
            assert app.amqp.queues.consume_from.keys() == {second, f"{second}-analysis"}
            note.delay("second")
            assert done.wait(30), "the second worker never ran its task"
        assert ran == ["first", "second"]
        assert _app_state(app) == before
    finally:
        app.tasks.pop("tests.celery_helpers.note", None)
