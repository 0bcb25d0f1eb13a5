"""The home page's "Games worth watching": never a game with no move (an instant win
declared on the deal has nothing to watch); eventful games that were played, longer first."""

from __future__ import annotations

import json
import zlib

import pytest
from django.core.cache import cache

from tests.tournaments.conftest import running_round_robin
from tests.tournaments.local_play import table_play_locally
from tournaments.models import Game

pytestmark = pytest.mark.django_db


def _rewrite(game: Game, change) -> None:
    data = json.loads(game.replay.decoded_text())
    change(data)
    game.replay.data = zlib.compress(json.dumps(data).encode())
    game.replay.save(update_fields=["data"])


def test_zero_move_instant_wins_are_not_worth_watching(client, organiser, house_bots) -> None:
    from web import queries

    t = running_round_robin(organiser, house_bots, seats_per_table=4, duplicate_sets=1)
    for table in t.tables.all():
        table_play_locally(table_id=table.pk)
    games = list(Game.objects.filter(table__tournament=t).select_related("replay").order_by("id"))
    # The two chop games are made from games that were played: a deal the house bots won
    # instantly has no move to keep, whatever its payments say.
    played = [g for g in games if json.loads(g.replay.decoded_text())["moves"]]
    instant = games[0]
    chop_short, chop_long = [g for g in played if g.pk != instant.pk][:2]

    def declared(data):
        data["moves"] = []
        data["result"]["instant_winner"] = 0

    def chop(data):
        # Far more than any game of random deals makes, so that these two head the list
        # (the home page shows six) whatever the deals were.
        data["result"]["payments"] = [{"payer": 1, "payee": 0, "points": 200, "reason": "chop"}]
        data["result"]["frozen"] = []
        data["result"]["instant_winner"] = None

    _rewrite(instant, declared)
    _rewrite(chop_short, lambda d: (chop(d), d.update(moves=d["moves"][:8])))
    _rewrite(chop_long, lambda d: (chop(d), d.update(moves=(d["moves"] * 20)[:120])))
    cache.clear()
    picked = [n["game_id"] for n in queries.notable_games(limit=50)]
    assert instant.pk not in picked
    assert picked.index(chop_long.pk) < picked.index(chop_short.pk)  # the longer game first
    home = client.get("/").content.decode()
    assert f"/games/{chop_long.pk}/" in home and f"/games/{instant.pk}/\"" not in home
    assert "120 moves" in home
