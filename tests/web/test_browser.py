"""Real headless Chromium against the live server: the replay viewer and live progress.

Screenshots of every page at desktop and phone widths go to test-artifacts/web/.
"""

from __future__ import annotations

import os

import pytest

from tests.web.conftest import shot
from tests.web.factories import load_replay, make_world
from web.replay_frames import final_places

os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def hand(page, seat: int) -> list[str]:
    return page.eval_on_selector_all(f'.seat[data-seat="{seat}"] .hand .card', "els => els.map(e => e.dataset.card)")


def table_cards(page) -> str:
    return page.get_attribute("#table-cards", "data-cards")


def step(page) -> int:
    return int(page.get_attribute("#replay-viewer", "data-step"))


def test_replay_viewer_steps_with_buttons_keys_and_url(live_server, page):
    replay = load_replay("game_4p.json")
    w = make_world(replay=replay, tables=1, games_per_table=1)
    game = w.games[0]
    url = f"{live_server.url}/games/{game.id}/"
    page.goto(url)
    total = len(replay["moves"])
    # a finished game opens on its final position with the result
    assert step(page) == total
    assert page.is_visible("#result-panel")
    assert page.text_content("#move-status") == f"Move {total} / {total}"
    shot(page, "game-final-desktop")

    # back to the deal: four full hands face up, empty table
    page.click("#btn-first")
    assert step(page) == 0
    assert [len(hand(page, s)) for s in range(4)] == [13, 13, 13, 13]
    assert hand(page, 2) == replay["hands"][2]
    assert table_cards(page) == ""
    assert not page.is_visible("#result-panel")
    assert "to-move" in page.get_attribute('.seat[data-seat="2"]', "class")  # 3S holder leads

    # one step with the button: seat 2 plays 3S
    page.click("#btn-next")
    assert step(page) == 1
    assert table_cards(page) == "3S"
    assert "3S" not in hand(page, 2) and len(hand(page, 2)) == 12
    assert "to-move" in page.get_attribute('.seat[data-seat="3"]', "class")
    assert page.text_content("#to-move") == f"next: {w.bots[3].name}"

    # keyboard: right arrow twice, left once
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowLeft")
    assert step(page) == 2
    assert table_cards(page) == "4H"
    assert page.url.endswith("?move=2")

    # End / Home keys
    page.keyboard.press("End")
    assert step(page) == total
    page.keyboard.press("Home")
    assert step(page) == 0

    # the move list jumps to any move; the chop at move 26 shows its chain
    page.click('#move-list li[data-step="26"]')
    assert step(page) == 26
    assert table_cards(page) == "5S 5C 5D 5H"
    assert "Chop chain" in page.text_content("#chop-chain")
    # each seat shows its latest play of this round: seat 1's 2C was chopped by seat 0's quads
    last = page.eval_on_selector_all('.seat[data-seat="1"] .last-play .card', "els => els.map(e => e.dataset.card)")
    assert last == ["2C"]
    assert "2C" not in " ".join(hand(page, 1))
    shot(page, "game-chop-desktop")

    # a link to a move opens at that move
    page.goto(url + "?move=12")
    assert step(page) == 12
    assert table_cards(page) == "AS AC"
    # the round ended after move 11 (everyone passed the 2D): table was clear at move 11
    page.keyboard.press("ArrowLeft")
    assert table_cards(page) == ""


def test_replay_viewer_play_pause_and_seat_view(live_server, page):
    replay = load_replay("game_4p.json")
    w = make_world(replay=replay, tables=1, games_per_table=1)
    page.goto(f"{live_server.url}/games/{w.games[0].id}/?move=0&seat=1")
    # only seat 1's cards are visible; the others are face down with their counts
    assert hand(page, 1) == replay["hands"][1]
    assert hand(page, 0) == [None] * 13
    assert page.get_attribute('.seat[data-seat="1"]', "data-pos") == "0"  # the viewer sits at the bottom
    shot(page, "game-seat-view-desktop")
    # play at top speed, then pause
    page.select_option("#speed", "4")
    page.click("#btn-play")
    page.wait_for_function("() => document.getElementById('replay-viewer').dataset.step >= 5")
    page.keyboard.press(" ")
    paused_at = step(page)
    page.wait_for_timeout(400)
    assert step(page) == paused_at >= 5
    assert page.url.endswith(f"?move={paused_at}&seat=1")


def test_pages_look_right_on_a_phone(live_server, phone_page):
    replay = load_replay("game_4p.json")
    w = make_world(replay=replay, tables=2, games_per_table=2)
    page = phone_page
    for name, path in [
        ("home", "/"),
        ("tournament", f"/tournaments/{w.tournament.slug}/"),
        ("leaderboard", f"/leaderboards/{w.pool.slug}/"),
        ("bot", f"/bots/{w.bots[0].name}/"),
        ("deals", f"/tournaments/{w.tournament.slug}/deals/"),
        ("fair-play", "/fair-play/"),
        ("game", f"/games/{w.games[0].id}/?move=26"),  # last: the viewer is tapped below
    ]:
        page.goto(live_server.url + path)
        # nothing overflows the phone's width (tables scroll inside their own box)
        # (a mobile browser widens its layout viewport to fit wide content, so compare
        # with the device's width, not window.innerWidth)
        overflow = page.evaluate("document.documentElement.scrollWidth - screen.width")
        assert overflow <= 1, f"{name} is {overflow}px wider than the phone"
        shot(page, f"{name}-phone")
    assert page.is_visible("#btn-next")
    page.tap("#btn-next")
    assert step(page) == 27


