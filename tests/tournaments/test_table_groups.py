"""Groups of tables (tournaments.tasks.tables_play_task, tournaments.play.attempt.tables_attempt):
a start enqueues its tables in groups, one worker process streams a group's tables at once,
and every guarantee of a table's own task holds for each table of a group: each game
recorded once (a redelivered group plays nothing twice), a table held by another live
attempt left to it, a table that cannot be played now handed its own retry with its lease
freed. On real rows, against a real referee on a loopback port (house bots)."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest
from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from tests.platform_referee import platform_referee
from tests.tournaments.conftest import running_round_robin
from tournaments import jobs, tasks
from tournaments.jobs import Job
from tournaments.models import Game, RatingChange, Table, Tournament
from tournaments.play.attempt import tables_threads_stop
from tournaments.play.lifecycle import table_start
from tournaments.services.accounts import bot_create
from tournaments.services.tournaments import (
    tournament_create,
    tournament_entrant_add,
    tournament_start,
)

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def house(db) -> list:
    staff = User.objects.create_user("house-staff", is_staff=True)
    kinds = ("greedy", "heuristic", "random")
    return [bot_create(owner=staff, name=f"house{i}", house_bot=kinds[i % 3])[0] for i in range(8)]


@pytest.fixture
def referee(settings) -> Iterator[str]:
    with platform_referee(settings) as thread:
        yield thread.target


@pytest.fixture(autouse=True)
def _table_threads() -> Iterator[None]:
    yield
    tables_threads_stop()  # the group's threads and their connections (the leak check)


@pytest.fixture
def retries(monkeypatch) -> list[tuple]:
    """The tasks a group hands its tables to, captured instead of sent."""
    sent: list[tuple] = []
    monkeypatch.setattr(tasks.table_play_task, "apply_async",
                        lambda args, kwargs=None, countdown=None, **_: sent.append((args[0], kwargs, countdown)))
    return sent


def test_a_start_enqueues_its_tables_in_groups_of_the_setting(organiser, house, settings) -> None:
    sent: list = []
    previous = jobs._runners[Job.PLAY_TABLE], jobs._runners[Job.PLAY_TABLES]
    jobs.provide(Job.PLAY_TABLE, lambda table_id: sent.append(("one", table_id)))
    jobs.provide(Job.PLAY_TABLES, lambda table_ids: sent.append(("group", tuple(table_ids))))
    try:
        for per_task in (8, 1):
            settings.TIENLEN_TABLES_PER_TASK = per_task
            sent.clear()
            tournament = tournament_create(organiser=organiser, name=f"cup {per_task}", format="round_robin",
                                           seats_per_table=4, allow_same_owner=True)
            for bot in house:
                tournament_entrant_add(tournament=tournament, bot=bot)
            tournament_start(tournament=tournament)
            ids = list(Table.objects.filter(tournament=tournament).order_by("id").values_list("id", flat=True))
            assert len(ids) == 14
            if per_task == 8:  # two tasks: eight tables, then six
                assert sent == [("group", tuple(ids[:8])), ("group", tuple(ids[8:]))]
            else:  # a task per table
                assert sent == [("one", t) for t in ids]
    finally:
        jobs.provide(Job.PLAY_TABLE, previous[0])
        jobs.provide(Job.PLAY_TABLES, previous[1])


def test_a_group_plays_all_its_tables_and_a_copy_of_it_records_nothing_twice(organiser, house, referee,
                                                                               retries) -> None:
    tournament = running_round_robin(organiser, house, seats_per_table=4, allow_same_owner=True)
    ids = list(tournament.tables.order_by("id").values_list("id", flat=True))
    assert tasks.tables_play_task.apply((ids[:8],)).get() == {"recorded 4 games": 8}
    assert tasks.tables_play_task.apply((ids[8:],)).get() == {"recorded 4 games": 6}
    assert Tournament.objects.get(pk=tournament.pk).status == Tournament.Status.FINISHED
    # A copy of a group (the broker redelivering it): nothing is played or recorded again.
    assert tasks.tables_play_task.apply((ids[:8],)).get() == {"nothing to play": 8}
    games = Game.objects.filter(table__tournament=tournament)
    assert games.count() == 14 * 4 == len(set(games.values_list("table_id", "index")))
    assert RatingChange.objects.filter(game__table__tournament=tournament).count() == 4 * 56
    assert set(Table.objects.filter(pk__in=ids).values_list("status", "attempts")) == {("done", 1)}
    assert retries == []


def test_a_table_held_by_another_live_attempt_is_left_to_it_and_the_others_play(organiser, house, referee,
                                                                                retries) -> None:
    tournament = running_round_robin(organiser, house, seats_per_table=4, allow_same_owner=True)
    ids = list(tournament.tables.order_by("id").values_list("id", flat=True))[:4]
    with transaction.atomic():
        held = Table.objects.select_for_update().get(pk=ids[0])
        assert table_start(table=held, now=timezone.now(), owner="worker-a", lease_s=30)
    said = tasks.tables_play_task.apply((ids,)).get()
    assert said == {"played by another worker": 1, "recorded 4 games": 3}
    row = Table.objects.get(pk=ids[0])
    assert (row.status, row.lease_owner, row.games_recorded) == ("running", "worker-a", 0)
    assert set(Table.objects.filter(pk__in=ids[1:]).values_list("status", flat=True)) == {"done"}
    assert retries == []


def test_tables_a_group_cannot_play_now_get_their_own_retry_with_the_lease_freed(organiser, house, settings,
                                                                                 retries) -> None:
    tournament = running_round_robin(organiser, house, seats_per_table=4, allow_same_owner=True)
    ids = list(tournament.tables.order_by("id").values_list("id", flat=True))[:3]
    settings.REFEREE_TARGET = "127.0.0.1:9"  # no referee there, and no pool
    said = tasks.tables_play_task.apply((ids,)).get()
    assert said == {"retrying": 3}
    assert sorted(table_id for table_id, _, _ in retries) == ids  # each its own task, with a backoff
    assert all(countdown and countdown > 0 for _, _, countdown in retries)
    rows = Table.objects.filter(pk__in=ids)
    assert set(rows.values_list("status", "lease_owner", "games_recorded")) == {("waiting", "", 0)}
    assert all(r.last_error for r in rows)


def _rated_in_plan_order(tournament) -> None:
    """Every planned game of the tournament recorded once and rated once, in plan order."""
    games = Game.objects.filter(table__tournament=tournament)
    planned = sum(Table.objects.filter(tournament=tournament).values_list("games_planned", flat=True))
    assert games.count() == planned == len(set(games.values_list("table_id", "index")))
    assert RatingChange.objects.filter(game__table__tournament=tournament).count() == 4 * planned
    seqs = list(games.order_by("table__round", "table__number", "index").values_list("rating_seq", flat=True))
    assert None not in seqs and seqs == sorted(seqs)


def test_a_group_streams_the_setting_s_number_of_tables_at_a_time_each_on_its_own_lease(
        organiser, house, referee, retries, settings, monkeypatch) -> None:
    """Two at a time (TIENLEN_GROUP_THREADS): the next table starts while the last one is
    still playing or recording, never a third; each attempt its own lease; the tables taken
    in the group's order; every game recorded once and rated in plan order."""
    settings.TIENLEN_GROUP_THREADS = 2
    tournament = running_round_robin(organiser, house, seats_per_table=4, allow_same_owner=True)
    ids = list(tournament.tables.order_by("id").values_list("id", flat=True))
    lock = threading.Lock()
    playing: set[int] = set()
    most, started, owners = [0], [], {}
    overlapped = threading.Event()
    real = tasks.table_attempt

    def attempt(table_id, *, lease, **kwargs):
        with lock:
            playing.add(table_id)
            most[0] = max(most[0], len(playing))
            started.append(table_id)
            owners[table_id] = lease.owner
            if len(playing) > 1:
                overlapped.set()
        try:
            if table_id == ids[0]:  # the first table is still playing when the second starts
                overlapped.wait(timeout=20)
            return real(table_id, lease=lease, **kwargs)
        finally:
            with lock:
                playing.discard(table_id)

    monkeypatch.setattr(tasks, "table_attempt", attempt)
    assert tasks.tables_play_task.apply((ids[:8],)).get() == {"recorded 4 games": 8}
    assert tasks.tables_play_task.apply((ids[8:],)).get() == {"recorded 4 games": 6}
    assert overlapped.is_set() and most[0] == 2
    assert sorted(started) == ids and len(set(owners.values())) == len(ids)
    assert all(started.index(t) <= i + 1 for i, t in enumerate(ids))  # in the group's order, two at a time
    assert Tournament.objects.get(pk=tournament.pk).status == Tournament.Status.FINISHED
    _rated_in_plan_order(tournament)
    assert retries == []


