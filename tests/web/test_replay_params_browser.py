"""The replay viewer in real Chromium ignores URL parameters it cannot read and keeps
drawing (once ?seat=%E0%A4%A threw URIError and the board stayed empty)."""

from __future__ import annotations

import os

import pytest

from tests.web.factories import load_replay, make_world

os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def hand(page, seat: int) -> list:
    return page.eval_on_selector_all(f'.seat[data-seat="{seat}"] .hand .card', "els => els.map(e => e.dataset.card)")


def step(page) -> int:
    return int(page.get_attribute("#replay-viewer", "data-step"))


@pytest.mark.parametrize(
    "query",
    [
        "?seat=%E0%A4%A",  # broken percent-encoding (the example)
        "?seat=%E0%A4%A&move=%",  # and a lone %
        "?move=%FF%FE&seat=1x",  # invalid UTF-8; digits followed by junk
        "?seat=%C2%B2&move=-3",  # a superscript two; a negative move
        "?seat=99&move=1e3",  # no such seat; not a plain number
        "?%=%&&=&seat",  # nothing readable at all
    ],
)
def test_malformed_parameters_are_ignored_and_the_game_is_drawn(live_server, page, query) -> None:
    # The `page` fixture fails the test on any JavaScript error, so an URIError fails it.
    replay = load_replay("game_4p.json")
    w = make_world(replay=replay, tables=1, games_per_table=1)
    page.goto(f"{live_server.url}/games/{w.games[0].id}/{query}")
    total = len(replay["moves"])
    page.wait_for_selector("#replay-viewer[data-step]")
    assert step(page) == total  # as with no parameters: the final position
    assert page.text_content("#move-status") == f"Move {total} / {total}"
    # No seat view: every hand is face up (the final position shows what was left).
    page.click("#btn-first")
    assert [len(hand(page, s)) for s in range(4)] == [13, 13, 13, 13]
    assert hand(page, 2) == replay["hands"][2]
    page.click("#btn-next")
    assert step(page) == 1 and page.url.endswith("?move=1")


def test_readable_parameters_still_work_beside_broken_ones(live_server, page) -> None:
    replay = load_replay("game_4p.json")
    w = make_world(replay=replay, tables=1, games_per_table=1)
    page.goto(f"{live_server.url}/games/{w.games[0].id}/?junk=%E0%A4%A&move=0&seat=1")
    assert step(page) == 0
    assert hand(page, 1) == replay["hands"][1]
    assert hand(page, 0) == [None] * 13  # seat 1's view: the others face down
