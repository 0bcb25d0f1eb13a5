"""The tournament form takes every field the API takes, checked by the same services:
slug, connect deadline, ladder tables per tick, a scheduled start, open registration and
its window; duplicate sets not needed with games per table."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth.models import Permission
from django.utils import timezone
from rest_framework.test import APIClient

from tests.web.factories import make_user
from tournaments.models import Tournament

pytestmark = pytest.mark.django_db

FORM = {
    "format": "ladder", "preset": "south", "options": "", "deal_format": "field", "seats_per_table": 4,
    "move_time_ms": 500, "time_bank_ms": 5000,
}


@pytest.fixture
def org_client(client):
    org = make_user("ann")
    org.user_permissions.add(Permission.objects.get(codename="organise_tournaments"))
    client.force_login(org)
    return client


def test_every_api_field_is_in_the_form(org_client) -> None:
    later = (timezone.now() + timedelta(days=2)).replace(second=0, microsecond=0)
    response = org_client.post("/organise/new/", {
        **FORM, "name": "Full ladder", "slug": "full-ladder", "connect_deadline_s": "45",
        "ladder_tables_per_tick": "5", "games_per_table": "6", "duplicate_sets": "",
        "open_registration": "open", "registration_closes_at": later.strftime("%Y-%m-%dT%H:%M"),
        "starts_at": later.strftime("%Y-%m-%dT%H:%M"),
    })
    assert response.status_code == 302, response.content.decode()[-3000:]
    t = Tournament.objects.get(slug="full-ladder")
    assert (t.connect_deadline_s, t.ladder_tables_per_tick, t.games_per_table, t.duplicate_sets) == (45, 5, 6, 0)
    assert t.open_registration and t.registration_closes_at == later and t.starts_at == later
    page = org_client.get("/tournaments/full-ladder/").content.decode()
    assert 'id="scheduled-start"' in page and "Start (plays at" in page
    # Start without a time: at the draft's own scheduled start.
    html = org_client.post("/organise/full-ladder/start/", follow=True).content.decode()
    assert "Tournament started" in html
    t.refresh_from_db()
    assert (t.status, t.starts_at) == ("scheduled", later)


def test_a_registration_window_needs_open_registration_and_to_close_after_it_opens(org_client) -> None:
    now = timezone.now()
    fmt = "%Y-%m-%dT%H:%M"
    html = org_client.post("/organise/new/", {
        **FORM, "format": "round_robin", "name": "Closed cup", "open_registration": "closed",
        "registration_opens_at": now.strftime(fmt),
    }).content.decode()
    assert "A registration window is for an open tournament" in html and not Tournament.objects.exists()
    html = org_client.post("/organise/new/", {
        **FORM, "name": "Backwards", "open_registration": "open",
        "registration_opens_at": (now + timedelta(days=2)).strftime(fmt),
        "registration_closes_at": (now + timedelta(days=1)).strftime(fmt),
    }).content.decode()
    assert "Registration must close after it opens." in html and not Tournament.objects.exists()
    # An open round robin may be saved with fewer entrants than a table: owners will join.
    response = org_client.post("/organise/new/", {**FORM, "format": "round_robin", "name": "Open cup",
                                                  "open_registration": "open"})
    assert response.status_code == 302 and Tournament.objects.get(name="Open cup").open_registration


def test_an_edit_clears_the_scheduled_start_and_the_api_starts_now_with_null(org_client) -> None:
    later = (timezone.now() + timedelta(days=2)).replace(second=0, microsecond=0)
    org_client.post("/organise/new/", {**FORM, "name": "Lad", "slug": "lad",
                                       "starts_at": later.strftime("%Y-%m-%dT%H:%M")})
    t = Tournament.objects.get(slug="lad")
    assert t.starts_at == later and t.open_registration  # a ladder: open by default
    edit = org_client.get("/organise/lad/edit/").content.decode()
    assert 'name="slug" value="lad"' in edit and 'value="open" selected' in edit
    response = org_client.post("/organise/lad/edit/", {**FORM, "name": "Lad", "slug": "lad", "starts_at": "",
                                                       "open_registration": "closed"})
    assert response.status_code == 302
    t.refresh_from_db()
    assert t.starts_at is None and not t.open_registration
    api = APIClient()
    api.force_authenticate(t.organiser)
    api.patch("/api/v1/tournaments/lad/", {"starts_at": later.isoformat()}, format="json")
    started = api.post("/api/v1/tournaments/lad/start/", {"starts_at": None}, format="json")
    assert started.status_code == 200
    t.refresh_from_db()
    assert t.starts_at is None  # null: now, whatever the draft said
