"""A person's own clock at a casual table (docs/web.md, "Play"): the person chooses a move's
time and a bank on the play page within stated limits (checked on the server, with a clear
error for a value out of them or not a number); the referee asks and times out their seat
on that clock while the bots at the same table keep the table's bot clock. Over a real
referee, with the seat played through the web's own answers and a registered bot that
records what the referee told it."""

from __future__ import annotations

import asyncio
import json
import threading
import time

import pytest
from django.test import Client

from tests.web.factories import make_user
from tournaments.models import CasualTable
from tournaments.services import casual as casual_services
from tournaments.services.accounts import bot_create


def _client(user=None) -> Client:
    client = Client()
    if user is not None:
        client.force_login(user)
    return client


@pytest.mark.django_db
def test_the_clock_on_the_form_is_checked_with_a_clear_error():
    alice = make_user("alice")
    house = bot_create(owner=make_user("boss", staff=True), name="house-random", house_bot="random")[0]
    cases = {
        "move time too short": ({"move_time_s": 2}, "move time must be 3 to 120 seconds (got 2)"),
        "move time too long": ({"move_time_s": 121}, "move time must be 3 to 120 seconds (got 121)"),
        "move time not a number": ({"move_time_s": "thirty"}, "move time must be a whole number seconds, 3 to 120"),
        "move time empty": ({"move_time_s": ""}, "move time must be a whole number seconds, 3 to 120"),
        "move time a fraction": ({"move_time_s": "2.5"}, "move time must be a whole number"),
        "bank negative": ({"time_bank_s": -1}, "time bank must be 0 to 600 seconds (got -1)"),
        "bank too long": ({"time_bank_s": 601}, "time bank must be 0 to 600 seconds"),
        "bank not a number": ({"time_bank_s": "1e9x"}, "time bank must be a whole number seconds, 0 to 600"),
        "games not a number": ({"games": "many"}, "games must be a whole number, 1 to 20"),
    }
    for name, (change, message) in cases.items():
        form = {"preset": "south", "opponent": [house.pk], "games": 1, "move_time_s": 30, "time_bank_s": 60,
                "seat": 1, **change}
        response = _client(alice).post("/play/", form)
        assert response.status_code == 400, name
        page = response.content.decode()
        assert message in page, (name, page[page.find("play-error"):][:300])
    assert not CasualTable.objects.exists()  # nothing refused was created
    # the limits and the bots' clock are stated on the form
    page = _client(alice).get("/play/").content.decode()
    assert "(3 to 120)" in page and "(0 to 600)" in page
    assert "The bots keep the bot clock: 1 s a move + 10 s bank" in page
    # in the limits: the person's clock is theirs, the bots' the table's bot clock
    assert _client(alice).post("/play/", {"preset": "south", "opponent": [house.pk], "games": 1,
                                          "move_time_s": 7, "time_bank_s": 0, "seat": 1}).status_code == 302
    table = CasualTable.objects.get()
    assert (table.move_time_ms, table.time_bank_ms) == (7_000, 0)
    assert (table.bot_move_time_ms, table.bot_time_bank_ms) == (1_000, 10_000)
    header = _client(alice).get(f"/play/{table.pk}/").content.decode()
    assert "your clock 7 s a move + 0 s bank; the bots' 1 s a move + 10 s bank" in header


class _Told:
    """What the referee told the registered bot: its table's clock and its first move's time."""

    def __init__(self) -> None:
        self.table_move_ms: int | None = None
        self.first_time_left_ms: int | None = None


def _recording_bot(told: _Told):
    from bots_sdk.examples import GreedyBot

    class Recording(GreedyBot):
        async def on_table_start(self, table) -> None:
            told.table_move_ms = table.move_time_ms

        def play(self, view):
            if told.first_time_left_ms is None:
                told.first_time_left_ms = view.time_left_ms
            return super().play(view)

    return Recording


@pytest.mark.django_db(transaction=True)
def test_the_persons_seat_runs_on_its_own_clock_and_the_bots_on_theirs(settings):
    from tests.needs import need_postgresql

    need_postgresql("the gateway's thread, the test and the referee write at once")
    from bots_sdk.client import BotClient
    from tests.platform_referee import platform_referee
    from tournaments.play.casual import casual_table_play

    alice = make_user("alice")
    mine, token = bot_create(owner=alice, name="alices-bot")  # her own bot: always seatable
    house = bot_create(owner=make_user("boss", staff=True), name="house-greedy", house_bot="greedy")[0]
    told = _Told()
    seen: list[dict] = []
    with platform_referee(settings) as referee:
        client = BotClient(_recording_bot(told), target=referee.target, token=token, max_tables=1)
        loop = asyncio.new_event_loop()
        bot_thread = threading.Thread(target=loop.run_until_complete, args=(client.run(),), daemon=True)
        bot_thread.start()
        table = casual_services.casual_table_create(user=alice, preset="south", bot_ids=[mine.pk, house.pk],
                                                    games=1, move_time_ms=3_000, time_bank_ms=0, seat=0)
        worker = threading.Thread(target=_play_closing, args=(casual_table_play, table.pk))
        worker.start()
        owner = _client(alice)
        url = f"/play/{table.pk}/"
        try:
            deadline = time.monotonic() + 150
            first_move = None
            while time.monotonic() < deadline:
                state = owner.get(url + "state.json").json()
                seen.append((time.monotonic(), state))
                if state["status"] in ("done", "failed"):
                    break
                seat = state["seat"] or {}
                # the first move asked is left to time out; every later one is answered
                if seat.get("move_id") is not None and first_move is None:
                    first_move = seat["move_id"]
                if seat.get("move_id") not in (None, first_move):
                    plays = seat["legal_plays"]
                    body = {"pass": True} if seat["can_pass"] else {"cards": plays[0]}
                    owner.post(url + "move/", json.dumps({"move_id": seat["move_id"], **body}),
                               content_type="application/json")
                time.sleep(0.05)
        finally:
            worker.join(timeout=120)
            loop.call_soon_threadsafe(client.stop, True)
            bot_thread.join(20)
    table.refresh_from_db()
    assert table.status == CasualTable.Status.DONE, table.detail
    asked = [(t, s["seat"]) for t, s in seen if s["seat"] and s["seat"].get("move_id") is not None]
    assert asked
    asked_at, first = asked[0]
    # the person is asked on their own clock: 3 s a move, no bank (the page shows both)
    assert first["move_time_ms"] == 3_000 and first["time_bank_ms"] == 0
    assert 2_000 < first["time_left_ms"] <= 3_000
    # the seat's count of timeouts (kept in every later state: the "timed out" state itself
    # may be replaced by the next request before a poll sees it)
    timed_out = [(t, s["seat"]) for t, s in seen if s["seat"] and s["seat"].get("timeouts", 0) >= 1]
    assert timed_out and max(s["timeouts"] for _, s in timed_out) == 1
    # it ran out after its 3 s (then the bots played on before the next request), not after
    # the bots' 1 s + 10 s
    assert 2.0 < timed_out[0][0] - asked_at < 9.0
    # the registered bot at the same table was told, and asked on, the bots' clock
    assert told.table_move_ms == 1_000
    assert told.first_time_left_ms is not None and 9_000 < told.first_time_left_ms <= 11_000


def _play_closing(fn, table_id: int) -> None:
    from django.db import connections

    try:
        fn(table_id)
    finally:
        connections.close_all()
