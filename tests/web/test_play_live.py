"""Watching a casual table live (docs/web.md, "Play"): the public event stream, read whole
over whole games on a real referee, every preset, carries each public move one by one (the
same as the game's replay, in order) and never a card of any hand while its game plays —
not the watched person's, not a bot's; never the person's seat. Tournament tables stream
nothing of the kind (tests/tournaments/test_live_moves_sealed.py)."""

from __future__ import annotations

import json
import threading
import time

import pytest
from django.test import Client

from tests.web.cards import cards_in
from tests.web.factories import make_user
from tournaments.models import CasualGame, CasualSeat, CasualTable
from tournaments.services import casual as casual_services
from tournaments.services.accounts import bot_create


def _play_closing(fn, table_id: int) -> None:
    from django.db import connections

    try:
        fn(table_id)
    finally:
        connections.close_all()


def _read_stream(url: str, client: Client, into: list[dict], done: threading.Event) -> None:
    """Every state the stream sends, as it comes (the view ASGI serves, read in this thread)."""
    from asgiref.sync import async_to_sync, sync_to_async
    from django.db import connections

    async def read() -> None:
        response = await sync_to_async(client.get)(url)
        assert response["Content-Type"] == "text/event-stream"
        buffer = ""
        try:
            async for chunk in response.streaming_content:
                buffer += chunk.decode() if isinstance(chunk, bytes) else chunk
                while "\n\n" in buffer:
                    event, buffer = buffer.split("\n\n", 1)
                    if event.startswith("data: {"):
                        into.append(json.loads(event.removeprefix("data: ")))
                    elif event.startswith("event: end") or event.startswith("event: gone"):
                        return
        finally:
            await sync_to_async(connections.close_all)()

    try:
        async_to_sync(read)()
    finally:
        connections.close_all()
        done.set()


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(("preset", "players"), [("south", 4), ("south_extended", 3), ("hue", 2),
                                                 ("danang", 4), ("north", 3)])
def test_the_public_stream_carries_every_play_one_by_one_and_no_hand(settings, monkeypatch, preset, players):
    from tests.needs import need_postgresql
    from web import views_play

    # The stream looks every 0.25 s: a game of ~30 moves plays in a second or two, and on
    # a loaded machine a stalled look or two left the stream one state of a whole game (a
    # fresh-clone CI run). Looking five times as often keeps "move by move" observable.
    monkeypatch.setattr(views_play, "CHECK_SECONDS", 0.05)

    need_postgresql("the gateway's thread, the stream's and the test's write and read at once")
    from bots_sdk.rules import PRESETS
    from tests.platform_referee import platform_referee
    from tournaments.play.casual import casual_table_play

    assert preset in PRESETS
    boss, alice = make_user("boss", staff=True), make_user("alice")
    bots = [bot_create(owner=boss, name=f"house-{p}-{i}", house_bot=p)[0]
            for i, p in enumerate(["greedy", "random", "heuristic"][:players - 1])]
    streamed: list[dict] = []
    done = threading.Event()
    with platform_referee(settings):
        table = casual_services.casual_table_create(user=alice, preset=preset, bot_ids=[b.pk for b in bots],
                                                    games=2, move_time_ms=5_000, time_bank_ms=0, seat=1)
        url = f"/play/{table.pk}/"
        reader = threading.Thread(target=_read_stream, args=(url + "live/", Client(), streamed, done))
        reader.start()
        worker = threading.Thread(target=_play_closing, args=(casual_table_play, table.pk))
        worker.start()
        owner = Client()
        owner.force_login(alice)
        answered = 0
        try:
            while not done.is_set():
                state = owner.get(url + "state.json").json()
                if state["status"] in ("done", "failed"):
                    break
                seat = state["seat"] or {}
                if seat.get("move_id") is not None:
                    plays = seat["legal_plays"]
                    body = {"pass": True} if seat["can_pass"] and (not plays or answered % 3) else {"cards": plays[0]}
                    owner.post(url + "move/", json.dumps({"move_id": seat["move_id"], **body}),
                               content_type="application/json")
                    answered += 1
                time.sleep(0.05)
        finally:
            worker.join(timeout=120)
            reader.join(timeout=30)
    table.refresh_from_db()
    assert table.status == CasualTable.Status.DONE, table.detail
    assert streamed and streamed[-1]["status"] == "done"
    person = CasualSeat.objects.get(table=table, bot__isnull=True).index
    games = list(CasualGame.objects.filter(table=table).order_by("index"))
    assert len(games) == 2
    for game in games:
        replay = json.loads(game.replay_text)
        public = [m for m in replay["moves"] if not (m.get("pass") and m.get("offer"))]
        played_by = [set()]  # the cards played after n public moves
        for m in public:
            played_by.append(played_by[-1] | set(m.get("cards", [])))
        during = [s for s in streamed if s["status"] == "running"]
        lives = [s["live"] for s in during if s["live"].get("game_index") == game.index]
        if not public:  # an instant win (a hand that wins as dealt): no move to stream
            assert not lives
            continue
        assert lives, "the stream sent no live move of the game"
        # each public move, in order, exactly as the replay has it (declined offers: none):
        # the game's moves as the stream last sent them (the next game's states keep them
        # as "previous", the table's last state has the last game's)
        ends = [s["live"]["previous"] for s in streamed if (s["live"].get("previous") or {}).get("game_index") == game.index]
        ends += [s["live"] for s in streamed if s["live"].get("game_index") == game.index]
        moves = max((e["moves"] for e in ends), key=len)
        assert [(m["seat"], m["pass"], sorted(m["cards"]), m["offer"]) for m in moves] == [
            (m["seat"], bool(m.get("pass")), sorted(m.get("cards", [])), m.get("offer")) for m in public]
        assert [m["n"] for m in moves] == list(range(1, len(public) + 1))
        # it came move by move: many states, each a longer list than the one before
        ns = [live["moves"][-1]["n"] for live in lives]
        assert ns == sorted(ns) and len(set(ns)) >= min(len(public), 5)
        # other seats' plays too, not only the person's
        assert {m["seat"] for m in moves if not m["pass"]} - {game.seat_participants.index(person)}
        for state in during:
            assert state["seat"] is None  # never the person's hand, even for a watcher of their table
            live = state["live"]
            if live.get("game_index") == game.index:
                now = {k: v for k, v in live.items() if k != "previous"}
                assert cards_in(now) <= played_by[live["moves"][-1]["n"]], "a card of a hand in the live moves"
            pub = state["public"]
            if pub.get("game_index") == game.index:
                assert cards_in(pub) <= played_by[-1] and not cards_in(pub) & (
                    set().union(*map(set, replay["hands"])) - played_by[-1])


