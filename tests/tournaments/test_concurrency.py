"""Concurrent workers recording into one rating pool never lose or reorder an update."""

from __future__ import annotations

import io
import random
import threading
from collections import defaultdict

import pytest
from django.core.management import call_command
from django.db import connections

from tests.needs import need_postgresql
from tests.tournaments.conftest import make_result, running_round_robin
from tournaments.models import Rating, RatingChange, RatingPool
from tournaments.services.recording import table_game_record

pytestmark = pytest.mark.django_db(transaction=True)


def test_parallel_recording_keeps_one_total_order(organiser, bots) -> None:
    need_postgresql("row locks; SQLite serialises writers anyway")
    tournament = running_round_robin(organiser, bots, seats_per_table=4)
    tables = list(tournament.tables.all())
    errors: list[BaseException] = []

    def record(chunk) -> None:
        rng = random.Random(chunk[0].pk)
        try:
            for table in chunk:
                for i in range(table.games_planned):
                    order = [0, 1, 2, 3]
                    rng.shuffle(order)
                    result = make_result(i, order, [(s + i) % 4 for s in range(4)])
                    table_game_record(table_id=table.pk, result=result)
                    table_game_record(table_id=table.pk, result=result)  # a retry
        except BaseException as exc:  # reported below
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=record, args=(tables[i::4],)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors, errors
    pool = RatingPool.objects.get(preset="south", seats=4)
    total_games = sum(t.games_planned for t in tables)
    assert pool.games_rated == total_games
    seqs = sorted(set(RatingChange.objects.values_list("seq", flat=True)))
    assert seqs == list(range(1, total_games + 1))
    # Each bot's history is an unbroken chain: every update started from the previous one.
    chains = defaultdict(list)
    for bot_id, before, after in RatingChange.objects.order_by("seq").values_list("bot_id", "rating_before", "rating_after"):
        chains[bot_id].append((before, after))
    final = dict(Rating.objects.values_list("bot_id", "rating"))
    for bot_id, chain in chains.items():
        assert chain[0][0] == 1500.0
        assert all(chain[i][1] == chain[i + 1][0] for i in range(len(chain) - 1))
        assert chain[-1][1] == final[bot_id]
    out = io.StringIO()
    call_command("recompute_ratings", "--check", stdout=out)
    assert "max difference 0" in out.getvalue()
