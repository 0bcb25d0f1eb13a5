"""What the public sees of deals (docs/fair-play.md): commitments before play, replays
withheld until a deal has been played at every table of its group, everything needed to
verify afterwards, and the label of a reproducible tournament on every page and response."""

from __future__ import annotations

import hashlib
import json

import pytest
from django.test import Client

from tests.tournaments.conftest import running_round_robin
from tests.tournaments.local_play import table_play_locally
from tournaments.models import Deal, Game, Table
from tournaments.services.accounts import bot_create
from tournaments.services.tables import table_complete

pytestmark = pytest.mark.django_db

WITHHELD = "withheld until this deal has been played at every table"
REPRODUCIBLE = "reproducible: deals known to the organiser"


@pytest.fixture
def anon() -> Client:
    return Client()


def commit(salt: str, seed: str) -> str:
    return hashlib.sha256(f"tienlen-deal-commit-v1\n{salt}\n{seed}".encode()).hexdigest()


def test_commitments_are_published_before_play_and_seeds_only_after(anon, organiser, bots) -> None:
    t = running_round_robin(organiser, bots[:5], seats_per_table=4, duplicate_sets=1, deal_format="independent")
    doc = anon.get(f"/api/v1/tournaments/{t.slug}/").json()
    assert doc["salt"] == t.salt and doc["commitment_scheme"] == "tienlen-deal-commit-v1"
    assert doc["deal_format"] == "independent" and doc["reproducible"] is False and doc["fair_play_notices"] == []
    assert "seed" not in doc and "organiser_seed" not in doc
    deals = anon.get(doc["deals"] + "?page_size=100").json()
    committed = {(d["group"], d["index"]): d for d in deals["results"]}
    assert len(committed) == deals["count"] == Deal.objects.filter(tournament=t).count() == 20
    for deal in Deal.objects.filter(tournament=t):
        row = committed[(deal.group, deal.index)]
        assert row["commitment"] == commit(t.salt, deal.seed) and row["seed"] is None
    tables = anon.get(f"/api/v1/tournaments/{t.slug}/tables/").json()["results"]
    assert {tb["deal_group"] for tb in tables} == {g for g, _ in committed}
    assert all("seed" not in tb for tb in tables)
    # The page lists the same commitments.
    html = anon.get(f"/tournaments/{t.slug}/deals/").content.decode()
    assert all(d["commitment"] in html for d in committed.values()) and html.count("sealed") >= 20
    assert "20</b> deals committed" in anon.get(f"/tournaments/{t.slug}/").content.decode()
    # Play one table out: its deals, and only those, are revealed.
    table = t.tables.order_by("number").first()
    table_play_locally(table_id=table.pk)
    revealed = anon.get(f"/api/v1/tournaments/{t.slug}/deals/?revealed=true").json()["results"]
    assert {(d["group"], d["seed"]) for d in revealed} == {
        (table.deal_group, d.seed) for d in Deal.objects.filter(tournament=t, group=table.deal_group)}
    sealed = anon.get(f"/api/v1/tournaments/{t.slug}/deals/?revealed=false&group={table.deal_group + 1}").json()
    assert sealed["count"] == 4 and all(d["seed"] is None for d in sealed["results"])


@pytest.mark.parametrize(("query", "field"), [("group=one", "group"), ("revealed=maybe", "revealed")])
def test_bad_deal_filters_are_400_naming_the_field(anon, organiser, bots, query, field) -> None:
    t = running_round_robin(organiser, bots[:4], seats_per_table=4)
    response = anon.get(f"/api/v1/tournaments/{t.slug}/deals/?{query}")
    assert response.status_code == 400 and field in response.json()


def shared_group_tables(t) -> tuple[Table, Table]:
    """Two tables of one deal group: the default format (field duplicates) plays each deal
    of a round at every table of the round when its bots are isolated (house bots)."""
    tables = list(t.tables.order_by("number"))
    a = tables[0]
    b = next(x for x in tables[1:] if x.deal_group == a.deal_group)
    return a, b


