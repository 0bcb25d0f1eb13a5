"""A draft is edited on the web: the creation form prefilled with its settings and entrants,
the owner rule said before saving, all or nothing, by its organiser only, drafts only."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import Permission

from tests.web.factories import make_user
from tournaments.models import Tournament
from tournaments.services.accounts import bot_create, house_bot_for
from tournaments.services.tournaments import tournament_create, tournament_entrant_add

pytestmark = pytest.mark.django_db

FORM = {
    "format": "round_robin", "preset": "south", "options": "", "deal_format": "field",
    "seats_per_table": 4, "duplicate_sets": 1, "cycles": 1, "advance_per_table": 2,
    "move_time_ms": 500, "time_bank_ms": 5000, "rated": "on",
}


def organiser_named(name: str):
    user = make_user(name)
    user.user_permissions.add(Permission.objects.get(codename="organise_tournaments"))
    return user


@pytest.fixture
def world(client):
    org = organiser_named("org")
    client.force_login(org)
    mine_a, mine_b = (bot_create(owner=org, name=n)[0] for n in ("org-v1", "org-v2"))
    others = [bot_create(owner=make_user(f"author{i}"), name=f"rival{i}")[0] for i in range(3)]
    draft = tournament_create(organiser=org, name="Spring cup", format="round_robin", duplicate_sets=2,
                              options={"count_stuck_on_instant_win": True})
    for bot in (mine_a, *others):
        tournament_entrant_add(tournament=draft, bot=bot)
    tournament_entrant_add(tournament=draft, bot=house_bot_for(kind="greedy"))
    return org, draft, mine_a, mine_b, others


def test_the_edit_form_is_the_creation_form_prefilled(client, world) -> None:
    _, draft, mine_a, _, others = world
    page = client.get(f"/tournaments/{draft.slug}/").content.decode()
    assert f'href="/organise/{draft.slug}/edit/"' in page
    html = client.get(f"/organise/{draft.slug}/edit/").content.decode()
    assert "Edit draft: Spring cup" in html and "Save draft" in html
    assert 'name="name" value="Spring cup"' in html
    assert 'name="duplicate_sets" value="2"' in html
    assert "count_stuck_on_instant_win" in html
    for bot in (mine_a, *others):
        assert f'value="{bot.pk}" checked' in html, bot.name  # a checkbox each, ticked
    assert re.search(r'<input type="checkbox" name="house_bots" value="greedy"[^>]* checked>', html)
    assert not re.search(r'<input type="checkbox" name="house_bots" value="random"[^>]* checked>', html)
    assert "Bots of one owner never share a table" in html  # the rule, explained before saving


def test_saving_changes_settings_and_entrants(client, world) -> None:
    _, draft, mine_a, mine_b, others = world
    response = client.post(f"/organise/{draft.slug}/edit/", {
        **FORM, "name": "Spring cup, unrated", "rated": "", "games_per_table": 8,
        "entrants": [mine_b.pk, *[b.pk for b in others]], "house_bots": ["random"],
    })
    assert response.status_code == 302 and response["Location"] == f"/tournaments/{draft.slug}/"
    draft.refresh_from_db()
    assert (draft.name, draft.rated, draft.games_per_table, draft.duplicate_sets, draft.options) == (
        "Spring cup, unrated", False, 8, 0, {})
    assert set(draft.entrants.values_list("bot__name", flat=True)) == {
        "org-v2", "rival0", "rival1", "rival2", "house-random"}


def test_the_owner_rule_is_explained_before_anything_is_saved(client, world) -> None:
    _, draft, mine_a, mine_b, others = world
    html = client.post(f"/organise/{draft.slug}/edit/", {
        **FORM, "name": "Renamed", "entrants": [mine_a.pk, mine_b.pk, others[0].pk, others[1].pk],
    }).content.decode()
    assert "Bots of one owner never share a table, and here org enters 2 (org-v1, org-v2)" in html
    assert "allow_same_owner" in html  # the way out
    draft.refresh_from_db()
    assert draft.name == "Spring cup" and draft.entrants.count() == 5  # nothing saved
    # A bad rule option comes back on its field, and nothing is saved either.
    html = client.post(f"/organise/{draft.slug}/edit/", {
        **FORM, "name": "Renamed", "options": '{"no_such_rule": 1}', "entrants": [b.pk for b in others],
        "house_bots": ["random"],
    }).content.decode()
    assert "Unknown option(s): no_such_rule" in html
    assert Tournament.objects.get(pk=draft.pk).name == "Spring cup" and draft.entrants.count() == 5


def test_only_its_organiser_edits_and_only_a_draft(client, world) -> None:
    org, draft, *_ = world
    client.force_login(organiser_named("rival-org"))
    assert client.get(f"/organise/{draft.slug}/edit/").status_code == 403
    assert client.post(f"/organise/{draft.slug}/edit/", {**FORM, "name": "Mine"}).status_code == 403
    client.logout()
    assert client.get(f"/organise/{draft.slug}/edit/").status_code == 302  # to the sign-in page
    client.force_login(org)
    assert client.get("/organise/no-such/edit/").status_code == 404
    Tournament.objects.filter(pk=draft.pk).update(status="scheduled")
    response = client.post(f"/organise/{draft.slug}/edit/", {**FORM, "name": "Late"}, follow=True)
    assert "Only a draft can be edited" in response.content.decode()
    assert f'href="/organise/{draft.slug}/edit/"' not in response.content.decode()
    assert Tournament.objects.get(pk=draft.pk).name == "Spring cup"
