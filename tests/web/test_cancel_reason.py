"""The web Cancel takes the organiser's reason: it is kept with who cancelled and shown on
the tournament's page (and in the API's status_reason), bounded and on one line."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission

from tests.web.factories import make_user
from tournaments.models import Tournament

pytestmark = pytest.mark.django_db


def _organiser(username: str):
    user = make_user(username)
    user.user_permissions.add(Permission.objects.get(codename="organise_tournaments"))
    return user


def test_cancel_with_a_reason_shows_it_on_the_page_and_in_the_api(client) -> None:
    boss = _organiser("boss")
    Tournament.objects.create(name="Rainy", slug="rainy", organiser=boss, format="round_robin")
    client.force_login(boss)
    page = client.get("/tournaments/rainy/").content.decode()
    assert 'name="reason"' in page and 'id="cancel-reason"' in page
    html = client.post("/organise/rainy/cancel/", {"reason": "  venue\nflooded  "}, follow=True).content.decode()
    assert "Tournament cancelled" in html and "cancelled by boss: venue flooded" in html
    assert client.get("/api/v1/tournaments/rainy/").json()["status_reason"] == "cancelled by boss: venue flooded"


def test_a_cancel_without_or_with_an_overlong_reason(client) -> None:
    boss = _organiser("boss")
    Tournament.objects.create(name="A", slug="a", organiser=boss, format="round_robin")
    Tournament.objects.create(name="B", slug="b", organiser=boss, format="round_robin")
    client.force_login(boss)
    client.post("/organise/a/cancel/")
    assert Tournament.objects.get(slug="a").status_reason == "cancelled by boss"
    client.post("/organise/b/cancel/", {"reason": "x" * 5000})
    b = Tournament.objects.get(slug="b")
    assert b.status == "cancelled" and b.status_reason == "cancelled by boss: " + "x" * 400


def test_another_organiser_cannot_cancel_with_a_reason(client) -> None:
    Tournament.objects.create(name="Mine", slug="mine", organiser=_organiser("org1"), format="round_robin")
    client.force_login(_organiser("org2"))
    assert client.post("/organise/mine/cancel/", {"reason": "mine now"}).status_code == 403
    assert Tournament.objects.get(slug="mine").status == "draft"
