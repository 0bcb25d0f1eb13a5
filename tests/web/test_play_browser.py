"""A person plays a casual table in real Chromium against house bots, on a real referee
through a real Celery worker (the seat gateway speaks the bot protocol for them), the site
served over ASGI (uvicorn) so both pages follow the table over server-sent events: mouse and
keys, a timeout, an illegal answer sent by hand, a reload that resumes the seat, and a
second browser (another user) watching live, each public move as it is made. Over the whole
table, nothing the two pages were sent (the HTML, every JSON answer, every event of their
streams) holds a card of another seat while its game plays (for the watcher: of any seat)."""

from __future__ import annotations

import contextlib
import json
import os
import re

import pytest

from tests.needs import need_postgresql
from tests.web.cards import cards_in as _cards_in
from tests.web.conftest import _open, shot

os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _sign_in(page, url: str, username: str, password: str = "pw-for-tests-123") -> None:
    page.goto(f"{url}/accounts/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", password)
    page.click("main button[type=submit]")


def _wait_move_or_end(page, last: str) -> str:
    """Wait for a new move request (its id other than `last`) or the table's end."""
    page.wait_for_function(
        "(last) => { const r = document.getElementById('play-table');"
        " return r.dataset.status === 'done' || r.dataset.status === 'failed' || (r.dataset.moveId && r.dataset.moveId !== last); }",
        arg=last, timeout=60_000)
    status = page.get_attribute("#play-table", "data-status")
    return status if status in ("done", "failed") else "move"


#: Every message a page's EventSource receives, kept for the test (the page's own listener
#: runs as well).
RECORD_SSE = """(() => {
  const Original = window.EventSource;
  window.__sse = [];
  function Recorded(url, options) {
    const source = new Original(url, options);
    source.addEventListener("message", (e) => window.__sse.push(e.data));
    return source;
  }
  Recorded.prototype = Original.prototype;
  window.EventSource = Recorded;
})();"""


def _wait_watcher_at(watcher, game: int, n: int) -> None:
    """The watcher's page has shown public move `n` of game `game` (it may be further on
    by now) and lists the latest move it was sent on top."""
    watcher.wait_for_function(
        "([g, n]) => { const r = document.getElementById('play-table');"
        " const top = document.querySelector('#round-plays li[data-n]');"
        " return (+r.dataset.liveGame > g || (r.dataset.liveGame === String(g) && +r.dataset.liveMoves >= n))"
        " && (!top || top.dataset.n === r.dataset.liveMoves); }",
        arg=[game, n], timeout=15_000)


