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

from tests.tournaments.conftest import make_result, running_round_robin
from tournaments.models import Game, RatingChange, Table
from tournaments.services.recording import table_games_record
from tournaments.services.tables import table_complete, table_plan

pytestmark = pytest.mark.django_db

#: Planning a table (its first attempt): lock, start, seats, deal seeds (+ BEGIN/COMMIT).
PLAN_QUERIES = 6
#: Recording a batch of games, whatever its size, rating whatever became due.
RECORD_QUERIES = 20
#: Closing a table: its results, the reveal, the ratings it lets through, what follows.
COMPLETE_QUERIES = 12


def _order(table_number: int, index: int) -> list[int]:
    start = (table_number + index) % 4
    return [start, (start + 1) % 4, (start + 2) % 4, (start + 3) % 4]


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
    # Every game recorded once and rated once, in plan order.
    assert Game.objects.filter(table__tournament=tournament).count() == 56
    assert RatingChange.objects.filter(game__table__tournament=tournament).count() == 4 * 56
    seqs = list(
        Game.objects.filter(table__tournament=tournament)
        .order_by("table__round", "table__number", "index").values_list("rating_seq", flat=True)
    )
    assert seqs == sorted(seqs) and None not in seqs
    assert all(t.status == Table.Status.DONE for t in tournament.tables.all())
    assert worst["plan"] <= PLAN_QUERIES, worst
    assert worst["record"] <= RECORD_QUERIES, worst
    assert worst["complete"] <= COMPLETE_QUERIES, worst
