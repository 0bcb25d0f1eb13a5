"""The knockout page: each round's real table sizes in the header, the winner
in a banner, and — live, in real Chromium — the Cancel button gone and the winner shown
the moment the final ends, without a reload."""

from __future__ import annotations

import os

import pytest

from tests.needs import need_postgresql
from tests.tournaments.conftest import make_result
from tests.web.factories import make_user
from tournaments.models import Table, Tournament
from tournaments.services.accounts import bot_create
from tournaments.services.recording import table_game_record
from tournaments.services.tables import table_complete
from tournaments.services.tournaments import (
    tournament_create,
    tournament_entrant_add,
    tournament_schedule,
)

os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")


def play(table: Table, ranking: list[str]) -> None:
    names = [s.entrant.bot.name for s in table.seats.select_related("entrant__bot").order_by("seat")]
    n = len(names)
    for i in range(table.games_planned):
        seat_participants = [(s + i) % n for s in range(n)]
        order = sorted(range(n), key=lambda s: ranking.index(names[seat_participants[s]]))
        table_game_record(table_id=table.pk, result=make_result(i, order, seat_participants))


def knockout(organiser, count: int) -> Tournament:
    bots = [bot_create(owner=make_user(f"owner{i}"), name=f"k{i}")[0] for i in range(count)]
    t = tournament_create(organiser=organiser, name=f"KO {count}", format="knockout",
                                   seats_per_table=4, advance_per_table=2)
    for bot in bots:
        tournament_entrant_add(tournament=t, bot=bot)
    Tournament.objects.filter(pk=t.pk).update(status="scheduled")
    tournament_schedule(tournament_id=t.pk)
    t.refresh_from_db()
    return t


@pytest.mark.django_db
def test_header_shows_each_rounds_real_table_sizes_and_the_winner(client) -> None:
    org = make_user("org", staff=True)
    t = knockout(org, 5)
    html = client.get(f"/tournaments/{t.slug}/").content.decode()
    # Not "4 per table · 8 games per table": round 1 seats 3 and 2, the final 3.
    assert "round 1: tables of 3 and 2 players, 3 and 2 games · final: 3 players, 3 games (planned)" in html
    assert "4 per table" not in html
    assert "Round 1 <span class=\"small muted\">tables of 3, 2</span>" in html
    assert "Winner:" not in html
    for table in t.tables.filter(round=1):
        play(table, ["k4", "k3", "k2", "k1", "k0"])
    final_id = [table_complete(table_id=x.pk) for x in t.tables.filter(round=1)][-1].tables_to_play[0]
    play(Table.objects.get(pk=final_id), ["k2", "k4", "k3"])
    table_complete(table_id=final_id)
    html = client.get(f"/tournaments/{t.slug}/").content.decode()
    assert "round 1: tables of 3 and 2 players, 3 and 2 games · final: 3 players, 3 games</span>" in html
    assert "(planned)" not in html
    # A game rates in the pool of its table's size: the short tables in south-3 and south-2, said so.
    assert 'rated in <a href="/leaderboards/south-4/">south-4</a>' in html
    assert '(games at tables of 2: <a href="/leaderboards/south-2/">south-2</a>)' in html
    assert '(games at tables of 3: <a href="/leaderboards/south-3/">south-3</a>)' in html
    assert '<p class="winner-banner">Winner: <a href="/bots/k2/"><b>k2</b></a></p>' in html
    assert "Final <span class=\"small muted\">3 players</span>" in html
    # The standings rank by the round reached first, as the API does.
    ranks = [row for row in html.split('<tr data-bot="')[1:]]
    assert [r.split('"', 1)[0] for r in ranks][:3] == ["k2", "k4", "k3"]


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_cancel_disappears_and_the_winner_appears_when_the_final_ends(live_server, page, settings) -> None:
    need_postgresql("the live server and the test write at once")
    settings.WEB_PROGRESS_POLL_MS = 200
    boss = make_user("boss", staff=True, password="boss-pass-123")
    t = knockout(boss, 4)  # one table of 4: the final
    final = t.tables.get()
    play(final, ["k1", "k0", "k3", "k2"])

    page.goto(f"{live_server.url}/accounts/login/")
    page.fill("input[name=username]", "boss")
    page.fill("input[name=password]", "boss-pass-123")
    page.click("main button[type=submit]")
    page.goto(f"{live_server.url}/tournaments/{t.slug}/")
    assert page.locator("#organiser-actions button.danger").count() == 1
    assert page.locator(".winner-banner").count() == 0
    page.evaluate("() => { window.sameDocument = true; }")

    table_complete(table_id=final.pk)  # the final ends while the page is open

    page.wait_for_function("() => document.getElementById('t-status').textContent === 'Finished'")
    page.wait_for_selector(".winner-banner", timeout=15_000)
    assert page.text_content(".winner-banner") == "Winner: k1"
    page.wait_for_function("() => document.querySelectorAll('#organiser-actions button.danger').length === 0")
    assert page.evaluate("() => window.sameDocument") is True  # updated in place, no reload
    assert page.locator("#bracket .entrant.winner").all_text_contents()[0].strip().startswith("▸ k1")
