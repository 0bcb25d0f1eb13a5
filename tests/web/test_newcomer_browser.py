"""A newcomer in real Chromium: signs up on a site that lets everyone
organise (as `make demo`'s does), registers a bot, creates a tournament of their bot, three
of the demo's bots and house bots from the web form, and Start passes the owner rule. On
the way the form refuses, before saving anything, a field the owner rule cannot seat and
says which owners and what to do."""

from __future__ import annotations

import os
from collections import Counter

import pytest

from tests.web.conftest import shot

os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def schedule_jobs():
    """The Start button's follow-up jobs (play the first tables, created by the start),
    recorded instead of sent to a Celery broker no worker here listens to."""
    from tournaments import jobs, tasks  # noqa: F401  (tasks provides the jobs)
    from tournaments.jobs import Job

    sent: list[int] = []
    previous = jobs._runners[Job.PLAY_TABLE], jobs._runners[Job.PLAY_TABLES]
    jobs.provide(Job.PLAY_TABLE, sent.append)
    jobs.provide(Job.PLAY_TABLES, sent.extend)  # a group of tables, one task
    yield sent
    jobs.provide(Job.PLAY_TABLE, previous[0])
    jobs.provide(Job.PLAY_TABLES, previous[1])


def pick(page, values: list[str]) -> None:
    """Tick exactly these entrants (a checkbox each)."""
    for box in page.query_selector_all("#id_entrants input[type=checkbox]"):
        box.set_checked(box.get_attribute("value") in values)


def test_a_newcomer_runs_a_first_tournament_with_demo_bots_and_house_bots(
    live_server, page, settings, schedule_jobs,
) -> None:
    from demo.run import DemoConfig, demo_bots_register
    from tournaments.models import Bot, TableSeat, Tournament

    settings.TIENLEN_ANYONE_ORGANISES = True
    demo = demo_bots_register(config=DemoConfig(bots=("heuristic", "greedy", "random", "planner-v2")))[0]
    demo_ids = [str(b.bot_id) for b in demo[:3]]

    page.set_default_timeout(30_000)  # a loaded machine: every wait has its bound, none is timed
    # Sign up, and register a bot (its token is shown once).
    page.goto(f"{live_server.url}/accounts/signup/")
    page.fill("#id_username", "newbie")
    page.fill("#id_password1", "Kettle-drum-4411")
    page.fill("#id_password2", "Kettle-drum-4411")
    page.click("main button[type=submit]")
    page.wait_for_url("**/me/bots/new/")
    page.fill("#id_name", "newbie-bot")
    page.click("main button[type=submit]")  # (the menu's Sign out is a submit button too)
    page.wait_for_selector("#bot-token")
    mine = Bot.objects.get(name="newbie-bot")

    # Organise is in the menu for everyone signed in on this site.
    page.click("nav >> text=Organise")
    page.click("text=New tournament")
    assert "Bots of one owner never share a table" in page.text_content("#first-tournament")
    options = page.eval_on_selector_all("#id_entrants label", "os => os.map(o => o.textContent.trim())")
    assert f"{demo[0].name} ({demo[0].name}-author)" in options and "newbie-bot (newbie)" in options
    assert not [o for o in options if o.startswith("house-")]  # house bots have their own boxes

    # Too few for tables of 4: refused before anything is saved, what was chosen kept.
    page.fill("#id_name", "Newbie's first cup")
    pick(page, [str(mine.pk), *demo_ids[:2]])
    page.click("#tournament-form button[type=submit]")
    page.wait_for_selector("#field-entrants .errorlist >> text=Pick at least 4 entrants (house bots count)")
    assert not Tournament.objects.exists()
    assert page.input_value("#id_name") == "Newbie's first cup"

    # Their bot, three demo bots (an owner each) and two house bots.
    pick(page, [str(mine.pk), *demo_ids])
    page.check("input[name=house_bots][value=greedy]")
    page.check("input[name=house_bots][value=heuristic]")
    shot(page, "newcomer-form")
    page.click("#tournament-form button[type=submit]")
    page.wait_for_selector("text=Start now")
    t = Tournament.objects.get()
    assert t.organiser.username == "newbie" and t.status == Tournament.Status.DRAFT
    entered = Bot.objects.filter(entries__tournament=t)
    assert entered.count() == 6 and entered.filter(house_bot__in=["greedy", "heuristic"]).count() == 2

    page.click("text=Start now")
    page.wait_for_selector(".messages >> text=Tournament started")
    assert "Could not start" not in page.text_content("main")
    assert page.text_content("#t-status") == "Running"
    shot(page, "newcomer-started")
    # Started now: the start created the first tables (enqueued for the workers), and
    # they seat no owner twice.
    t.refresh_from_db()
    assert sorted(schedule_jobs) == sorted(t.tables.values_list("id", flat=True)) and schedule_jobs
    assert t.status == Tournament.Status.RUNNING
    seats = TableSeat.objects.filter(table__tournament=t).select_related("entrant__bot")
    per_table = Counter((s.table_id, s.entrant.bot.owner_id) for s in seats if not s.entrant.bot.house_bot)
    assert per_table and max(per_table.values()) == 1