def test_a_person_plays_a_whole_table_against_house_bots(asgi_server, browser_instance, settings):
    need_postgresql("a worker, the live server and the test write at once")
    settings.ALLOWED_HOSTS = ["127.0.0.1", "localhost"]

    class live_server:
        url = asgi_server
    from tests.celery_helpers import isolated_celery_worker
    from tests.platform_referee import platform_referee
    from tests.web.factories import make_user
    from tournaments.models import CasualGame, CasualTable
    from tournaments.services.accounts import bot_create

    boss = make_user("boss", staff=True)
    make_user("alice")
    make_user("mallory")
    for policy in ("greedy", "heuristic", "random"):
        bot_create(owner=boss, name=f"house-{policy}", house_bot=policy)

    ctx, page, errors = _open(browser_instance, viewport={"width": 1280, "height": 900})
    wctx, watcher, watcher_errors = _open(browser_instance, viewport={"width": 390, "height": 844}, is_mobile=True)
    mctx, mallory, _ = _open(browser_instance, viewport={"width": 1280, "height": 900})
    for c in (ctx, wctx):
        c.add_init_script(RECORD_SSE)
    for pg in (page, watcher, mallory):
        pg.set_default_timeout(30_000)  # the worker, the referee and two browsers share the machine
    seen: list[tuple[str, str]] = []  # (whose page, body) of every answer the pages fetched

    def keep(who):
        def on_response(response):
            if ("/play/" in response.url and response.request.method == "GET"
                    and not response.headers.get("content-type", "").startswith("text/event-stream")):
                with contextlib.suppress(Exception):  # a stream cut short by navigation
                    seen.append((who, response.text()))
        return on_response

    page.on("response", keep("alice"))
    watcher.on("response", keep("watcher"))
    try:
        with platform_referee(settings), isolated_celery_worker():
            _sign_in(page, live_server.url, "alice")
            page.goto(f"{live_server.url}/play/")
            assert page.locator(".badge.casual").first.is_visible()
            page.select_option("#id_preset", "south")
            page.select_option("#id_opponent_1", label="house-greedy (house)")
            page.select_option("#id_opponent_2", label="house-heuristic (house)")
            page.select_option("#id_opponent_3", label="house-random (house)")
            page.fill("#id_games", "2")
            page.fill("#id_move_time_s", "8")
            page.fill("#id_time_bank_s", "0")
            page.click("#play-start")
            page.wait_for_url(re.compile(r"/play/\d+/$"))
            table_id = int(page.url.rstrip("/").rsplit("/", 1)[1])
            move_url = f"{live_server.url}/play/{table_id}/move/"

            _sign_in(watcher, live_server.url, "mallory")  # another user watching (no seat of theirs)
            watcher.goto(f"{live_server.url}/play/{table_id}/")
            watcher.wait_for_selector("#play-table[data-live=sse]")
            assert page.get_attribute("#play-table", "data-live") == "sse"
            assert "Watching live" in watcher.text_content("#watching")
            _sign_in(mallory, live_server.url, "mallory")
            followed: set[tuple[int, int]] = set()  # (game, move) the watcher was seen showing
            bot_plays_seen = 0

            moves = timeouts = reloads = 0
            last = ""
            refused = False
            while True:
                if _wait_move_or_end(page, last) != "move":
                    break
                last = page.get_attribute("#play-table", "data-move-id") or ""
                moves += 1
                # the person is asked: the table's latest public move now, whoever made it
                # (the other seats' plays), which the watcher must show (checked once this
                # move is settled, not to eat the person's clock)
                live = CasualTable.objects.get(pk=table_id).live_state or {}
                public = CasualTable.objects.get(pk=table_id).public_state or {}
                expect = None
                if live.get("moves") and live.get("game_index") == public.get("game_index"):
                    expect = (live["game_index"], live["moves"][-1]["n"], public.get("person_seat"))

                def watcher_follows(expect=expect):
                    nonlocal bot_plays_seen
                    if expect is None:
                        return
                    game, n, person_seat = expect
                    _wait_watcher_at(watcher, game, n)
                    followed.add((game, n))
                    bot_plays_seen += watcher.locator(
                        f"#round-plays li[data-n]:not([data-seat='{person_seat}'])").count() > 0
                if not refused:
                    # an illegal answer, sent by hand: refused with the reason, the seat still waits
                    answer = page.evaluate("""async (url) => {
                        const root = document.getElementById('play-table');
                        const s = await (await fetch(root.dataset.stateUrl)).json();
                        const r = await fetch(url, {method: 'POST', headers: {'Content-Type': 'application/json', 'X-CSRFToken': root.dataset.csrf},
                            body: JSON.stringify({move_id: s.seat.move_id, cards: ['2H', '2S', '3S']})});
                        return [r.status, await r.json(), s.seat.move_id]; }""", move_url)
                    assert answer[0] == 400 and "is not a legal play now" in answer[1]["error"], answer
                    # another user cannot act for this seat: with their own CSRF token, the table is not theirs
                    mallory.goto(f"{live_server.url}/play/")
                    theirs = mallory.evaluate("""async ([url, id]) => {
                        const token = document.querySelector('input[name=csrfmiddlewaretoken]').value;
                        const r = await fetch(url, {method: 'POST', headers: {'Content-Type': 'application/json', 'X-CSRFToken': token},
                            body: JSON.stringify({move_id: id, pass: true})});
                        const n = await fetch(url, {method: 'POST', headers: {'Content-Type': 'application/json'}, body: '{}'});
                        return [r.status, (await r.json()).error, n.status]; }""", [move_url, answer[2]])
                    assert theirs[0] == 404 and "no such table of yours" in theirs[1] and theirs[2] == 403, theirs
                    refused = True
                    page.wait_for_selector("#move-error", state="hidden")
                if moves == 2 and reloads == 0:
                    before = page.text_content("#hand")
                    page.reload()
                    page.wait_for_function("(last) => document.getElementById('play-table').dataset.moveId === last", arg=last)
                    assert page.text_content("#hand") == before  # the same seat, the same hand, the same move asked
                    reloads += 1
                if moves == 3 and timeouts == 0:
                    assert page.text_content("#clock").startswith("⏱")
                    # no answer: the referee's clock runs out, a strike, its safe move played
                    page.wait_for_function("() => document.getElementById('timeouts').textContent.includes('1 timeout')", timeout=30_000)
                    timeouts += 1
                    watcher_follows()
                    continue
                options = page.locator("#plays .play-option")
                if options.count() and moves % 2:
                    options.first.click()  # the mouse: a play offered, then Play
                    page.click("#btn-play")
                elif options.count():
                    page.keyboard.press("1")  # the keys: the first play offered, Enter
                    page.keyboard.press("Enter")
                else:
                    page.keyboard.press("p")
                page.wait_for_function("(last) => document.getElementById('play-table').dataset.moveId !== last", arg=last)
                watcher_follows()
                if moves == 4:
                    # the watcher sees the table move: names, card counts, the plays, no hand
                    watcher.wait_for_selector("#seats .play-seat")
                    assert watcher.locator("#seats .seat-count").count() == 4
                    assert watcher.query_selector("#hand") is None
            assert page.get_attribute("#play-table", "data-status") == "done", page.text_content("#play-status")
            page.wait_for_selector("#game-results .game-result >> nth=1")
            shot(page, "play-table-finished")
            watcher.wait_for_function("() => document.getElementById('play-table').dataset.status === 'done'")
            shot(watcher, "play-table-watcher-phone")
            assert timeouts == 1 and reloads == 1 and refused, (errors, [b[:700] for w, b in seen if 'move_id' in b][:3])
            assert len(followed) >= 3 and bot_plays_seen >= 2, (followed, bot_plays_seen)
            assert watcher.get_attribute("#play-table", "data-live") == "sse"  # never fell back to polling
            for who, pg in (("alice", page), ("watcher", watcher)):
                events = pg.evaluate("window.__sse")
                assert events, who
                seen.extend((who, e) for e in events)  # checked below with the JSON answers
            assert "→" in page.text_content("#game-results")  # payments, each with its reason
            # the replay of each game, linked from the page
            page.click("#game-results .game-result >> nth=0 >> text=replay")
            page.wait_for_selector("#move-list li")
    finally:
        for c in (ctx, wctx, mctx):
            c.close()
    # the one refused answer sent by hand is the only failed request the console reports
    assert [e for e in errors if "400 (Bad Request)" not in e] == [] and not watcher_errors, (errors, watcher_errors)
    assert len(errors) <= 1

    table = CasualTable.objects.get(pk=table_id)
    assert table.status == CasualTable.Status.DONE and sum(table.totals) == 0
    games = list(CasualGame.objects.filter(table=table).order_by("index"))
    assert len(games) == 2
    # nothing either page fetched held a card of another seat before it was played
    person = next(s.index for s in table.seats.all() if s.bot is None)
    for game in games:
        replay = json.loads(game.replay_text)
        seat = game.seat_participants.index(person)
        dealt = {seat_: set(h) for seat_, h in enumerate(replay["hands"])}
        others = set().union(*(h for s, h in dealt.items() if s != seat))
        played = {c for m in replay["moves"] for c in m.get("cards", [])}
        secret = others - played  # never public during the game
        for who, body in seen:
            if not body.startswith("{") or '"results"' not in body:
                continue
            state = json.loads(body)
            if state.get("status") == "done":
                continue
            live = state.get("live") or {}
            if live.get("game_index") == game.index:  # the moves made so far, nothing else
                n = live["moves"][-1]["n"]
                public = [m for m in replay["moves"] if not (m.get("pass") and m.get("offer"))][:n]
                shown = _cards_in({k: v for k, v in live.items() if k != "previous"}, set())
                assert shown <= {c for m in public for c in m.get("cards", [])}, who
            if (state.get("public") or {}).get("game_index") != game.index:
                continue
            assert not _cards_in(state.get("public"), set()) & secret, who
            if who == "watcher":  # the person's hand is as hidden from a watcher as the bots'
                assert not _cards_in(state.get("public"), set()) & (dealt[seat] - played), who
            if who == "watcher":
                assert state["seat"] is None
            else:
                assert _cards_in(state.get("seat") or {}, set()) <= dealt[seat] | played
    assert CasualTable.objects.filter(owner__username="mallory").count() == 0


