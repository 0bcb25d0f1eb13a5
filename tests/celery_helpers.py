"""A real Celery worker for tests, on a private queue, that leaves the Celery app as it found it.

`tienlen_site.celery.app` is process-global, so whatever one test changes on it the next
test in the session inherits. The trap this module exists for: `app.amqp.queues` is built
once and cached, and a worker started with `queues=[name]` *selects* that queue on it
(`Queues._consume_from`). A later worker started without `queues=` selects nothing, so
it kept consuming the previous test's private queue, while `task_default_queue` (restored
to "celery") sent the new tasks elsewhere: nothing ever ran them. Hence one helper that
always names its queue for both sending and consuming and restores every piece of app
state it touches: broker URL (and the `CELERY_BROKER_URL` variable, which Celery reads
ahead of `app.conf.broker_url`), transport options, result backend, default queue, the
queue table and its selection, and the connection/producer pools.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from celery.signals import task_postrun

from tests.logsafe import preserved_logging
from tests.needs import unavailable

_MISSING = object()
_CONF_KEYS = ("broker_url", "broker_transport", "broker_transport_options", "result_backend", "task_default_queue")


def test_broker_url() -> str:
    """Redis from CELERY_BROKER_URL when set (as in CI), else an in-process transport.

    The filesystem broker of the dev settings is never used for tests: its spool directory
    is shared with any real worker on the machine.
    """
    url = os.environ.get("CELERY_BROKER_URL", "")
    if not url or url.startswith("filesystem"):
        return "memory://"
    if url.startswith("redis"):
        import redis

        try:
            redis.Redis.from_url(url, socket_connect_timeout=2).ping()
        except redis.RedisError as exc:
            unavailable(f"Redis at {url} is unreachable ({exc})")
    return url


test_broker_url.__test__ = False  # a helper, not a test pytest should collect


def _default_concurrency() -> int:
    from django.db import connection

    # SQLite's shared in-memory test database locks whole tables across threads: one task
    # at a time there; PostgreSQL gets two concurrent tables.
    return 1 if connection.vendor == "sqlite" else 2


@contextmanager
def isolated_celery_worker(*, pool: str = "threads", concurrency: int | None = None,
                           shutdown_timeout: float = 60.0, analysis: bool = True,
                           runner: bool = False, also: Sequence[str] = ()) -> Iterator[str]:
    """Run a real worker of `tienlen_site`'s app consuming only a fresh private queue.

    Tasks sent while inside (`.delay()` from any thread) go to that queue, so workers of
    other suites sharing the broker never take them and this worker never takes theirs.
    The analysis queue (settings.TIENLEN_ANALYSIS_QUEUE: the luck baselines) is a private
    one too, `<queue>-analysis`, which this worker also consumes unless `analysis=False`
    (a worker that only plays tables, as compose's `worker`). The runner queue
    (settings.TIENLEN_RUNNER_QUEUE: hosted bots) is `<queue>-runner`, consumed when
    `runner=True`. Yields the queue name. On
    exit the app and the setting are exactly as before, whatever order tests run in.
    """
    from celery.contrib.testing.worker import start_worker
    from django.conf import settings

    from tienlen_site.celery import app

    queues = app.amqp.queues  # built now, from the untouched configuration, if not yet
    saved_conf = {key: app.conf.get(key, _MISSING) for key in _CONF_KEYS}
    saved_env = os.environ.get("CELERY_BROKER_URL")
    saved_queues = dict(queues)
    saved_consume_from = None if queues._consume_from is None else dict(queues._consume_from)
    saved_default_consume_from = dict(queues._default_consume_from)
    saved_pool, saved_producer_pool = app._pool, app.amqp._producer_pool

    url = test_broker_url()
    broker_changed = app.conf.broker_url != url
    queue = f"test-{uuid.uuid4().hex[:12]}"
    saved_analysis = settings.TIENLEN_ANALYSIS_QUEUE
    saved_runner = settings.TIENLEN_RUNNER_QUEUE
    try:
        settings.TIENLEN_ANALYSIS_QUEUE = f"{queue}-analysis"
        settings.TIENLEN_RUNNER_QUEUE = f"{queue}-runner"
        consumed = [queue, *([settings.TIENLEN_ANALYSIS_QUEUE] if analysis else []),
                    *([settings.TIENLEN_RUNNER_QUEUE] if runner else []), *also]
        if broker_changed:
            if saved_env is not None:
                os.environ["CELERY_BROKER_URL"] = url
            app.conf.broker_url = url
            # The no-server settings name the filesystem transport itself, which would
            # win over `url`'s scheme: the worker then looked for a spool that is not there.
            app.conf.broker_transport = None
            app.conf.broker_transport_options = {}
            # Pools bound to the configured broker: new ones are made for `url` on demand
            # (kombu keeps them in its registry for the next test; `url` is only ever the
            # in-process transport here, so they hold no sockets).
            app._pool = None
            app.amqp._producer_pool = None
        app.conf.result_backend = None
        app.conf.task_default_queue = queue
        task_pools = []
        try:
            with preserved_logging(), start_worker(app, pool=pool, concurrency=concurrency or _default_concurrency(),
                              perform_ping_check=False, shutdown_timeout=shutdown_timeout,
                              queues=consumed) as worker:
                task_pools.append(worker.pool)
                yield queue
        finally:
            # start_worker ends the worker by terminating it, and celery's thread pool does
            # nothing on terminate (only on stop): its threads would wait for work for the
            # rest of the test process. Shut its executor down; a task still running ends.
            for task_pool in task_pools:
                executor = getattr(task_pool, "executor", None)
                if executor is not None:
                    executor.shutdown(wait=False, cancel_futures=True)
                    for thread in list(executor._threads):
                        thread.join(shutdown_timeout)
            # The threads a group of tables played on (tables_play_task) keep their
            # database connections for the next group: stopped with the worker.
            from tournaments.play.attempt import tables_threads_stop

            tables_threads_stop()
    finally:
        settings.TIENLEN_ANALYSIS_QUEUE = saved_analysis
        settings.TIENLEN_RUNNER_QUEUE = saved_runner
        _restore_conf(app.conf, saved_conf)
        if saved_env is None:
            os.environ.pop("CELERY_BROKER_URL", None)
        else:
            os.environ["CELERY_BROKER_URL"] = saved_env
        app._pool, app.amqp._producer_pool = saved_pool, saved_producer_pool
        _replace(queues, saved_queues)
        _replace(queues._default_consume_from, saved_default_consume_from)
        queues._consume_from = saved_consume_from


def _close_worker_thread_connections(**_kwargs: Any) -> None:
    """After each task in a worker's pool thread: close that thread's database connections.
    A thread pool's threads outlive the worker that made them (and hold their connection
    until collected), so the test database was still "being accessed by other users" when
    the suite dropped it. Never in the main thread (a test's own transaction is there)."""
    import threading

    from django.db import connections

    if threading.current_thread() is not threading.main_thread():
        connections.close_all()


# Connected for the whole run, not only inside a worker's block: a task still finishing
# when its test's worker stops (the pool's threads outlive it) closes its connection too.
task_postrun.connect(_close_worker_thread_connections, weak=False, dispatch_uid="tests-close-thread-connections")


def _restore_conf(conf: Any, saved: dict[str, Any]) -> None:
    for key, value in saved.items():
        if value is _MISSING:
            conf.pop(key, None)
        else:
            conf[key] = value


def _replace(mapping: dict, contents: dict) -> None:
    mapping.clear()
    mapping.update(contents)