def test_desktop_screenshots(live_server, page):
    replay = load_replay("game_4p.json")
    w = make_world(replay=replay, tables=3, games_per_table=2)
    make_world(replay=replay, tables=7, games_per_table=2, fmt="knockout", slug="ko-cup", bots=16)
    for name, path in [
        ("home", "/"),
        ("tournament", f"/tournaments/{w.tournament.slug}/"),
        ("knockout", "/tournaments/ko-cup/"),
        ("leaderboard", f"/leaderboards/{w.pool.slug}/"),
        ("bot", f"/bots/{w.bots[0].name}/"),
    ]:
        page.goto(live_server.url + path)
        assert page.title()
        shot(page, f"{name}-desktop")



def test_frozen_player_and_payments_are_shown(live_server, page):
    replay = load_replay("game_4p_frozen.json")
    w = make_world(replay=replay, tables=1, games_per_table=1, slug="frozen-cup")
    page.goto(f"{live_server.url}/games/{w.games[0].id}/")
    frozen_seat = replay["result"]["frozen"][0]
    tags = page.text_content(f'.seat[data-seat="{frozen_seat}"] .seat-tags')
    assert "frozen" in tags and "-5 pts" in tags
    # The final position gives each seat its place in the result (not the order out).
    places = final_places(replay["result"], 4)
    for seat in range(4):
        assert f"place {places[seat]}" in page.text_content(f'.seat[data-seat="{seat}"] .seat-tags')
    payments = page.text_content("#payments")
    assert "frozen (cóng)" in payments and "stuck with 2s or bombs" in payments
    # the badge appears from the move where the first player went out, not before
    first_out = next(i + 1 for i, m in enumerate(page.evaluate(
        "JSON.parse(document.getElementById('replay-data').textContent).moves")) if m.get("out") == 1)
    page.goto(f"{live_server.url}/games/{w.games[0].id}/?move={first_out - 1}")
    assert "frozen" not in page.text_content(f'.seat[data-seat="{frozen_seat}"] .seat-tags')
    page.keyboard.press("ArrowRight")
    assert "frozen" in page.text_content(f'.seat[data-seat="{frozen_seat}"] .seat-tags')
    shot(page, "game-frozen-desktop")


def test_the_token_page_commands_fit_a_1280px_window(live_server, page):
    """The run command (token, bot file, referee address) is shown whole, wrapped if need be,
    inside its panel: at 1280 px it used to run out of the box."""
    from tests.web.factories import make_user

    make_user("ann")
    page.goto(f"{live_server.url}/accounts/login/")
    page.fill("input[name=username]", "ann")
    page.fill("input[name=password]", "pw-for-tests-123")
    page.click("main button[type=submit]")
    page.goto(f"{live_server.url}/me/bots/new/")
    page.fill("input[name=name]", "ann-bot-with-a-rather-long-name")
    page.click("main button[type=submit]")
    for box in ("#run-command", "#install-command", "#bot-token"):
        hidden = page.eval_on_selector(box, "e => e.scrollWidth - e.clientWidth")
        assert hidden <= 0, f"{box}: {hidden}px of the text is cut off"
        inside = page.eval_on_selector(
            box, "e => e.getBoundingClientRect().right <= e.closest('.panel').getBoundingClientRect().right"
        )
        assert inside, f"{box} runs out of its panel"
    assert "tienlen-bot run" in page.text_content("#run-command")
    shot(page, "bot-token-1280")


def test_the_standings_picture_in_chromium(live_server, page):
    """The SVG renders: one row per bot in the table's order, each dot inside its interval,
    and the dots ordered by mean points per game like the table's column."""
    from tests.web.factories import make_world

    w = make_world(replay=load_replay("game_4p.json"), tables=4, games_per_table=3, bots=6)
    page.goto(f"{live_server.url}/tournaments/{w.tournament.slug}/")
    chart = page.locator("#standings-chart svg")
    assert chart.is_visible()
    box = chart.bounding_box()
    assert box["width"] > 600 and box["height"] > 100
    drawn = page.eval_on_selector_all("#standings-chart g.bar", "gs => gs.map(g => g.dataset.bot)")
    table = page.eval_on_selector_all("#standings tbody tr", "rs => rs.map(r => r.dataset.bot)")
    assert drawn == table
    geometry = page.eval_on_selector_all(
        "#standings-chart g.bar",
        """gs => gs.map(g => {
            const dot = g.querySelector('circle.mean').getBoundingClientRect();
            const bar = g.querySelector('line.ci');
            const b = bar ? bar.getBoundingClientRect() : null;
            return {x: dot.x + dot.width / 2, low: b && b.left, high: b && b.right};
        })""",
    )
    for g in geometry:
        if g["low"] is not None:
            assert g["low"] - 1 <= g["x"] <= g["high"] + 1
    shot(page, "tournament-standings-chart")