def test_a_group_table_taken_over_mid_play_is_fenced_by_its_own_lease_and_the_others_play_on(
        organiser, house, referee, retries, settings, monkeypatch) -> None:
    """The overlapped tables are fenced each by its own lease: a table whose lease is taken
    over (presumed dead) while the group plays records nothing and does not close, its
    neighbours in the group record and close as usual, and the attempt that took it over
    plays it to the end: nothing lost, nothing doubled."""
    from tournaments.play import attempt as attempt_module
    from tournaments.play.lifecycle import table_lease_break

    settings.TIENLEN_GROUP_THREADS = 2
    tournament = running_round_robin(organiser, house, seats_per_table=4, allow_same_owner=True)
    ids = list(tournament.tables.order_by("id").values_list("id", flat=True))
    real = attempt_module.table_games_record

    def record(*, table_id, lease_owner, **kwargs):
        if table_id == ids[1]:  # a reaper presumed this attempt dead just before its batch
            assert table_lease_break(table_id=table_id, owner=lease_owner)
        return real(table_id=table_id, lease_owner=lease_owner, **kwargs)

    monkeypatch.setattr(attempt_module, "table_games_record", record)
    assert tasks.tables_play_task.apply((ids[:3],)).get() == {"recorded 4 games": 2, "lease lost": 1}
    taken = Table.objects.get(pk=ids[1])
    assert taken.status != Table.Status.DONE and taken.games_recorded == 0
    assert not Game.objects.filter(table_id=ids[1]).exists()
    assert set(Table.objects.filter(pk__in=[ids[0], ids[2]]).values_list("status", flat=True)) == {"done"}
    monkeypatch.setattr(attempt_module, "table_games_record", real)
    assert tasks.table_play_task.apply((ids[1],)).get() == "recorded 4 games"  # the reaper's re-enqueue
    assert tasks.tables_play_task.apply((ids[3:],)).get() == {"recorded 4 games": 11}
    _rated_in_plan_order(tournament)
    assert retries == []


