"""An anonymous visitor watches a running casual table in real Chromium over server-sent
events (the site over ASGI, as deployed): listed as playing on /play/ and the home page, its
page shows each public move as the worker stores it, one after another, with the card counts
and whose move it is, and no hand (docs/web.md, "Play")."""

from __future__ import annotations

import os

import pytest

from tests.web.conftest import shot

os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
pytestmark = [pytest.mark.browser]


def test_an_anonymous_watcher_sees_each_play_appear_one_by_one(asgi_server, page, settings):
    from bots_sdk.cards import parse_cards
    from bots_sdk.protocol.tienlen.v1 import organizer_pb2 as org
    from tests.web.factories import make_user
    from tournaments.models import CasualTable
    from tournaments.play.referee import LiveMove
    from tournaments.services.accounts import bot_create
    from tournaments.services.casual import casual_live_move, casual_table_create

    settings.ALLOWED_HOSTS = ["127.0.0.1", "localhost"]
    alice = make_user("alice")
    boss = make_user("boss", staff=True)
    bots = [bot_create(owner=boss, name=f"house-{p}", house_bot=p)[0] for p in ("greedy", "heuristic", "random")]
    table = casual_table_create(user=alice, preset="south", bot_ids=[b.pk for b in bots], games=1,
                                move_time_ms=30_000, time_bank_ms=0)
    CasualTable.objects.filter(pk=table.pk).update(
        status=CasualTable.Status.RUNNING,
        public_state={"names": ["alice", "house-greedy", "house-heuristic", "house-random"],
                      "card_counts": [13, 13, 13, 13], "to_move": None, "person_seat": 0,
                      "game_index": 0, "history": []},
        seat_state={"move_id": None, "hand": ["3S", "4S", "4C", "9H"]})

    page.goto(f"{asgi_server}/")
    page.click(f"#casual a[href='/play/{table.pk}/']")  # the home page lists it as playing
    page.wait_for_selector("#play-table[data-live=sse]")
    assert page.query_selector("#hand") is None and "Watching live" in page.text_content("#watching")
    counts = [13, 13, 13, 13]
    plays = [(1, ["3C"]), (2, ["5D"]), (3, []), (0, ["9H"]), (1, ["2S"])]
    for n, (seat, cards) in enumerate(plays, start=1):
        counts[seat] -= len(cards)
        indices = [c.index for c in parse_cards(cards)]
        event = org.LiveMove(game_index=0, number=n, seat=seat, passed=not cards, cards=indices,
                             card_counts=counts, to_move=(seat + 1) % 4, table_cards=indices or [],
                             table_kind="single" if cards else "", table_seat=seat if cards else None)
        casual_live_move(table_id=table.pk, move=LiveMove.from_event(event))
        page.wait_for_function("(n) => document.getElementById('play-table').dataset.liveMoves === String(n)", arg=n)
        listed = page.locator("#round-plays li[data-n]")
        assert listed.count() == n  # each play added, the earlier ones still listed
        top = listed.first
        assert top.get_attribute("data-n") == str(n) and top.get_attribute("data-seat") == str(seat)
        assert ("pass" in top.text_content()) if not cards else all(
            page.locator(f"#round-plays li[data-n='{n}'] .card[data-card='{c}']").count() == 1 for c in cards)
        assert page.text_content(f"#seats .play-seat[data-seat='{seat}'] .seat-count") == f"{counts[seat]} cards"
        assert "to-move" in page.get_attribute(f"#seats .play-seat[data-seat='{(seat + 1) % 4}']", "class")
    assert "4S" not in page.content()  # the person's hand, never on the watcher's page
    shot(page, "play-table-watched-live")
    page.goto(f"{asgi_server}/play/")
    assert page.locator(f"#casual-live a[href='/play/{table.pk}/']").count() == 1
