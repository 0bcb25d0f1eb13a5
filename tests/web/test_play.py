"""Casual tables' trust boundaries (docs/web.md, "Play"): consent, ownership, CSRF, the
answers checked against the engine's legal plays, and — over whole games on a real referee,
every preset — no card of another seat in anything a page is sent while its game plays."""

from __future__ import annotations

import json
import threading
import time

import pytest
from django.test import Client

from tests.web.cards import cards_in as _cards_in
from tests.web.factories import make_user
from tournaments.models import Bot, CasualGame, CasualSeat, CasualTable
from tournaments.services import casual as casual_services
from tournaments.services.accounts import bot_create


def _client(user=None, *, csrf: bool = False) -> Client:
    client = Client(enforce_csrf_checks=csrf)
    if user is not None:
        client.force_login(user)
    return client


@pytest.fixture
def people(db):
    boss = make_user("boss", staff=True)
    alice, bob, mallory = make_user("alice"), make_user("bob"), make_user("mallory")
    house = bot_create(owner=boss, name="house-random", house_bot="random")[0]
    bobs = bot_create(owner=bob, name="bobs-bot")[0]
    return {"alice": alice, "bob": bob, "mallory": mallory, "house": house, "bobs": bobs}


def _new_table(user, bots, **kw) -> CasualTable:
    args = {"preset": "south", "games": 1, "move_time_ms": 10_000, "time_bank_ms": 0, **kw}
    return casual_services.casual_table_create(user=user, bot_ids=[b.pk for b in bots], **args)


def test_a_bot_that_declined_casual_games_never_gets_one(people):
    alice, bob, bobs = people["alice"], people["bob"], people["bobs"]
    assert bobs.casual_games is False  # off by default
    response = _client(alice).post("/play/", {"preset": "south", "opponent": [bobs.pk], "games": 1,
                                              "move_time_s": 30, "time_bank_s": 60})
    assert response.status_code == 400
    assert b"does not accept casual games" in response.content
    assert not CasualTable.objects.exists()
    # it is not even offered on the play page, nor is "play against this bot" on its page
    assert b"bobs-bot" not in _client(alice).get("/play/").content
    assert b'id="play-against"' not in _client(alice).get("/bots/bobs-bot/").content
    # its owner may always seat it
    assert _new_table(bob, [bobs]).players == 2
    # consent given, then withdrawn before the table starts: the worker seats nobody
    casual_services.casual_bot_consent(user=bob, bot=bobs, accept=True)
    assert b'id="play-against"' in _client(alice).get("/bots/bobs-bot/").content
    table = _new_table(alice, [bobs])
    casual_services.casual_bot_consent(user=bob, bot=bobs, accept=False)
    assert casual_services.casual_start(table_id=table.pk) is None
    table.refresh_from_db()
    assert table.status == CasualTable.Status.FAILED and "no longer accepts casual games" in table.detail


def test_only_the_owner_switches_consent_and_only_with_csrf(people):
    bob, mallory, bobs = people["bob"], people["mallory"], people["bobs"]
    assert _client(mallory).post("/me/bots/bobs-bot/casual/", {"accept": "1"}).status_code == 404
    assert _client(bob, csrf=True).post("/me/bots/bobs-bot/casual/", {"accept": "1"}).status_code == 403
    assert _client().post("/me/bots/bobs-bot/casual/", {"accept": "1"}).status_code == 302  # to sign in
    assert Bot.objects.get(pk=bobs.pk).casual_games is False
    assert _client(bob).post("/me/bots/bobs-bot/casual/", {"accept": "1"}).status_code == 302
    assert Bot.objects.get(pk=bobs.pk).casual_games is True
    page = _client(bob).get("/bots/bobs-bot/").content
    assert b"Stop accepting casual games" in page and b"People vs bots" in page