def test_a_worker_killed_mid_group_leaves_every_table_to_be_resumed_and_nothing_doubled(
        organiser, house, referee, retries, settings) -> None:
    """The state a worker killed mid-group leaves (its first table closed, the second
    mid-play under a dead process's lease, the rest never started: they waited in the
    process, not in the broker): the never-started tables are claimed as lost by the
    reaper (`tables_claim_lost`), the half-played one is taken over at once by the group's
    redelivered copy, and that copy plays only what is left."""
    import subprocess
    import sys

    from tournaments.play import lifecycle

    settings.TIENLEN_GROUP_THREADS = 2
    tournament = running_round_robin(organiser, house, seats_per_table=4, allow_same_owner=True)
    ids = list(tournament.tables.order_by("id").values_list("id", flat=True))
    group = ids[:5]
    assert tasks.tables_play_task.apply((group[:1],)).get() == {"recorded 4 games": 1}
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    with transaction.atomic():
        mid = Table.objects.select_for_update().get(pk=group[1])
        assert table_start(table=mid, now=timezone.now(), owner=f"{lifecycle._HOST}:{gone.pid}:dead", lease_s=30)
    assert sorted(lifecycle.tables_claim_lost(older_than_s=0)) == [t for t in ids if t not in group[:2]]
    said = tasks.tables_play_task.apply((group,)).get()
    assert said == {"nothing to play": 1, "recorded 4 games": 4}
    assert tasks.tables_play_task.apply((ids[5:],)).get() == {"recorded 4 games": 9}
    assert set(Table.objects.filter(pk__in=ids).values_list("status", flat=True)) == {"done"}
    assert Table.objects.get(pk=group[1]).attempts == 2  # the dead attempt, then the copy's
    assert set(Table.objects.exclude(pk=group[1]).filter(pk__in=ids).values_list("attempts", flat=True)) == {1}
    _rated_in_plan_order(tournament)
    assert retries == []


def test_a_pool_that_cannot_be_read_leaves_each_table_to_its_own_attempt(monkeypatch) -> None:
    """A group's table starting while the pool cannot be read (the database down) is
    handed no view: its attempt reads the pool again and meets the error in its own plan,
    mapped to its own retry, instead of the group failing the table unattempted."""
    from django.db import OperationalError

    from tournaments.play import attempt as attempt_module
    from tournaments.play import routing

    def down() -> routing.PoolView:
        raise OperationalError("the database is restarting")

    monkeypatch.setattr(routing.PoolView, "recent", staticmethod(down))
    seen: list = []
    results = attempt_module.tables_attempt([1, 2, 3], play=lambda t, pool: seen.append((t, pool)) or t, at_once=2)
    assert results == {1: 1, 2: 2, 3: 3} and sorted(seen) == [(1, None), (2, None), (3, None)]
