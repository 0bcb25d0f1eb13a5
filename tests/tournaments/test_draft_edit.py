"""A draft's settings are edited through the API (PATCH /api/v1/tournaments/<slug>/) with the
checks of creation, by its organiser only, and only while it is a draft; its entrants are
added and removed at .../entrants/."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission, User
from rest_framework.test import APIClient

from tournaments.models import Tournament
from tournaments.services.tournaments import tournament_create, tournament_entrant_add

pytestmark = pytest.mark.django_db


def client_for(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


@pytest.fixture
def draft(organiser) -> Tournament:
    return tournament_create(organiser=organiser, name="Spring cup", format="round_robin", duplicate_sets=2)


def test_the_organiser_edits_every_setting_of_a_draft(organiser, draft) -> None:
    changes = {
        "name": "Spring cup, v2", "slug": "spring-v2", "description": "Now unrated.", "format": "knockout",
        "preset": "north", "options": {}, "seats_per_table": 3, "games_per_table": 6, "move_time_ms": 300,
        "time_bank_ms": 2000, "connect_deadline_s": 60, "rated": False, "deal_format": "independent",
        "seed": "my-seed", "cycles": 2, "advance_per_table": 1, "ladder_tables_per_tick": 3,
        "allow_same_owner": True, "verified_entry": True,
    }
    response = client_for(organiser).patch(f"/api/v1/tournaments/{draft.slug}/", changes, format="json")
    assert response.status_code == 200, response.json()
    body = response.json()
    assert body["slug"] == "spring-v2" and body["name"] == "Spring cup, v2" and body["status"] == "draft"
    saved = Tournament.objects.get(pk=draft.pk)
    for name, value in changes.items():
        if name != "seed":
            assert getattr(saved, name) == value, name
    assert saved.organiser_seed == "my-seed" and saved.reproducible
    assert saved.duplicate_sets == 0 and saved.pool is None  # games per table replaced the sets; unrated
    assert "reproducible" in response["Tienlen-Fair-Play"]
    # And back: duplicate sets replace games per table; rated again, in the preset's pool.
    response = client_for(organiser).patch("/api/v1/tournaments/spring-v2/", {"duplicate_sets": 1, "rated": True,
                                                                             "seed": ""}, format="json")
    assert response.status_code == 200
    saved.refresh_from_db()
    assert saved.games_per_table is None and saved.duplicate_sets == 1 and saved.pool.slug == "north-3"
    assert saved.organiser_seed == ""


def test_bad_settings_are_refused_as_at_creation_and_nothing_changes(organiser, draft) -> None:
    client = client_for(organiser)
    url = f"/api/v1/tournaments/{draft.slug}/"
    for changes, field in (
        ({"preset": "atlantis"}, "preset"),
        ({"options": {"no_such_rule": True}}, "options"),
        ({"games_per_table": 4, "duplicate_sets": 2}, "games_per_table"),
        ({"format": "knockout", "advance_per_table": 3, "seats_per_table": 3}, "advance_per_table"),
        ({"format": "ladder", "deal_format": "rotation"}, "deal_format"),
        ({"seats_per_table": 7}, "seats_per_table"),
        ({"name": ""}, "name"),
        ({"status": "finished"}, "status"),
    ):
        response = client.patch(url, changes, format="json")
        assert response.status_code == 400, changes
        assert field in response.json(), (changes, response.json())
    other = tournament_create(organiser=organiser, name="Other", format="ladder")
    response = client.patch(url, {"slug": other.slug}, format="json")
    assert response.status_code == 400 and "slug" in response.json()
    saved = Tournament.objects.get(pk=draft.pk)
    assert (saved.preset, saved.format, saved.seats_per_table, saved.duplicate_sets) == ("south", "round_robin", 4, 2)
    assert saved.status == "draft"


def test_seat_rotation_is_refused_while_a_bot_that_is_no_house_bot_is_entered(organiser, draft, bots) -> None:
    tournament_entrant_add(tournament=draft, bot=bots[0])
    response = client_for(organiser).patch(f"/api/v1/tournaments/{draft.slug}/", {"deal_format": "rotation"},
                                           format="json")
    assert response.status_code == 400 and "house bots" in response.json()["deal_format"][0]


def test_only_a_draft_is_edited(organiser, draft) -> None:
    Tournament.objects.filter(pk=draft.pk).update(status="scheduled")
    response = client_for(organiser).patch(f"/api/v1/tournaments/{draft.slug}/", {"name": "Late"}, format="json")
    assert response.status_code == 400
    assert response.json()["status"] == ["Only a draft can be edited; this one is scheduled."]
    assert Tournament.objects.get(pk=draft.pk).name == "Spring cup"


def test_nobody_but_its_organiser_edits_a_draft(organiser, draft, owner) -> None:
    url = f"/api/v1/tournaments/{draft.slug}/"
    rival = User.objects.create_user("rival")
    rival.user_permissions.add(Permission.objects.get(codename="organise_tournaments"))
    assert client_for(User.objects.get(pk=rival.pk)).patch(url, {"name": "Mine"}, format="json").status_code == 403
    assert client_for(owner).patch(url, {"name": "Mine"}, format="json").status_code == 403  # not an organiser
    assert APIClient().patch(url, {"name": "Mine"}, format="json").status_code in (401, 403)
    assert client_for(organiser).patch("/api/v1/tournaments/nope/", {"name": "x"}, format="json").status_code == 404
    assert Tournament.objects.get(pk=draft.pk).name == "Spring cup"
    assert APIClient().get(url).status_code == 200  # reading stays public


def test_entrants_are_added_and_removed_through_the_api(organiser, draft, bots) -> None:
    client = client_for(organiser)
    url = f"/api/v1/tournaments/{draft.slug}/entrants/"
    assert client.post(url, {"bot": "bot0"}, format="json").status_code == 201
    assert client.post(url, {"bot": "bot1"}, format="json").status_code == 201
    assert client.delete(f"{url}bot0/").status_code == 204
    assert [e["bot"] for e in client.get(url).json()] == ["bot1"]