def _asked(table: CasualTable, **seat) -> CasualTable:
    table.status = CasualTable.Status.RUNNING
    table.public_state = {"names": ["alice", "house-random"], "card_counts": [13, 13], "history": [],
                          "to_move": 0, "person_seat": 0, "game_index": 0}
    table.seat_state = {"move_id": 7, "hand": ["3S", "4S", "4C", "9H"], "can_pass": False,
                        "legal_plays": [["3S"], ["4S"], ["4C"], ["9H"], ["4S", "4C"]], "offer": None,
                        "deadline_unix_ms": int(time.time() * 1000) + 10_000, "time_bank_ms": 0, **seat}
    table.save()
    return table


def test_the_seat_is_shown_and_answered_by_its_owner_only(people):
    alice, mallory = people["alice"], people["mallory"]
    table = _asked(_new_table(alice, [people["house"]]))
    url = f"/play/{table.pk}/"
    for who in (None, mallory):
        state = _client(who).get(url + "state.json").json()
        assert state["seat"] is None and state["public"]["card_counts"] == [13, 13]
        html = _client(who).get(url).content.decode()
        assert 'id="hand"' not in html and "3S" not in html
        assert _client(who).get(url + "live/").status_code in (200, 404)  # the stream: see the ASGI test
    assert _client(alice).get(url + "state.json").json()["seat"]["hand"] == ["3S", "4S", "4C", "9H"]

    def post(who, body, *, csrf=False, raw=None):
        return _client(who, csrf=csrf).post(url + "move/", raw if raw is not None else json.dumps(body),
                                            content_type="application/json")

    assert post(None, {"move_id": 7, "cards": ["3S"]}).status_code == 403
    mine = post(mallory, {"move_id": 7, "cards": ["3S"]})
    assert mine.status_code == 404 and "no such table of yours" in mine.json()["error"]
    assert post(alice, {"move_id": 7, "cards": ["3S"]}, csrf=True).status_code == 403  # no CSRF token
    refused = {
        "not json": (None, "not JSON"),
        "stale": ({"move_id": 6, "cards": ["3S"]}, "not your move"),
        "illegal": ({"move_id": 7, "cards": ["3S", "9H"]}, "3S 9H is not a legal play now"),
        "not held": ({"move_id": 7, "cards": ["2H"]}, "is not a legal play now"),
        "unknown": ({"move_id": 7, "cards": ["ZZ"]}, "unknown card"),
        "twice": ({"move_id": 7, "cards": ["4S", "4S"]}, "named twice"),
        "pass on lead": ({"move_id": 7, "pass": True}, "cannot pass now"),
        "nothing": ({"move_id": 7}, "choose the cards"),
    }
    for name, (body, message) in refused.items():
        response = post(alice, body, raw="{{" if body is None else None)
        assert response.status_code in (400, 409), name
        assert message in response.json()["error"], (name, response.json())
    assert CasualTable.objects.get(pk=table.pk).answer is None  # nothing refused was stored
    assert post(alice, {"move_id": 7, "cards": ["4C", "4S"]}).json() == {"ok": True}
    table.refresh_from_db()
    assert table.answer == {"move_id": 7, "pass": False, "cards": [4, 5]}
    assert table.seat_state["move_id"] is None  # answered: the page offers it no more
    assert post(alice, {"move_id": 7, "cards": ["3S"]}).status_code == 409
    # leaving: the seat answers nothing more
    assert _client(alice).post(url + "leave/").status_code == 302
    assert casual_services.casual_answer_take(table_id=table.pk, move_id=8) is False


def test_the_play_form_refuses_bad_input_with_a_reason(people):
    alice, house = people["alice"], people["house"]
    cases = {
        "preset": ({"preset": "nowhere"}, "unknown preset"),
        "no opponent": ({"opponent": []}, "choose 1 to 3 opponents"),
        "clock": ({"move_time_s": 1}, "move time must be"),
        "bank": ({"time_bank_s": 100_000}, "time bank must be"),
        "games": ({"games": 0}, "games must be"),
        "seat": ({"seat": 5}, "seat must be"),
        "a bot that does not exist": ({"opponent": [999_999]}, "does not accept casual games"),
    }
    for name, (change, message) in cases.items():
        form = {"preset": "south", "opponent": [house.pk], "games": 1, "move_time_s": 30,
                "time_bank_s": 60, "seat": 1, **change}
        response = _client(alice).post("/play/", form)
        assert response.status_code == 400, name
        assert message in response.content.decode(), name
    assert not CasualTable.objects.exists()
    assert _client().post("/play/", {"preset": "south"}).status_code == 302  # sign in first


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(("preset", "players"), [("south", 4), ("south_extended", 3), ("hue", 2),
                                                 ("danang", 4), ("north", 3)])
