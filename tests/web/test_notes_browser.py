"""The replay viewer shows a signed-in owner their own bot's notes, with a switch to hide
them, and nobody else any note (docs/web.md, "Move notes"), in real headless Chromium."""

from __future__ import annotations

import os

import pytest

from bots_sdk.rules.notes import with_notes
from tests.web.conftest import shot
from tests.web.factories import load_replay, make_user, make_world
from tournaments.models import Bot, GameSeat

os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def shown_notes(page) -> list[str]:
    return page.eval_on_selector_all(
        "#move-list .move-note", "els => els.filter(e => e.offsetParent !== null).map(e => e.textContent)")


def test_the_owner_sees_their_bots_notes_and_can_hide_them(live_server, page):
    replay = load_replay("game_4p.json")
    noted = with_notes(replay, [f"seat {m['seat']} thinks <b>{i}</b>" for i, m in enumerate(replay["moves"])])
    w = make_world(replay=noted, tables=1, games_per_table=1)
    game = w.games[0]
    stranger = make_user("stranger")
    mine = GameSeat.objects.get(game=game, seat=2).bot
    Bot.objects.filter(pk__in=GameSeat.objects.filter(game=game).exclude(seat=2).values("bot")).update(owner=stranger)
    expected = [f"seat 2 thinks <b>{i}</b>" for i, m in enumerate(replay["moves"]) if m["seat"] == 2]
    assert mine.owner.username == "owner" and expected

    page.goto(f"{live_server.url}/games/{game.id}/")  # anonymous: no note, no switch, no fork line
    assert shown_notes(page) == [] and page.query_selector("#show-notes") is None
    assert page.query_selector("#fork-line") is None

    page.goto(f"{live_server.url}/accounts/login/")
    page.fill("input[name=username]", "owner")
    page.fill("input[name=password]", "pw-for-tests-123")
    page.click("main button[type=submit]")
    page.goto(f"{live_server.url}/games/{game.id}/")
    assert shown_notes(page) == expected  # as text: the markup in a note is not obeyed
    assert page.query_selector("#move-list .move-note b") is None
    shot(page, "game-owner-notes-desktop")
    page.uncheck("#show-notes")
    assert shown_notes(page) == []
    page.check("#show-notes")
    assert shown_notes(page) == expected
    # "fork from here": the command for the position before the next move, for the owner's seat
    page.goto(f"{live_server.url}/games/{game.id}/?move=4")
    assert page.text_content("#fork-line") == (
        f"tienlen-bot fork {live_server.url}/games/{game.id}/ --move 5 --seat 2 --bot my_bot.py")
    page.keyboard.press("ArrowRight")
    assert "--move 6 --seat 2 " in page.text_content("#fork-line")
    page.keyboard.press("End")
    assert not page.is_visible("#fork-line")  # nothing to fork after the last move
