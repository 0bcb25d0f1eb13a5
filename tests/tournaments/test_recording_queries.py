"""The worker's database round trips per table, pinned: the pipeline keeps up with its
referee only while a table costs a fixed handful of queries (benchmarks/pipeline_bench.py).

An 8-bot rated round robin at the default table size (4 games, field deals: two tables
share each deal, so a table's games wait for its partner's before they are rated) is
played table by table through the worker's services, the way `table_play_task` calls them.
"""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from tests.needs import need_postgresql
from tests.tournaments.conftest import make_result, running_round_robin
from tournaments.models import Game, RatingChange, Table
from tournaments.services.recording import table_games_record
from tournaments.services.tables import LastBatchClose, table_complete, table_plan

pytestmark = pytest.mark.django_db

#: Planning a table (its first attempt): lock, start, seats, deal seeds (+ BEGIN/COMMIT).
PLAN_QUERIES = 6
#: Recording a batch of games, whatever its size, rating whatever became due.
RECORD_QUERIES = 20
#: Closing a table: its results, the reveal, the ratings it lets through, what follows.
COMPLETE_QUERIES = 12
#: The table's last batch recorded and the table closed in one transaction
#: (`LastBatchClose`), against 17 + 12 for a batch and a close apart: the close's own
#: BEGIN, tournament lock, table read and COMMIT are gone.
RECORD_LAST_QUERIES = 23


def _order(table_number: int, index: int) -> list[int]:
    start = (table_number + index) % 4
    return [start, (start + 1) % 4, (start + 2) % 4, (start + 3) % 4]


def every_game_once_rated_in_plan_order(tournament) -> None:
    """The 8-bot round robin's 56 games each recorded once and rated once, in plan order."""
    assert Game.objects.filter(table__tournament=tournament).count() == 56
    assert RatingChange.objects.filter(game__table__tournament=tournament).count() == 4 * 56
    seqs = list(
        Game.objects.filter(table__tournament=tournament)
        .order_by("table__round", "table__number", "index").values_list("rating_seq", flat=True)
    )
    assert seqs == sorted(seqs) and None not in seqs


@pytest.mark.parametrize("batch", [1, 4], ids=["a game per batch", "the table in one batch"])
def test_a_table_costs_a_fixed_number_of_queries(organiser, bots, batch) -> None:
    tournament = running_round_robin(organiser, bots, seats_per_table=4)
    tables = list(tournament.tables.order_by("round", "number"))
    assert len(tables) == 14 and all(t.games_planned == 4 for t in tables)
    worst = {"plan": 0, "record": 0, "complete": 0}
    for table in tables:
        with CaptureQueriesContext(connection) as plan_queries:
            plan = table_plan(table_id=table.pk)
        assert plan is not None and plan.first_game_index == 0
        worst["plan"] = max(worst["plan"], len(plan_queries))
        results = [make_result(i, _order(table.number, i)) for i in range(4)]
        for start in range(0, 4, batch):
            with CaptureQueriesContext(connection) as record_queries:
                recorded = table_games_record(table_id=table.pk, results=results[start:start + batch])
            assert len(recorded) == len(results[start:start + batch])
            worst["record"] = max(worst["record"], len(record_queries))
        with CaptureQueriesContext(connection) as complete_queries:
            table_complete(table_id=table.pk)
        worst["complete"] = max(worst["complete"], len(complete_queries))
    tournament.refresh_from_db()
    assert tournament.status == "finished"
    every_game_once_rated_in_plan_order(tournament)
    assert all(t.status == Table.Status.DONE for t in tournament.tables.all())
    assert worst["plan"] <= PLAN_QUERIES, worst
    assert worst["record"] <= RECORD_QUERIES, worst
    assert worst["complete"] <= COMPLETE_QUERIES, worst


def test_noting_the_versions_of_a_tables_bots_costs_one_query_when_nothing_changed(bots) -> None:
    from tournaments.models import BotVersion
    from tournaments.services.accounts import bot_versions_note

    ids = [b.pk for b in bots[:4]]
    connected = {str(b): "v1" for b in ids}
    bot_versions_note(connected=connected, bot_ids=ids)
    with CaptureQueriesContext(connection) as queries:
        bot_versions_note(connected=connected, bot_ids=ids)
    assert len(queries) == 1
    assert BotVersion.objects.filter(bot_id__in=ids).count() == 4

    def current(bot_id: int) -> str:
        return BotVersion.objects.filter(bot_id=bot_id).order_by("-first_seen_at", "-id").first().version

    # One bot reconnects with a new version, then goes back to the old one: each becomes
    # the version its next games are recorded under.
    bot_versions_note(connected={**connected, str(ids[0]): "v2"}, bot_ids=ids)
    assert current(ids[0]) == "v2" and current(ids[1]) == "v1"
    bot_versions_note(connected=connected, bot_ids=ids)
    assert current(ids[0]) == "v1"
    assert BotVersion.objects.filter(bot_id=ids[0]).count() == 2