def test_an_offer_has_its_own_prompt_and_is_declined_by_key_at_phone_width(live_server, phone_page):
    """An out-of-turn chop offered to the person (the seat state as the gateway writes it):
    its own prompt, a Decline button instead of Pass, `P` declines; the page fits 390 px."""
    import time

    from tests.web.factories import make_user
    from tournaments.models import CasualTable
    from tournaments.services.accounts import bot_create
    from tournaments.services.casual import casual_table_create

    alice = make_user("alice")
    house = bot_create(owner=make_user("boss", staff=True), name="house-random", house_bot="random")[0]
    table = casual_table_create(user=alice, preset="south_extended", bot_ids=[house.pk], games=1,
                                move_time_ms=30_000, time_bank_ms=0)
    CasualTable.objects.filter(pk=table.pk).update(
        status=CasualTable.Status.RUNNING,
        public_state={"names": ["alice", "house-random"], "card_counts": [12, 11], "to_move": 0,
                      "person_seat": 0, "game_index": 0, "history": [{"seat": 1, "cards": ["3S", "3C", "4S", "4C", "5S", "5C"]}],
                      "table": {"seat": 1, "kind": "pair_sequence", "cards": ["3S", "3C", "4S", "4C", "5S", "5C"]}},
        seat_state={"move_id": 41, "hand": ["6S", "6C", "7S", "7C", "8S", "8C", "9S", "9C", "JD", "QD", "KD", "AH"],
                    "legal_plays": [["6S", "6C", "7S", "7C", "8S", "8C", "9S", "9C"]], "can_pass": True,
                    "offer": "out_of_turn_chop", "time_left_ms": 30_000, "time_bank_ms": 0, "move_time_ms": 30_000,
                    "deadline_unix_ms": int(time.time() * 1000) + 30_000, "timeouts": 0})
    phone_page.set_default_timeout(30_000)  # a worker-free page, but a loaded machine
    _sign_in(phone_page, live_server.url, "alice")
    phone_page.goto(f"{live_server.url}/play/{table.pk}/")
    phone_page.wait_for_selector("#plays .play-option")
    assert "chop out of turn" in phone_page.text_content("#prompt")
    assert phone_page.text_content("#btn-pass") == "Decline (P)"
    assert phone_page.locator("#hand .card").count() == 12
    assert phone_page.evaluate("document.documentElement.scrollWidth - window.innerWidth") <= 1
    shot(phone_page, "play-offer-phone")
    phone_page.keyboard.press("p")
    phone_page.wait_for_function("() => document.getElementById('play-table').dataset.moveId === ''")
    table.refresh_from_db()
    assert table.answer == {"move_id": 41, "pass": True, "cards": []}
