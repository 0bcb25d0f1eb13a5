"""A worker's memory does not grow with the number of tasks it runs (issue 26, the soak).

With DEBUG on (the development default: the demo's and the soak's workers) Django logs
every query of a connection in `queries_log` (up to 9,000, each with its SQL) and only a
web request's start empties it; a worker's thread keeps its connection from task to task,
so the log grew with every task until the 20-minute soak's workers had grown by 6-8 MB a
minute. A real worker plays a round robin of house-bot tables through a real referee, with
DEBUG on: every task must start with an empty log, the last no fuller than the first.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from celery.signals import task_postrun, task_prerun
from django.contrib.auth.models import User
from django.db import connection

from tests.celery_helpers import isolated_celery_worker
from tests.platform_referee import platform_referee
from tournaments.models import Tournament
from tournaments.services.accounts import bot_create
from tournaments.services.tournaments import (
    tournament_create,
    tournament_entrant_add,
    tournament_start,
)

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def logs(settings) -> Iterator[list[tuple[str, str, int]]]:
    """(task, "start" or "end", queries in the log) of every task the worker runs, read
    in the worker's thread. Connected after tournaments.tasks' own task_prerun handler,
    so "start" is what a task meets after it."""
    settings.DEBUG = True
    seen: list[tuple[str, str, int]] = []

    def at_start(task=None, **_: object) -> None:
        seen.append((task.name, "start", len(connection.queries_log)))

    def at_end(task=None, **_: object) -> None:
        seen.append((task.name, "end", len(connection.queries_log)))

    task_prerun.connect(at_start, weak=False)
    task_postrun.connect(at_end, weak=False)
    try:
        yield seen
    finally:
        task_prerun.disconnect(at_start)
        task_postrun.disconnect(at_end)


def test_a_worker_starts_every_task_with_an_empty_query_log(settings, logs) -> None:
    staff = User.objects.create_user("house", is_staff=True)
    organiser = User.objects.create_user("organiser", is_staff=True)
    bots = [bot_create(owner=staff, name=f"house-{i}", house_bot=kind)[0]
            for i, kind in enumerate(["random", "greedy", "heuristic", "random", "greedy"])]
    tournament = tournament_create(organiser=organiser, name="Memory cup", format="round_robin",
                                   seats_per_table=4, duplicate_sets=1)
    for bot in bots:
        tournament_entrant_add(tournament=tournament, bot=bot)
    # one worker thread runs every task, keeping its connection (and its log) between them
    with platform_referee(settings), isolated_celery_worker(concurrency=1):
        tournament_start(tournament=tournament)
        deadline = time.monotonic() + 240
        while Tournament.objects.get(pk=tournament.pk).status != Tournament.Status.FINISHED:
            assert time.monotonic() < deadline, "the round robin did not finish"
            time.sleep(0.2)
    tables = [n for t, at, n in logs if t.endswith("table_play_task") and at == "end"]
    assert len(tables) >= 5, logs  # (5,4,3) design: 5 tables, one task each
    assert min(tables) > 0, "DEBUG's query log was off: the test would prove nothing"
    assert [n for _, at, n in logs if at == "start"] == [0] * (len(logs) // 2), logs
    # what a table's task leaves in the log is its own queries, not those of every task before it
    assert tables[-1] < 2 * tables[0], tables
