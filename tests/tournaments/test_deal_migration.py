"""Migrations 0006-0008 move existing tournaments to deals as rows without losing a game."""

from __future__ import annotations

import hashlib

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

pytestmark = pytest.mark.django_db(transaction=True)

BEFORE = [("tournaments", "0005_table_games_rated")]
AFTER = [("tournaments", "0008_deals_required")]


def migrate(targets):
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)
    return executor.loader.project_state(targets).apps


@pytest.fixture(autouse=True)
def _back_to_the_latest_migrations():
    """Leave the test database fully migrated: later tests use the current models."""
    yield
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(executor.loader.graph.leaf_nodes())


def test_existing_games_get_revealed_deals_and_unplayed_ones_fresh_secrets() -> None:
    old = migrate(BEFORE)
    try:
        User = old.get_model("auth", "User")
        Bot, Tournament = old.get_model("tournaments", "Bot"), old.get_model("tournaments", "Tournament")
        Entrant, Table = old.get_model("tournaments", "Entrant"), old.get_model("tournaments", "Table")
        TableSeat, Game = old.get_model("tournaments", "TableSeat"), old.get_model("tournaments", "Game")
        user = User.objects.create(username="org")
        bots = [Bot.objects.create(owner=user, name=f"b{i}") for i in range(4)]
        # A running duplicate-set round robin: table 1 finished, table 2 half played.
        t = Tournament.objects.create(name="Old", slug="old", organiser=user, format="round_robin",
                                      status="running", seed="public-seed", duplicate_sets=2)
        entrants = [Entrant.objects.create(tournament=t, bot=b) for b in bots]
        for number, (status, played) in enumerate([("done", 8), ("running", 5)], start=1):
            table = Table.objects.create(tournament=t, round=1, number=number, seed=f"public-seed/r1/t{number}",
                                         status=status, games_planned=8, games_recorded=played)
            for s, e in enumerate(entrants):
                TableSeat.objects.create(table=table, seat=s, entrant=e)
            for i in range(played):
                Game.objects.create(table=table, index=i, seed=f"{table.seed}/set/{i // 4}", players=4)
        # An independent-games ladder (games_per_table) with one game played.
        lad = Tournament.objects.create(name="Lad", slug="lad", organiser=user, format="ladder",
                                        status="running", seed="s2", duplicate_sets=0, games_per_table=3)
        lt = Table.objects.create(tournament=lad, round=1, number=1, seed="s2/r1/t1", status="running",
                                  games_planned=3, games_recorded=1)
        Game.objects.create(table=lt, index=0, seed="s2/r1/t1/game/0", players=2)
    finally:
        new = migrate(AFTER)
    Tournament, Table = new.get_model("tournaments", "Tournament"), new.get_model("tournaments", "Table")
    Deal, Game = new.get_model("tournaments", "Deal"), new.get_model("tournaments", "Game")
    t, lad = Tournament.objects.get(slug="old"), Tournament.objects.get(slug="lad")
    assert (t.deal_format, lad.deal_format) == ("rotation", "independent")
    assert t.organiser_seed == "" and len(t.salt) == 32 and t.salt != lad.salt
    t1, t2 = Table.objects.filter(tournament=t).order_by("number")
    assert (t1.deal_group, t2.deal_group) == (1, 2)
    # Played deals keep their (already public) seeds and are revealed.
    d = {(x.group, x.index): x for x in Deal.objects.filter(tournament=t)}
    assert d[(1, 0)].seed == "public-seed/r1/t1/set/0" and d[(1, 1)].revealed_at is not None
    assert d[(1, 0)].commitment == hashlib.sha256(
        f"tienlen-deal-commit-v1\n{t.salt}\n{d[(1, 0)].seed}".encode()).hexdigest()
    assert Game.objects.filter(table=t2, index=4).get().deal_id == d[(2, 1)].pk
    assert d[(2, 1)].seed == "public-seed/r1/t2/set/1"  # set 1 was under way: its seed stays
    assert Game.objects.filter(deal__isnull=True).count() == 0 and Game.objects.count() == 14
    # The ladder's unplayed games get fresh secret deals, not revealed.
    ld = {x.index: x for x in Deal.objects.filter(tournament=lad)}
    assert ld[0].seed == "s2/r1/t1/game/0" and ld[0].revealed_at is not None
    assert {ld[1].revealed_at, ld[2].revealed_at} == {None}
    assert len(ld[1].seed) == 32 and "s2" not in ld[1].seed