@pytest.mark.django_db(transaction=True)
def test_a_watcher_is_never_told_when_the_person_is_asked(settings):
    """Hostile: the gateway writes the person's view each time they are asked, with
    themselves to move, also while they are offered an out-of-turn chop (which would say
    they hold a bomb). A watcher's JSON and stream do not change when that happens: no
    `to_move`, no plays, no write counter from it; only the referee's live moves (which
    name the seat the turn goes to once the offer is declined) move them on."""
    from tests.needs import need_postgresql

    need_postgresql("the stream reads from another thread")
    from bots_sdk.protocol.tienlen.v1 import organizer_pb2 as org
    from tournaments.play.referee import LiveMove

    boss, alice, mallory = make_user("boss", staff=True), make_user("alice"), make_user("mallory")
    bots = [bot_create(owner=boss, name=f"house-{p}", house_bot=p)[0] for p in ("greedy", "random")]
    table = casual_services.casual_table_create(user=alice, preset="danang", bot_ids=[b.pk for b in bots],
                                                games=1, move_time_ms=30_000, time_bank_ms=0)
    names = ["alice", "house-greedy", "house-random"]
    casual_services.casual_start(table_id=table.pk)
    casual_services.casual_state_write(table_id=table.pk, public={
        "game_index": 0, "players": 3, "names": names, "person_seat": 0, "card_counts": [13, 13, 13],
        "history": [], "to_move": None, "table": None, "finished": [], "locked_out": [], "frozen": []})
    url = f"/play/{table.pk}/"
    stranger, owner = Client(), Client()
    stranger.force_login(mallory)
    owner.force_login(alice)
    streamed: list[dict] = []
    done = threading.Event()
    reader = threading.Thread(target=_read_stream, args=(url + "live/", Client(), streamed, done))
    reader.start()
    try:
        time.sleep(0.8)
        before = stranger.get(url + "state.json").json()
        # seat 1 plays a single 2; the referee offers the person an out-of-turn chop
        two = org.LiveMove(game_index=0, number=1, seat=1, cards=[51], card_counts=[13, 12, 13],
                           to_move=2, table_cards=[51], table_kind="single", table_seat=1)
        casual_services.casual_live_move(table_id=table.pk, move=LiveMove.from_event(two))
        time.sleep(0.8)
        seen_live = stranger.get(url + "state.json").json()
        casual_services.casual_state_write(table_id=table.pk, public={
            "game_index": 0, "players": 3, "names": names, "person_seat": 0, "card_counts": [13, 12, 13],
            "history": [{"seat": 1, "cards": ["2H"]}], "to_move": 0, "preset": "danang",
            "table": {"seat": 1, "kind": "single", "cards": ["2H"]}, "finished": [], "locked_out": [],
            "frozen": []}, seat={"move_id": 5, "hand": ["3S", "3C", "3D", "3H"], "offer": "out_of_turn_chop",
                                 "legal_plays": [["3S", "3C", "3D", "3H"]], "can_pass": True})
        time.sleep(0.8)
        asked = stranger.get(url + "state.json").json()
        mine = owner.get(url + "state.json").json()
    finally:
        CasualTable.objects.filter(pk=table.pk).update(status=CasualTable.Status.DONE)
        reader.join(timeout=30)
    assert "version" not in asked and asked["seat"] is None
    assert asked == seen_live != before  # the ask changed nothing a watcher sees
    assert "to_move" not in asked["public"] and "history" not in asked["public"]
    assert asked["live"]["to_move"] == 2 and asked["live"]["moves"][-1]["cards"] == ["2H"]
    assert mine["seat"]["offer"] == "out_of_turn_chop" and mine["public"]["to_move"] == 0  # the person's own
    # the stream: the first state, the live move, the end; nothing when the person was asked
    assert [len(s["live"].get("moves") or []) for s in streamed] == [0, 1, 1]
    assert [s["status"] for s in streamed] == ["running", "running", "done"]
    assert not any("to_move" in s["public"] for s in streamed)