def test_a_replay_is_withheld_until_every_table_of_its_group_played_the_deal(anon, organiser, bots, house_bots) -> None:
    t = running_round_robin(organiser, house_bots, seats_per_table=4, duplicate_sets=1)
    a, b = shared_group_tables(t)
    table_play_locally(table_id=a.pk, games=1)
    game = Game.objects.get(table=a, index=0)
    hands = json.dumps(json.loads(game.replay.decoded_text())["hands"][0])
    seed = game.deal.seed
    # Every public road to the game answers clearly, never a 500, never the hands, and
    # not its result either: the result is sealed with the replay.
    for url in [f"/api/v1/games/{game.pk}/", f"/api/v1/games/{game.pk}/replay/", f"/api/v1/games/{game.pk}/proof/",
                f"/games/{game.pk}/", f"/games/{game.pk}/replay.json"]:
        response = anon.get(url)
        body = response.content.decode()
        assert response.status_code == 403, url
        assert WITHHELD in body and seed not in body and hands not in body, url
        assert "points" not in body.lower() and "finishing" not in body, url
    assert anon.get(f"/api/v1/games/{game.pk}/replay/").json()["detail"].startswith(f"The replay of game {game.pk} is {WITHHELD}")
    detail = anon.get(f"/api/v1/games/{game.pk}/").json()
    assert detail["detail"] == (
        f"The result of game {game.pk} is {WITHHELD}; the commitment to its deal (group {a.deal_group}, deal 0) "
        f"is public at /api/v1/tournaments/{t.slug}/deals/?group={a.deal_group}.")
    commitments = anon.get(f"/api/v1/tournaments/{t.slug}/deals/?group={a.deal_group}").json()["results"]
    assert commitments[0]["commitment"] == commit(t.salt, seed) and commitments[0]["seed"] is None
    page = anon.get(f"/games/{game.pk}/").content.decode()
    assert commit(t.salt, seed) in page and "tienlen-bot verify-replay" in page
    games = anon.get(f"/tournaments/{t.slug}/games/").content.decode()
    assert "0 games, newest first" in games and "1 more game played, sealed until its deal has been played" in games
    assert anon.get(f"/api/v1/tournaments/{t.slug}/games/").json()["count"] == 0
    # The other table of the group plays deal 0: now everything is public and checks out.
    table_play_locally(table_id=b.pk, games=1)
    replay = anon.get(f"/api/v1/games/{game.pk}/replay/")
    assert replay.status_code == 200 and replay.json()["seed"] == seed
    info = anon.get(f"/api/v1/games/{game.pk}/").json()
    assert info["deal"]["seed"] == seed and info["deal"]["withheld"] is None
    assert info["deal"]["verify"] == f"tienlen-bot verify-replay {info['deal']['proof_url']}"
    assert info["deal"]["proof_url"] == f"http://testserver/api/v1/games/{game.pk}/proof/"
    proof = anon.get(info["deal"]["proof_url"]).json()
    assert proof["schema"] == "tienlen.deal-proof/1" and proof["deal"]["seed"] == seed
    from bots_sdk.fairplay import verify

    assert verify(proof).ok
    page = anon.get(f"/games/{game.pk}/")
    assert page.status_code == 200 and seed in page.content.decode()
    # Deal 1 of the group is still sealed everywhere.
    table_play_locally(table_id=a.pk, games=1)
    assert anon.get(f"/api/v1/games/{Game.objects.get(table=a, index=1).pk}/replay/").status_code == 403


