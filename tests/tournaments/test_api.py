"""The JSON API: who may do what, clear 400s for bad input, tokens shown once."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from bots_sdk.examples import EXAMPLES
from bots_sdk.rules import PRESETS
from tests.tournaments.conftest import make_result, running_round_robin
from tournaments.models import Bot, Tournament
from tournaments.services.accounts import bot_create
from tournaments.services.recording import table_game_record
from tournaments.services.tournaments import tournament_create
from tournaments.tokens import token_hash

pytestmark = pytest.mark.django_db


@pytest.fixture
def anon() -> APIClient:
    return APIClient()


def client_for(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def test_the_openapi_schema_is_served(anon) -> None:
    response = anon.get("/api/v1/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    assert response.status_code == 200
    schema = response.json()
    assert "/api/v1/tournaments/{slug}/standings/" in schema["paths"]
    assert "apiToken" in schema["components"]["securitySchemes"]
    # Presets and house bots are the engine's and the SDK's registries, listed for clients.
    components = schema["components"]["schemas"]
    assert components["PresetEnum"]["enum"] == list(PRESETS)
    assert set(components["HouseBotEnum"]["enum"]) == set(EXAMPLES)


def test_an_unknown_preset_or_house_bot_is_a_400_naming_the_field(organiser) -> None:
    client = client_for(organiser)
    response = client.post("/api/v1/tournaments/", {"name": "X", "format": "round_robin", "preset": "atlantis"}, format="json")
    assert response.status_code == 400 and "preset" in response.json()
    response = client.post("/api/v1/bots/", {"name": "robo", "house_bot": "nobody"}, format="json")
    assert response.status_code == 400 and "house_bot" in response.json()
    assert not Tournament.objects.exists() and not Bot.objects.exists()


def test_register_a_bot_shows_the_token_once_and_stores_only_its_hash(owner) -> None:
    client = client_for(owner)
    response = client.post("/api/v1/bots/", {"name": "alpha", "description": "greedy"}, format="json")
    assert response.status_code == 201
    token = response.json()["token"]
    assert token.startswith("tlb_")
    bot = Bot.objects.get(name="alpha")
    assert bot.token_hash == token_hash(token)
    assert token not in str(Bot.objects.filter(pk=bot.pk).values().first())
    detail = client.get("/api/v1/bots/alpha/").json()
    assert "token" not in detail
    assert detail["token_prefix"] == token[:10]


def test_nobody_reads_another_owners_token_or_rotates_it(owner, other_owner) -> None:
    bot, _ = bot_create(owner=owner, name="alpha")
    intruder = client_for(other_owner)
    detail = intruder.get("/api/v1/bots/alpha/").json()
    assert "token_prefix" not in detail and "token" not in detail
    assert intruder.post("/api/v1/bots/alpha/rotate-token/").status_code == 403
    assert intruder.post("/api/v1/bots/alpha/revoke/").status_code == 403
    assert intruder.patch("/api/v1/bots/alpha/", {"description": "x"}, format="json").status_code == 403
    assert APIClient().post("/api/v1/bots/alpha/rotate-token/").status_code in (401, 403)


def test_rotating_a_token_invalidates_the_old_one(owner) -> None:
    bot, old = bot_create(owner=owner, name="alpha")
    response = client_for(owner).post("/api/v1/bots/alpha/rotate-token/")
    assert response.status_code == 200
    new = response.json()["token"]
    assert new != old
    bot.refresh_from_db()
    assert bot.token_hash == token_hash(new)


def test_bad_bot_input_returns_field_errors(owner) -> None:
    client = client_for(owner)
    response = client.post("/api/v1/bots/", {"name": "no spaces allowed!"}, format="json")
    assert response.status_code == 400
    assert "name" in response.json()
    bot_create(owner=owner, name="taken")
    response = client.post("/api/v1/bots/", {"name": "TAKEN"}, format="json")
    assert response.status_code == 400
    assert "already exists" in response.json()["name"][0]


def test_api_token_authentication(owner) -> None:
    response = client_for(owner).post("/api/v1/tokens/", {"name": "ci"}, format="json")
    assert response.status_code == 201
    key = response.json()["token"]
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    assert client.post("/api/v1/bots/", {"name": "viatoken"}, format="json").status_code == 201
    client.credentials(HTTP_AUTHORIZATION="Token tla_wrong")
    assert client.get("/api/v1/bots/").status_code == 401
    # Revoked tokens stop working.
    token_id = response.json()["id"]
    assert client_for(owner).delete(f"/api/v1/tokens/{token_id}/").status_code == 204
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    assert client.get("/api/v1/bots/").status_code == 401


TOURNAMENT = {"name": "Autumn open", "format": "round_robin", "seats_per_table": 4}


def test_a_bot_owner_cannot_create_or_start_a_tournament(owner, organiser, bots) -> None:
    assert client_for(owner).post("/api/v1/tournaments/", TOURNAMENT, format="json").status_code == 403
    tournament = tournament_create(organiser=organiser, name="Cup", format="round_robin")
    assert client_for(owner).post(f"/api/v1/tournaments/{tournament.slug}/start/").status_code == 403
    assert APIClient().post(f"/api/v1/tournaments/{tournament.slug}/start/").status_code in (401, 403)


def test_only_the_tournaments_organiser_manages_it(organiser, bots, django_user_model) -> None:
    from django.contrib.auth.models import Permission

    rival = django_user_model.objects.create_user("rival", password="pw-rival-12345")
    rival.user_permissions.add(Permission.objects.get(codename="organise_tournaments"))
    tournament = tournament_create(organiser=organiser, name="Cup", format="round_robin")
    response = client_for(rival).post(f"/api/v1/tournaments/{tournament.slug}/entrants/", {"bot": "bot0"}, format="json")
    assert response.status_code == 403


def test_organiser_creates_fills_and_starts_a_tournament(organiser, bots, django_capture_on_commit_callbacks) -> None:
    client = client_for(organiser)
    response = client.post("/api/v1/tournaments/", {**TOURNAMENT, "slug": "autumn"}, format="json")
    assert response.status_code == 201, response.json()
    assert response.json()["pool"] == "south-4"
    for bot in bots[:5]:
        entered = client.post("/api/v1/tournaments/autumn/entrants/", {"bot": bot.name}, format="json")
        assert entered.status_code == 201 and entered.json()["status"] == "invited"  # other owners' bots
        assert client_for(bot.owner).post(f"/api/v1/tournaments/autumn/entrants/{bot.name}/accept/").status_code == 200
    again = client.post("/api/v1/tournaments/autumn/entrants/", {"bot": "bot0"}, format="json")
    assert again.status_code == 400 and "already entered" in again.json()["bot"][0]
    missing = client.post("/api/v1/tournaments/autumn/entrants/", {"bot": "nobody"}, format="json")
    assert missing.status_code == 400 and "bot" in missing.json()
    with django_capture_on_commit_callbacks() as callbacks:
        response = client.post("/api/v1/tournaments/autumn/start/", {}, format="json")
    assert response.status_code == 200
    assert response.json()["status"] == "scheduled"
    assert len(callbacks) == 1  # the schedule task is enqueued only after commit
    second = client.post("/api/v1/tournaments/autumn/start/", {}, format="json")
    assert second.status_code == 400 and "status" in second.json()


@pytest.mark.parametrize(
    ("payload", "field"),
    [
        ({"format": "swiss"}, "format"),
        ({"seats_per_table": 5}, "seats_per_table"),
        ({"games_per_table": 4, "duplicate_sets": 2}, "games_per_table"),
        ({"format": "knockout", "advance_per_table": 3, "seats_per_table": 3}, "advance_per_table"),
        ({"move_time_ms": -1}, "move_time_ms"),
        ({"name": ""}, "name"),
    ],
)
def test_bad_tournament_input_returns_400_with_the_field(organiser, payload, field) -> None:
    response = client_for(organiser).post("/api/v1/tournaments/", {**TOURNAMENT, **payload}, format="json")
    assert response.status_code == 400
    assert field in response.json()
    assert not Tournament.objects.exists()


def test_starting_with_too_few_entrants_is_refused(organiser, bots) -> None:
    client = client_for(organiser)
    client.post("/api/v1/tournaments/", {**TOURNAMENT, "slug": "small"}, format="json")
    client.post("/api/v1/tournaments/small/entrants/", {"bot": "bot0"}, format="json")
    response = client.post("/api/v1/tournaments/small/start/", {}, format="json")
    assert response.status_code == 400
    assert "entrants" in response.json()


def test_anyone_reads_standings_games_replays_and_leaderboards(organiser, bots, anon) -> None:
    tournament = running_round_robin(organiser, bots[:4], seats_per_table=4)
    table = tournament.tables.first()
    for i in range(4):
        table_game_record(table_id=table.pk, result=make_result(i, [0, 1, 2, 3], [(s + i) % 4 for s in range(4)]))
    slug = tournament.slug
    standings = anon.get(f"/api/v1/tournaments/{slug}/standings/").json()
    assert [row["games"] for row in standings] == [4, 4, 4, 4]
    assert sum(row["points"] for row in standings) == 0
    progress = anon.get(f"/api/v1/tournaments/{slug}/progress/").json()
    assert progress["games_done"] == 4
    games = anon.get(f"/api/v1/tournaments/{slug}/games/?limit=2").json()
    assert games["count"] == 4 and len(games["results"]) == 2 and games["next"]
    game_id = games["results"][0]["id"]
    replay = anon.get(f"/api/v1/games/{game_id}/replay/").json()
    assert replay["schema"] == "tienlen.replay/1"
    board = anon.get("/api/v1/pools/south-4/leaderboard/").json()
    assert board["count"] == 4
    ratings = [row["rating"] for row in board["results"]]
    assert ratings == sorted(ratings, reverse=True)
    assert anon.get(f"/api/v1/tournaments/{slug}/cross-table/").status_code == 200
    assert anon.get(f"/api/v1/tournaments/{slug}/bracket/").json()["rounds"][0]["round"] == 1
    assert anon.get("/api/v1/pools/nonsense/leaderboard/").status_code == 404
    assert anon.get("/api/v1/games/999999/replay/").status_code == 404
    h2h = anon.get(f"/api/v1/bots/{bots[0].name}/vs/{bots[1].name}/").json()
    assert h2h["games"] == 4


def test_bot_owners_join_and_leave_ladders_with_their_own_bots_only(organiser, owner, other_owner, bots) -> None:
    ladder = tournament_create(organiser=organiser, name="Open ladder", format="ladder", seats_per_table=2)
    cup = tournament_create(organiser=organiser, name="Invite cup", format="round_robin")
    client = client_for(owner)  # owns bot0, bot2, ...
    response = client.post(f"/api/v1/tournaments/{ladder.slug}/join/", {"bot": "bot0"}, format="json")
    assert response.status_code == 201
    assert client.post(f"/api/v1/tournaments/{ladder.slug}/join/", {"bot": "bot1"}, format="json").status_code == 403
    refused = client.post(f"/api/v1/tournaments/{cup.slug}/join/", {"bot": "bot0"}, format="json")
    assert refused.status_code == 400 and "tournament" in refused.json()
    assert client.post(f"/api/v1/tournaments/{ladder.slug}/leave/", {"bot": "bot0"}, format="json").status_code == 204
    assert ladder.entrants.get(bot__name="bot0").status == "withdrawn"
    again = client.post(f"/api/v1/tournaments/{ladder.slug}/join/", {"bot": "bot0"}, format="json")
    assert again.status_code == 201 and again.json()["status"] == "active"
