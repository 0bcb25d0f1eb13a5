"""An organiser in real Chromium edits a draft from its page (Edit, the form prefilled,
Save) and downloads its standings as CSV from the link under them."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_an_organiser_edits_a_draft_and_downloads_the_standings(live_server, page) -> None:
    from django.contrib.auth.models import Permission

    from tests.web.factories import make_user
    from tournaments.models import Tournament
    from tournaments.services.accounts import bot_create
    from tournaments.services.tournaments import tournament_create, tournament_entrant_add

    org = make_user("ann")
    org.user_permissions.add(Permission.objects.get(codename="organise_tournaments"))
    draft = tournament_create(organiser=org, name="Ann's cup", format="round_robin")
    for i in range(4):
        tournament_entrant_add(tournament=draft, bot=bot_create(owner=make_user(f"author{i}"), name=f"bot{i}")[0])

    page.set_default_timeout(30_000)  # a loaded machine: every wait has its bound, none is timed
    page.goto(f"{live_server.url}/accounts/login/")
    page.fill("input[name=username]", "ann")
    page.fill("input[name=password]", "pw-for-tests-123")
    page.click("main button[type=submit]")
    page.goto(f"{live_server.url}/tournaments/{draft.slug}/")
    page.click("#edit-link")
    page.wait_for_selector("text=Edit draft: Ann's cup")
    assert page.input_value("#id_name") == "Ann's cup"
    assert sorted(page.eval_on_selector_all("#id_entrants input:checked", "os => os.map(o => o.parentElement.textContent.trim())")) == [
        f"bot{i} (author{i})" for i in range(4)]
    page.fill("#id_name", "Ann's cup, with a house bot")
    page.check("input[name=house_bots][value=random]")
    page.click("#tournament-form button[type=submit]")
    page.wait_for_selector("text=Draft “Ann's cup, with a house bot” saved.")
    draft.refresh_from_db()
    assert draft.name == "Ann's cup, with a house bot" and draft.entrants.count() == 5
    assert Tournament.objects.count() == 1

    with page.expect_download() as download:
        page.click("#exports >> text=standings")
    assert download.value.suggested_filename == f"tienlen-{draft.slug}-standings.csv"
    text = download.value.path().read_bytes().decode("utf-8")
    assert text.startswith("rank,bot,owner,status,games,") and text.count("\r\n") == 1 + 5