def test_no_page_is_sent_another_seats_card_over_whole_games(settings, preset, players):
    """A whole table per preset on a real referee, the seat played through the web's own
    answers; every state the owner, a stranger and the public were sent is checked."""
    from tests.needs import need_postgresql

    need_postgresql("the gateway's thread, the test and the referee write at once")
    from bots_sdk.rules import PRESETS
    from tests.platform_referee import platform_referee
    from tournaments.play.casual import casual_table_play

    assert preset in PRESETS
    boss, alice, mallory = make_user("boss", staff=True), make_user("alice"), make_user("mallory")
    bots = [bot_create(owner=boss, name=f"house-{p}-{i}", house_bot=p)[0]
            for i, p in enumerate(["greedy", "random", "heuristic"][:players - 1])]
    seen: list[tuple[str, dict]] = []
    with platform_referee(settings):
        table = casual_services.casual_table_create(user=alice, preset=preset, bot_ids=[b.pk for b in bots],
                                                    games=1, move_time_ms=5_000, time_bank_ms=0, seat=1)
        worker = threading.Thread(target=_play_closing, args=(casual_table_play, table.pk))
        worker.start()
        owner, stranger, public = _client(alice), _client(mallory), _client()
        url = f"/play/{table.pk}/"
        try:
            while True:
                for who, client in (("public", public), ("stranger", stranger), ("owner", owner)):
                    seen.append((who, client.get(url + "state.json").json()))
                state = seen[-1][1]
                if state["status"] in ("done", "failed"):
                    break
                seat = state["seat"] or {}
                if seat.get("move_id") is not None:
                    plays = seat["legal_plays"]
                    body = {"pass": True} if seat["can_pass"] and (not plays or len(seen) % 3) else {"cards": plays[0]}
                    owner.post(url + "move/", json.dumps({"move_id": seat["move_id"], **body}),
                               content_type="application/json")
                time.sleep(0.05)
        finally:
            worker.join(timeout=120)
    table.refresh_from_db()
    assert table.status == CasualTable.Status.DONE, table.detail
    person = CasualSeat.objects.get(table=table, bot__isnull=True).index
    games = list(CasualGame.objects.filter(table=table).order_by("index"))
    assert len(games) == 1 and sum(table.totals) == 0
    for game in games:
        replay = json.loads(game.replay_text)
        assert replay["preset"] == preset
        seat = game.seat_participants.index(person)
        played = {c for m in replay["moves"] for c in m.get("cards", [])}
        secret = {c for s, hand in enumerate(replay["hands"]) if s != seat for c in hand} - played
        during = [(w, s) for w, s in seen if s["status"] == "running" and s["public"].get("game_index") == game.index]
        if not during:
            # An instant win ends the game at the deal (docs/rules.md): no state of it was
            # running to be polled (a fresh-clone CI run met one in danang).
            assert replay["result"]["instant_winner"] is not None, replay["result"]
            continue
        for who, state in during:
            assert not _cards_in(state) & secret, who
            if who != "owner":
                assert state["seat"] is None
            else:
                assert _cards_in(state["seat"] or {}) <= set(replay["hands"][seat])


def _play_closing(fn, table_id: int) -> None:
    from django.db import connections

    try:
        fn(table_id)
    finally:
        connections.close_all()