def test_notable_games_leave_out_games_whose_deal_is_sealed(anon, organiser, bots, house_bots) -> None:
    from django.core.cache import cache

    from web import queries

    t = running_round_robin(organiser, house_bots, seats_per_table=4, duplicate_sets=1)
    a, _b = shared_group_tables(t)
    table_play_locally(table_id=a.pk)
    sealed = set(Game.objects.filter(table=a).values_list("pk", flat=True))
    # Make every game of table a "notable" (an instant win) in its stored replay. A game
    # with no move (a real instant win on the deal) is never a highlight, sealed or not.
    watchable = set()
    for game in Game.objects.filter(table=a).select_related("replay"):
        data = json.loads(game.replay.decoded_text())
        data["result"]["instant_winner"] = 0
        if data.get("moves"):
            watchable.add(game.pk)
        import zlib

        game.replay.data = zlib.compress(json.dumps(data).encode())
        game.replay.save(update_fields=["data"])
    assert watchable
    cache.clear()
    assert not {n["game_id"] for n in queries.notable_games(limit=50)} & sealed
    table_complete(table_id=_b.pk)  # the other table of the group closes: revealed
    cache.clear()
    assert {n["game_id"] for n in queries.notable_games(limit=50)} >= watchable


def tournament_urls(t, game_id: int) -> tuple[list[str], list[str]]:
    api = [f"/api/v1/tournaments/{t.slug}/{tail}" for tail in (
        "", "progress/", "entrants/", "standings/", "cross-table/", "bracket/", "tables/", "games/", "deals/")]
    api += [f"/api/v1/games/{game_id}/", f"/api/v1/games/{game_id}/replay/", f"/api/v1/games/{game_id}/proof/"]
    pages = [f"/tournaments/{t.slug}/", f"/tournaments/{t.slug}/games/", f"/tournaments/{t.slug}/deals/",
             f"/games/{game_id}/", "/tournaments/", "/"]
    return api, pages


def test_a_reproducible_tournament_says_so_on_every_page_and_api_response(anon, organiser, bots, house_bots) -> None:
    t = running_round_robin(organiser, house_bots, seats_per_table=4, duplicate_sets=1, seed="organiser's own seed")
    a, _ = shared_group_tables(t)
    table_play_locally(table_id=a.pk, games=2)
    api, pages = tournament_urls(t, Game.objects.filter(table=a).first().pk)
    for url in api:
        response = anon.get(url)
        assert response.status_code in (200, 403), url
        assert response["Tienlen-Fair-Play"] == REPRODUCIBLE, url
        assert "organiser's own seed" not in response.content.decode(), url
    for url in pages:
        response = anon.get(url)
        assert response.status_code in (200, 403), url
        assert REPRODUCIBLE in response.content.decode(), url
    doc = anon.get(f"/api/v1/tournaments/{t.slug}/").json()
    assert doc["reproducible"] is True and doc["fair_play_notices"] == [REPRODUCIBLE]
    listed = anon.get("/api/v1/tournaments/").json()["results"]
    assert next(x for x in listed if x["slug"] == t.slug)["fair_play_notices"] == [REPRODUCIBLE]
    # A tournament with secret deals carries no such label.
    plain = running_round_robin(organiser, bots[:4], name="Plain", seats_per_table=4)
    response = anon.get(f"/api/v1/tournaments/{plain.slug}/")
    assert "Tienlen-Fair-Play" not in response and REPRODUCIBLE not in anon.get(f"/tournaments/{plain.slug}/").content.decode()


def test_the_rotation_format_is_labelled_for_trusted_entrants(anon, organiser, django_user_model) -> None:
    staff = django_user_model.objects.create_user("house-owner", is_staff=True)
    bots = [bot_create(owner=staff, name=f"h{i}", house_bot="greedy")[0] for i in range(4)]
    t = running_round_robin(organiser, bots, seats_per_table=4, deal_format="rotation")
    label = "trusted entrants only: deals repeat to the same bots"
    assert anon.get(f"/api/v1/tournaments/{t.slug}/standings/")["Tienlen-Fair-Play"] == label
    assert label in anon.get(f"/tournaments/{t.slug}/").content.decode()
    assert anon.get(f"/api/v1/tournaments/{t.slug}/").json()["deal_format"] == "rotation"
