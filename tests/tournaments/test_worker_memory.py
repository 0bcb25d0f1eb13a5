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


def test_the_reaper_thread_empties_its_query_log_after_every_pass(settings) -> None:
    """The reaper is a thread of its own, not a task: nothing else ever empties its log."""
    from tournaments import tasks
    from tournaments.play import leases

    settings.DEBUG = True
    met: list[int] = []

    def reap() -> None:
        met.append(len(connection.queries_log))
        tasks.tables_reap()

    reaper = leases.Reaper(reap, interval_s=0.02).start()
    try:
        deadline = time.monotonic() + 30
        while len(met) < 6:
            assert time.monotonic() < deadline, "the reaper did not pass six times"
            time.sleep(0.02)
    finally:
        reaper.stop()
    # a pass meets at most what the bounded lock wait set before it, never the passes before
    assert len(set(met[:6])) == 1 and met[0] <= 1, met


def test_the_lease_keeper_empties_its_query_log_after_every_round_of_renewals(settings) -> None:
    """The keeper's thread renews the leases of every table the process plays, for as long
    as the process lives: each round of renewals must start with an empty log."""
    from django.db import transaction
    from django.utils import timezone

    from tests.tournaments.conftest import running_round_robin
    from tournaments.models import Table
    from tournaments.play.leases import TableLease
    from tournaments.play.lifecycle import LeaseTimes, table_start

    settings.DEBUG = True
    staff = User.objects.create_user("house", is_staff=True)
    organiser = User.objects.create_user("organiser", is_staff=True)
    bots = [bot_create(owner=staff, name=f"house-{i}", house_bot="random")[0] for i in range(4)]
    table = running_round_robin(organiser, bots, seats_per_table=4).tables.get()
    met: list[int] = []

    class Recorded(TableLease):
        def renew(self) -> bool:
            met.append(len(connection.queries_log))
            return super().renew()

    times = LeaseTimes(lease_s=1.0, renew_s=0.05, reap_s=0)
    with Recorded(table.pk, times=times) as lease:
        with transaction.atomic():
            locked = Table.objects.select_for_update().get(pk=table.pk)
            assert table_start(table=locked, now=timezone.now(), owner=lease.owner, lease_s=times.lease_s)
        lease.keep()
        deadline = time.monotonic() + 30
        while len(met) < 6:
            assert time.monotonic() < deadline, "the lease was not renewed six times"
            time.sleep(0.02)
    assert lease.renewals >= 5, "the renewals failed: the test would prove nothing"
    assert met[:6] == [0] * 6, met
