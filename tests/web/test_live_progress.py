"""Live tournament progress in real Chromium while a real Celery worker plays the tables
on a real referee (house bots): the bar advances without a reload."""

from __future__ import annotations

import os

import pytest

from tests.needs import need_postgresql
from tests.web.conftest import shot

os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_progress_bar_advances_while_a_worker_plays(live_server, page, settings):
    """Organiser clicks Start; a real Celery worker plays the tables on a real referee
    (house bots) and the bar advances without a reload until the tournament finishes."""
    # SQLite's in-memory test database: the worker, the live server and the test share it
    # across threads and writers collide ("database table is locked").
    need_postgresql("a worker, the live server and the test write at once")
    from referee_service.server import referee_in_thread
    from tests.celery_helpers import isolated_celery_worker
    from tests.web.factories import make_user
    from tournaments.services.accounts import bot_create
    from tournaments.services.tournaments import tournament_create, tournament_entrant_add

    settings.WEB_PROGRESS_POLL_MS = 200
    boss = make_user("boss", staff=True, password="boss-pass-123")
    bots = [bot_create(owner=boss, name=f"house-{p}-{i}", house_bot=p)[0]
            for i, p in enumerate(["random", "greedy", "heuristic", "random"])]
    t = tournament_create(organiser=boss, name="Live cup", format="round_robin",
                                   seats_per_table=4, games_per_table=12, cycles=3,
                                   move_time_ms=500, time_bank_ms=2000, rated=False)
    for b in bots:
        tournament_entrant_add(tournament=t, bot=b)

    page.goto(f"{live_server.url}/accounts/login/")
    page.fill("#id_username", "boss")
    page.fill("#id_password", "boss-pass-123")
    page.click("button[type=submit]")
    page.goto(f"{live_server.url}/tournaments/{t.slug}/")
    assert page.get_attribute("[role=progressbar]", "aria-valuenow") == "0"
    # record every value the bar takes, from the page itself
    page.evaluate("""() => { window.seen = []; const bar = document.getElementById('progress-bar');
        new MutationObserver(() => window.seen.push(bar.style.width)).observe(bar, {attributes: true}); }""")

    with referee_in_thread(organizer_token=settings.REFEREE_ORGANIZER_TOKEN) as referee:
        settings.REFEREE_TARGET = referee.target
        # Its own worker on a private queue, whatever Celery state earlier tests left.
        with isolated_celery_worker():
            page.click("text=Start now")
            page.wait_for_selector("#progress-panel")
            page.evaluate("""() => { window.seen = []; const bar = document.getElementById('progress-bar');
                new MutationObserver(() => window.seen.push(bar.style.width)).observe(bar, {attributes: true}); }""")
            page.wait_for_function("() => document.getElementById('progress-panel').dataset.status === 'finished'", timeout=120_000)
    seen = [float(w.rstrip("%")) for w in page.evaluate("window.seen")]
    assert seen[-1] == 100.0
    assert any(0 < v < 100 for v in seen), seen  # it advanced in steps, without a reload
    assert seen == sorted(seen)
    assert page.text_content("#games-done") == "36"
    assert page.text_content("#t-status") == "Finished"
    # the standings and tables were refreshed in place too
    page.wait_for_selector("body[data-refreshed]")
    page.wait_for_function("() => document.querySelectorAll('#tables .badge.done').length === 3")
    games = page.eval_on_selector_all("#standings tr[data-bot] td:nth-child(4)", "tds => tds.map(t => t.textContent)")
    assert games == ["36"] * 4
    # The progress line agrees with the rest of the page: no table "playing now" once finished,
    # and the same game count as the standings.
    page.wait_for_function("() => !/playing now/.test(document.getElementById('progress-label').innerText)")
    assert page.locator("#tables-running-part").is_hidden()
    assert page.text_content("#games-done") == "36"
    assert page.locator("text=Start now").count() == 0
    shot(page, "tournament-live-finished")