@pytest.mark.django_db(transaction=True)
def test_a_baselines_task_skips_the_deals_another_task_is_computing(organiser, house_bots) -> None:
    """Recording enqueues a baselines task after every batch that reveals deals: tasks
    running at once split the deals between them instead of each simulating all of them."""
    import threading

    need_postgresql("the tasks skip each other's deals with row locks (SELECT ... SKIP LOCKED)")

    from django.db import transaction

    from tournaments.models import Deal
    from tournaments.services.recording import deal_baselines_compute

    tournament = running_round_robin(organiser, house_bots, seats_per_table=4)  # groups of 2 tables
    first = tournament.tables.order_by("round", "number").first()
    partner = tournament.tables.filter(deal_group=first.deal_group).exclude(pk=first.pk).get()
    for table in (first, partner):  # both tables of the group: its 4 deals are revealed
        table_games_record(table_id=table.pk, results=[make_result(i, [0, 1, 2, 3]) for i in range(4)])
    deals = list(Deal.objects.filter(tournament=tournament, group=first.deal_group).order_by("index"))
    assert all(d.revealed_at is not None and d.baseline is None for d in deals)
    held, release = threading.Event(), threading.Event()

    def other_task() -> None:  # holds deal 0 as a concurrent task computing it would
        with transaction.atomic():
            list(Deal.objects.select_for_update().filter(pk=deals[0].pk))
            held.set()
            release.wait(30)
        connection.close()

    thread = threading.Thread(target=other_task)
    thread.start()
    try:
        assert held.wait(30)
        assert deal_baselines_compute(tournament_id=tournament.pk) == 3
    finally:
        release.set()
        thread.join()
    assert [d.baseline is not None for d in Deal.objects.filter(pk__in=[d.pk for d in deals]).order_by("index")] == [
        False, True, True, True]
    assert deal_baselines_compute(tournament_id=tournament.pk) == 1  # once it is free again
    assert deal_baselines_compute(tournament_id=tournament.pk) == 0


def test_the_last_batch_and_the_close_share_one_transaction(organiser, bots) -> None:
    """The worker records a table's last games and closes it in one transaction (the
    referee completed the table): fewer queries than a batch and a close apart, with the
    same outcome: every game recorded and rated once in plan order, the tournament over."""
    tournament = running_round_robin(organiser, bots, seats_per_table=4)
    tables = list(tournament.tables.order_by("round", "number"))
    worst = 0
    for table in tables:
        assert table_plan(table_id=table.pk) is not None
        results = [make_result(i, _order(table.number, i)) for i in range(4)]
        table_games_record(table_id=table.pk, results=results[:1])
        close = LastBatchClose()
        with CaptureQueriesContext(connection) as queries:
            recorded = table_games_record(table_id=table.pk, results=results[1:], then=close)
        steps = close.steps
        assert len(recorded) == 3 and steps is not None
        assert Table.objects.get(pk=table.pk).status == Table.Status.DONE
        worst = max(worst, len(queries))
        begins = [q["sql"] for q in queries.captured_queries if q["sql"].upper().startswith(("BEGIN", "COMMIT"))]
        assert len(begins) <= 2, begins  # one transaction (a savepoint-free one)
    tournament.refresh_from_db()
    assert tournament.status == "finished" and steps.tournament_finished
    every_game_once_rated_in_plan_order(tournament)
    assert worst <= RECORD_LAST_QUERIES, worst


def test_a_taken_over_attempt_neither_records_nor_closes_its_last_batch(organiser, bots) -> None:
    """The lease fences the close with the batch: an attempt whose lease was claimed
    leaves its table open, its last games unrecorded, for the attempt that took it over."""
    from tournaments.play.lifecycle import LeaseLost, table_lease_break

    tournament = running_round_robin(organiser, bots, seats_per_table=4)
    table = tournament.tables.order_by("round", "number").first()
    assert table_plan(table_id=table.pk, lease_owner="old") is not None
    assert table_lease_break(table_id=table.pk, owner="old")
    close = LastBatchClose()
    with pytest.raises(LeaseLost):
        table_games_record(table_id=table.pk, results=[make_result(i, _order(table.number, i)) for i in range(4)],
                           lease_owner="old", then=close)
    assert close.steps is None
    table.refresh_from_db()
    assert table.status == Table.Status.RUNNING and table.games_recorded == 0
    assert not Game.objects.filter(table=table).exists()