def test_the_stream_sends_the_seat_to_its_owner_only(people):
    """The server-sent events (the view ASGI serves), read whole: the owner's stream carries
    their hand, the public's and a stranger's not; a missing table is a 404."""
    from asgiref.sync import async_to_sync

    table = _asked(_new_table(people["alice"], [people["house"]]))
    CasualTable.objects.filter(pk=table.pk).update(status=CasualTable.Status.DONE)

    def events(who):
        response = _client(who).get(f"/play/{table.pk}/live/")
        assert response["Content-Type"] == "text/event-stream"
        async def read() -> bytes:
            return b"".join([chunk async for chunk in response.streaming_content])

        body = async_to_sync(read)().decode()
        assert "event: end" in body
        return [json.loads(e.removeprefix("data: ")) for e in body.split("\n\n") if e.startswith("data: {")]

    for who in (None, people["mallory"], people["alice"]):
        data = events(who)
        assert data and all(d["seat"] is None for d in data)  # over: no seat even for its owner
        assert data[-1]["public"]["card_counts"] == [13, 13]
    assert _client().get("/play/999999/live/").status_code == 404


def test_a_seat_token_opens_its_own_running_table_only(people):
    from tournaments.token_store import DjangoTokenStore

    table = _new_table(people["alice"], [people["house"]])
    other = _new_table(people["alice"], [people["house"]])
    token = casual_services.seat_token(table.pk)
    store = DjangoTokenStore()
    assert store.authenticate_bot(token) is None  # not running yet
    CasualTable.objects.filter(pk__in=[table.pk, other.pk]).update(status=CasualTable.Status.RUNNING)
    assert store.authenticate_bot(token).bot_id == f"person-{table.pk}"
    forged = [token[:-1] + ("0" if token[-1] != "0" else "1"), token.replace(f".{table.pk}.", f".{other.pk}.", 1),
              f"tlseat.{table.pk}", "tlseat..", "tlseat.99999999999999999999.x"]
    assert all(store.authenticate_bot(t) is None for t in forged)
    CasualTable.objects.filter(pk=table.pk).update(status=CasualTable.Status.DONE)
    assert store.authenticate_bot(token) is None  # over: the seat cannot come back


def test_a_table_whose_worker_is_gone_is_closed_by_the_tick_and_frees_its_persons_place(people):
    """A worker that died mid-table left it "running" for ever: it counted against the
    person's open tables (two at most) and showed as playing. The tick closes a running
    table silent for longer than every seat's whole clock, and a pending one no worker took;
    a table still within its clocks is left alone."""
    from datetime import timedelta

    from django.utils import timezone

    from tournaments.services.tick import tick_run

    alice, house = people["alice"], people["house"]
    live = _new_table(alice, [house], move_time_ms=10_000, time_bank_ms=5_000)
    dead = _new_table(alice, [house], move_time_ms=10_000, time_bank_ms=5_000)
    assert casual_services.casual_start(table_id=live.pk) and casual_services.casual_start(table_id=dead.pk)
    with pytest.raises(casual_services.CasualError, match="tables playing already"):
        _new_table(alice, [house])
    now = timezone.now()
    # 2 seats x (10 s + 5 s) + 120 s of slack = 150 s without a write: abandoned.
    CasualTable.objects.filter(pk=dead.pk).update(touched_at=now - timedelta(seconds=151))
    CasualTable.objects.filter(pk=live.pk).update(touched_at=now - timedelta(seconds=140))
    assert tick_run(now=now).casual_abandoned == [dead.pk]
    dead.refresh_from_db()
    live.refresh_from_db()
    assert (dead.status, live.status) == ("failed", "running")
    assert "the worker playing it stopped" in dead.detail and dead.finished_at is not None
    state = _client(alice).get(f"/play/{dead.pk}/state.json").json()  # what the page shows
    assert state["status"] == "failed" and "the worker playing it stopped" in state["detail"]
    fresh = _new_table(alice, [house])  # the place is free again
    # A pending table no worker took in ten minutes is given up too.
    CasualTable.objects.filter(pk=fresh.pk).update(created_at=now - timedelta(minutes=11))
    assert tick_run(now=now).casual_abandoned == [fresh.pk]
    assert "no worker took it" in CasualTable.objects.get(pk=fresh.pk).detail
