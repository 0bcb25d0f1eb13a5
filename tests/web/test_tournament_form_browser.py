"""The format-aware tournament form in real Chromium: an organiser creates a knockout and
a ladder, the page showing each format's own fields only and the entrants under a filter
box; without the script every field shows, its label saying the format it is for."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _visible(page, name: str) -> bool:
    return page.is_visible(f"#field-{name}")


def test_an_organiser_creates_a_knockout_and_a_ladder_from_the_form(live_server, page) -> None:
    from django.contrib.auth.models import Permission

    from tests.web.factories import make_user
    from tournaments.models import Entrant, Tournament
    from tournaments.services.accounts import bot_create

    org = make_user("ann")
    org.user_permissions.add(Permission.objects.get(codename="organise_tournaments"))
    bot_create(owner=org, name="ann-bot")
    for i in range(5):
        bot_create(owner=make_user(f"author{i}"), name=f"rival{i}")

    page.set_default_timeout(30_000)  # a loaded machine: every wait has its bound, none is timed
    page.goto(f"{live_server.url}/accounts/login/")
    page.fill("input[name=username]", "ann")
    page.fill("input[name=password]", "pw-for-tests-123")
    page.click("main button[type=submit]")
    page.wait_for_selector("nav >> text=Organise")
    page.goto(f"{live_server.url}/organise/new/")

    # Round robin (the first format): its cycles show, the knockout's and ladder's fields not.
    assert page.input_value("#id_format") == "round_robin"
    assert _visible(page, "cycles") and not _visible(page, "advance_per_table")
    assert not _visible(page, "ladder_tables_per_tick") and not page.is_visible("fieldset[data-formats=ladder]")
    for name in ("slug", "connect_deadline_s", "starts_at", "open_registration", "house_bots", "allow_same_owner"):
        assert _visible(page, name), name
    assert not _visible(page, "registration_opens_at")  # a round robin is by invitation by default

    # A knockout: advance per table shows, cycles go.
    page.fill("#id_name", "Ann's knockout")
    page.fill("#id_slug", "anns-ko")
    page.select_option("#id_format", "knockout")
    assert _visible(page, "advance_per_table") and not _visible(page, "cycles")
    assert not _visible(page, "ladder_tables_per_tick")
    # The entrants: a filter box over a checkbox list.
    page.fill("[data-entrant-filter]", "author1")
    assert page.is_visible("label.entrant-option:has-text('rival1 (author1)')")
    assert not page.is_visible("label.entrant-option:has-text('rival2 (author2)')")
    page.check("label.entrant-option:has-text('rival1') input")
    page.fill("[data-entrant-filter]", "")
    for name in ("ann-bot", "rival2", "rival3"):
        page.check(f"label.entrant-option:has-text('{name} (') input")
    assert page.text_content("[data-entrant-count]").startswith("4 picked of 6")
    page.fill("[data-entrant-filter]", "nobody-by-this-name")
    assert page.is_visible("label.entrant-option:has-text('rival1')")  # a picked bot never hides
    page.fill("#id_games_per_table", "3")
    page.fill("#id_duplicate_sets", "")  # not needed with games per table
    page.click("#tournament-form button[type=submit]")
    page.wait_for_selector("text=Tournament “Ann's knockout” created.")
    ko = Tournament.objects.get(slug="anns-ko")
    assert (ko.format, ko.games_per_table, ko.duplicate_sets, ko.open_registration) == ("knockout", 3, 0, False)
    statuses = dict(ko.entrants.values_list("bot__name", "status"))
    assert statuses == {"ann-bot": "active", "rival1": "invited", "rival2": "invited", "rival3": "invited"}
    assert page.is_visible("#entrants-apart >> text=invited: waiting for its owner")
    page.click("text=Start now")
    page.wait_for_selector(".messages >> text=Waiting for the owners to accept")

    # A ladder: tables per tick shows; open by default, so its registration window shows.
    page.goto(f"{live_server.url}/organise/new/")
    page.fill("#id_name", "Ann's ladder")
    page.select_option("#id_format", "ladder")
    assert _visible(page, "ladder_tables_per_tick") and not _visible(page, "cycles")
    assert not _visible(page, "advance_per_table")
    assert _visible(page, "registration_closes_at")
    page.fill("#id_ladder_tables_per_tick", "3")
    page.check("label.entrant-option:has-text('ann-bot') input")
    page.click("#tournament-form button[type=submit]")
    page.wait_for_selector("text=Tournament “Ann's ladder” created.")
    ladder = Tournament.objects.get(name="Ann's ladder")
    assert (ladder.format, ladder.ladder_tables_per_tick, ladder.open_registration) == ("ladder", 3, True)
    assert page.is_visible("#registration-open")
    assert ladder.entrants.get().status == Entrant.Status.ACTIVE


def test_without_the_script_every_field_shows_labelled_with_its_format(live_server, browser_instance) -> None:
    from django.contrib.auth.models import Permission

    from tests.web.factories import make_user

    org = make_user("ann")
    org.user_permissions.add(Permission.objects.get(codename="organise_tournaments"))
    context = browser_instance.new_context(java_script_enabled=False)
    try:
        page = context.new_page()
        page.set_default_timeout(30_000)
        page.goto(f"{live_server.url}/accounts/login/")
        page.fill("input[name=username]", "ann")
        page.fill("input[name=password]", "pw-for-tests-123")
        page.click("main button[type=submit]")
        page.goto(f"{live_server.url}/organise/new/")
        for name, label in (("cycles", "(round robin)"), ("advance_per_table", "(knockout)"),
                            ("ladder_tables_per_tick", "(ladder)")):
            assert _visible(page, name) and label in page.text_content(f"#field-{name} label"), name
        assert not page.is_visible("[data-entrant-filter]")  # a filter needs the script
    finally:
        context.close()
