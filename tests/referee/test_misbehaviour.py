"""What a bot can do wrong, and what the referee does about it (docs/protocol.md)."""

from __future__ import annotations

import asyncio
import json
import time

import grpc
import pytest

from bots_sdk.cards import CARD_TEXT
from bots_sdk.protocol.tienlen.v1 import bot_gateway_pb2 as gw
from bots_sdk.protocol.tienlen.v1 import organizer_pb2 as org
from referee_service.server import Referee

from .harness import (
    AUTH,
    RawBot,
    games_of,
    move,
    organizer_stub,
    play_table,
    random_policy,
    result_of,
    start_bots,
)


def timings(events: list[org.TableEvent]) -> list[dict]:
    return [m for r in games_of(events) for m in json.loads(r.timing_json)["moves"]]


def first_time_then(bad, good=None):
    """A policy answering each move's first request with bad(request), then legally."""
    good = good or random_policy(1)

    def policy(request: gw.MoveRequest, bot: RawBot):
        if request.attempt == 1:
            answer = bad(request)
            if answer is not None:
                return answer
        return good(request, bot)

    return policy


async def _play_with(referee: Referee, policy, **fields) -> tuple[RawBot, list]:
    bot = await RawBot(referee.target, "alice", policy=policy).start().connected()
    fields.setdefault("games", 1)
    events = await play_table(referee.target, table_id=fields.pop("table_id", "t"),
                              seats=["alice", "house:random", "house:random"],
                              seed=fields.pop("seed", "misbehave"), **fields)
    return bot, events


async def test_illegal_answers_get_a_reason_and_may_be_retried(referee: Referee) -> None:
    def bad(request: gw.MoveRequest):
        view = request.view
        missing = next(c for c in range(52) if c not in view.hand)
        return move(request, [missing])

    bot, events = await _play_with(referee, first_time_then(bad))
    rejected = bot.of_kind("move_rejected")
    assert rejected and all(r.code == gw.MOVE_ERROR_CODE_NOT_IN_HAND for r in rejected)
    assert "not in your hand" in rejected[0].reason
    assert rejected[0].attempts_left == 2 and rejected[0].time_left_ms > 0
    result = result_of(events)
    assert result.status == org.TABLE_STATUS_COMPLETED and list(result.strikes) == [0, 0, 0]
    mine = [t for t in timings(events) if t["seat"] == 0]
    assert all(t["attempts"] == 2 and t["fallback"] is None for t in mine)


@pytest.mark.parametrize("bad, code, words", [
    (lambda r: move(r, [60]), gw.MOVE_ERROR_CODE_UNKNOWN_CARD, "unknown card 60"),
    (lambda r: move(r, [r.view.hand[0], r.view.hand[0]]), gw.MOVE_ERROR_CODE_DUPLICATE_CARD,
     "named twice"),
    (lambda r: move(r, []), gw.MOVE_ERROR_CODE_EMPTY_PLAY, "pass = true"),
    (lambda r: None if r.view.can_pass else move(r, None), gw.MOVE_ERROR_CODE_CANNOT_PASS,
     "pass"),
])
async def test_each_kind_of_bad_move_is_named(referee: Referee, bad, code: int,
                                              words: str) -> None:
    bot, events = await _play_with(referee, first_time_then(bad))
    rejected = bot.of_kind("move_rejected")
    assert rejected
    assert {r.code for r in rejected} == {code}
    assert words in rejected[0].reason
    assert result_of(events).status == org.TABLE_STATUS_COMPLETED


async def test_a_play_that_does_not_beat_the_table_is_explained(referee: Referee) -> None:
    def bad(request: gw.MoveRequest):
        view = request.view
        if not view.HasField("table") or len(view.table.cards) != 1:
            return None
        weaker = [c for c in view.hand if c < view.table.cards[0]]
        return move(request, [weaker[0]]) if weaker else None

    bot, events = await _play_with(referee, first_time_then(bad), games=3)
    rejected = bot.of_kind("move_rejected")
    assert rejected, "expected at least one single below the table in three games"
    assert {r.code for r in rejected} <= {gw.MOVE_ERROR_CODE_DOES_NOT_BEAT,
                                          gw.MOVE_ERROR_CODE_NOT_OFFERED}
    assert any("does not beat" in r.reason for r in rejected)


async def test_stale_and_misaddressed_answers_change_nothing(referee: Referee) -> None:
    def noisy(request: gw.MoveRequest, bot: RawBot):
        legal = random_policy(3)(request, bot)
        wrong_table = gw.BotMessage()
        wrong_table.CopyFrom(legal)
        wrong_table.move.table_id = "someone-elses-table"
        wrong_game = gw.BotMessage()
        wrong_game.CopyFrom(legal)
        wrong_game.move.game_index += 7
        stale = gw.BotMessage()
        stale.CopyFrom(legal)
        stale.move.move_id = request.move_id + 10_000
        # junk first, then the real answer, then the same answer again (now stale)
        return [wrong_table, wrong_game, stale, legal, legal]

    bot, events = await _play_with(referee, noisy)
    codes = [r.code for r in bot.of_kind("move_rejected")]
    assert gw.MOVE_ERROR_CODE_UNKNOWN_TABLE in codes
    assert gw.MOVE_ERROR_CODE_WRONG_GAME in codes
    assert gw.MOVE_ERROR_CODE_STALE_MOVE in codes
    result = result_of(events)
    assert result.status == org.TABLE_STATUS_COMPLETED and list(result.strikes) == [0, 0, 0]
    assert not bot.of_kind("strike")


async def test_a_misaddressed_answer_is_told_which_request_is_awaited(referee: Referee) -> None:
    """The rejection names the request still awaited (ids, real time and attempts left),
    so a bot that answers the rejected move_id again, as after an illegal move, answers
    the right one; what the bot sent is echoed in sent_*."""
    first: list[gw.MoveRequest] = []

    def confused(request: gw.MoveRequest, bot: RawBot):
        legal = random_policy(5)(request, bot)
        if first:
            return legal
        first.append(request)
        stale = gw.BotMessage()
        stale.CopyFrom(legal)
        stale.move.move_id = request.move_id + 40
        elsewhere = gw.BotMessage()
        elsewhere.CopyFrom(legal)
        elsewhere.move.table_id = "not-mine"
        return [stale, elsewhere]  # and no answer: the rejection must say what to answer

    bot = RawBot(referee.target, "alice", policy=confused).start()
    await bot.connected()

    def answer_the_rejection(rejected: gw.MoveRejected) -> None:
        if rejected.attempts_left and rejected.time_left_ms:
            request = gw.MoveRequest(table_id=rejected.table_id, game_index=rejected.game_index,
                                     move_id=rejected.move_id, view=first[0].view)
            bot.send(random_policy(6)(request, bot))

    bot._retry = answer_the_rejection  # type: ignore[method-assign]
    events = await play_table(referee.target, table_id="confused", games=1, seed="c",
                              seats=["alice", "house:random"], move_time_ms=3000)
    assert result_of(events).status == org.TABLE_STATUS_COMPLETED
    assert list(result_of(events).strikes) == [0, 0]
    stale, elsewhere = bot.of_kind("move_rejected")[:2]
    asked = first[0]
    assert stale.code == gw.MOVE_ERROR_CODE_STALE_MOVE
    assert (stale.table_id, stale.game_index, stale.move_id) == (
        "confused", asked.game_index, asked.move_id)
    assert (stale.sent_game_index, stale.sent_move_id) == (asked.game_index, asked.move_id + 40)
    assert 0 < stale.time_left_ms <= asked.time_left_ms and stale.attempts_left == 3
    assert elsewhere.code == gw.MOVE_ERROR_CODE_UNKNOWN_TABLE
    assert (elsewhere.table_id, elsewhere.move_id, elsewhere.sent_move_id) == (
        "not-mine", asked.move_id, asked.move_id)
    assert (elsewhere.time_left_ms, elsewhere.attempts_left) == (0, 0)  # nothing awaited there
    await bot.close()


async def test_repeated_illegal_moves_strike_then_forfeit(referee: Referee) -> None:
    always_bad = first_time_then(lambda r: move(r, [60]), lambda r, b: move(r, [61]))
    bot, events = await _play_with(referee, always_bad, games=2, max_strikes=2,
                                   max_illegal_attempts=2)
    strikes = bot.of_kind("strike")
    assert [s.reason for s in strikes] == [gw.STRIKE_REASON_ILLEGAL_MOVES] * 2
    assert [s.strikes for s in strikes] == [1, 2]
    assert strikes[-1].forfeited and not strikes[0].forfeited
    assert "illegal answers" in strikes[0].detail
    end = await bot.table_end("t")
    assert end.reason == gw.TABLE_END_REASON_FORFEITED
    result = result_of(events)
    assert result.status == org.TABLE_STATUS_COMPLETED and result.games_played == 2
    assert list(result.forfeited) == [0] and list(result.strikes)[0] == 2
    fallbacks = [t["fallback"] for t in timings(events) if t["seat"] == 0]
    assert fallbacks[:2] == ["illegal_moves"] * 2
    assert set(fallbacks[2:]) == {"forfeited"}
    # no request reached the bot after it forfeited
    requests = bot.of_kind("move_request")
    assert len({r.move_id for r in requests}) == 2


async def test_timeouts_use_the_bank_then_strike(referee: Referee) -> None:
    bot, events = await _play_with(referee, lambda r, b: None, move_time_ms=60,
                                   time_bank_ms=100, max_strikes=2)
    strikes = bot.of_kind("strike")
    assert [s.reason for s in strikes] == [gw.STRIKE_REASON_TIMEOUT] * 2
    requests = bot.of_kind("move_request")
    assert requests[0].time_left_ms == pytest.approx(160, abs=15)
    assert requests[0].time_bank_ms == 100
    assert requests[1].time_bank_ms == 0  # the first timeout spent the whole bank
    result = result_of(events)
    assert result.status == org.TABLE_STATUS_COMPLETED and list(result.forfeited) == [0]
    mine = [t for t in timings(events) if t["seat"] == 0]
    assert mine[0]["fallback"] == "timeout" and mine[0]["elapsed_ms"] >= 150


async def test_a_slow_answer_within_the_bank_is_accepted(referee: Referee) -> None:
    random = random_policy(5)

    def slow(request: gw.MoveRequest, bot: RawBot):
        async def later():
            await asyncio.sleep(0.08)
            bot.send(random(request, bot))
        asyncio.get_running_loop().create_task(later())
        return None

    bot = await RawBot(referee.target, "alice", policy=slow, ack_moves=True).start().connected()
    events = await play_table(referee.target, table_id="slow", seats=["alice", "house:random"],
                              games=1, move_time_ms=50, time_bank_ms=5000, seed="slow")  # a fixed deal
    assert not bot.of_kind("strike")
    banks = [r.time_bank_ms for r in bot.of_kind("move_request")]
    assert banks[0] == 5000 and banks[-1] < banks[0]
    assert all(b >= a - 5000 for a, b in zip(banks, banks[1:], strict=False))
    accepted = bot.of_kind("move_accepted")
    assert len(accepted) == len(bot.of_kind("move_request"))
    assert all(a.elapsed_ms >= 70 for a in accepted)
    # the acceptance carries the record's measure, fractions of a millisecond included
    recorded = [t["elapsed_ms"] for t in timings(events) if t["seat"] == 0]
    assert len(recorded) == len(accepted)
    assert all(abs(a.elapsed_us - ms * 1000) <= 1 for a, ms in zip(accepted, recorded, strict=True))
    assert all(a.elapsed_ms <= a.elapsed_us / 1000 <= a.elapsed_ms + 1 for a in accepted)


async def test_moves_are_confirmed_only_when_asked(referee: Referee) -> None:
    quiet, _ = await _play_with(referee, random_policy(1), table_id="quiet")
    assert quiet.of_kind("move_request") and not quiet.of_kind("move_accepted")


async def test_thinking_and_network_time_are_recorded_separately(referee: Referee) -> None:
    random = random_policy(9)

    def reporting(request: gw.MoveRequest, bot: RawBot):
        answer = random(request, bot)
        answer.move.thinking_us = 1500
        return answer

    _, events = await _play_with(referee, reporting)
    mine = [t for t in timings(events) if t["seat"] == 0]
    for t in mine:
        assert t["thinking_ms"] == pytest.approx(min(1.5, t["elapsed_ms"]), abs=0.01)
        assert t["network_ms"] == pytest.approx(t["elapsed_ms"] - t["thinking_ms"], abs=0.01)


async def test_a_crashed_bot_forfeits_after_the_grace_period(referee: Referee) -> None:
    crashed = asyncio.Event()

    def crash(request: gw.MoveRequest, bot: RawBot):
        if len(bot.of_kind("move_request")) == 3:
            crashed.set()
            return None
        return random_policy(2)(request, bot)

    bot = await RawBot(referee.target, "alice", policy=crash).start().connected()
    other = await RawBot(referee.target, "bob").start().connected()

    async def kill_on_crash():
        await crashed.wait()
        await bot.kill()

    killer = asyncio.get_running_loop().create_task(kill_on_crash())
    started = time.monotonic()
    events = await play_table(referee.target, table_id="crash", games=2, seed="crash",
                              seats=["alice", "bob", "house:greedy"], move_time_ms=300,
                              disconnect_grace_ms=400)
    await killer
    assert time.monotonic() - started < 20
    result = result_of(events)
    assert result.status == org.TABLE_STATUS_COMPLETED and result.games_played == 2
    assert list(result.forfeited) == [0]
    assert list(result.strikes) == [1, 0, 0]  # one disconnection, one strike
    fallbacks = [t["fallback"] for t in timings(events) if t["seat"] == 0 and t["fallback"]]
    assert fallbacks[0] == "disconnected" and set(fallbacks[1:]) <= {"disconnected",
                                                                     "forfeited"}
    assert "forfeited" in fallbacks
    assert (await other.table_end("crash")).reason == gw.TABLE_END_REASON_COMPLETED
    await other.close()


async def test_a_bot_that_reconnects_in_time_resumes_its_seat(referee: Referee) -> None:
    dropped = asyncio.Event()

    def drop_once(request: gw.MoveRequest, bot: RawBot):
        if not dropped.is_set() and len(bot.of_kind("move_request")) == 4:
            dropped.set()
            return None
        return random_policy(4)(request, bot)

    first = await RawBot(referee.target, "alice", policy=drop_once).start().connected()
    second = RawBot(referee.target, "alice", policy=random_policy(8))

    async def reconnect():
        await dropped.wait()
        await first.kill()
        # reconnect once the referee has seen the old stream go (else the seat would
        # move to the new stream only when it does, after the Welcome)
        while "alice" in referee.registry.sessions:
            await asyncio.sleep(0.01)
        await second.start().connected()

    task = asyncio.get_running_loop().create_task(reconnect())
    events = await play_table(referee.target, table_id="resume", games=2, seed="resume",
                              seats=["alice", "house:random", "house:greedy"],
                              move_time_ms=3000, disconnect_grace_ms=5000)
    await task
    result = result_of(events)
    assert result.status == org.TABLE_STATUS_COMPLETED and not result.forfeited
    assert list(result.strikes) == [0, 0, 0]
    kinds = [m.WhichOneof("body") for m in second.received]
    assert kinds[:4] == ["welcome", "table_start", "game_start", "move_request"]
    assert second.of_kind("welcome")[0].resumed_seats == 1
    assert first.of_kind("welcome")[0].resumed_seats == 0
    resumed = second.of_kind("table_start")[0]
    assert resumed.resumed and resumed.table_id == "resume"
    # the pending move was re-sent with the same id
    pending_id = first.of_kind("move_request")[-1].move_id
    assert second.of_kind("move_request")[0].move_id == pending_id
    # the resent view shows the hand as it is now
    assert list(second.of_kind("game_start")[0].hand) == list(
        second.of_kind("move_request")[0].view.hand)
    assert (await second.table_end("resume")).reason == gw.TABLE_END_REASON_COMPLETED
    await second.close()


async def test_a_bot_answering_through_a_flood_keeps_its_table(referee: Referee) -> None:
    random = random_policy(6)

    def flood(request: gw.MoveRequest, bot: RawBot):
        junk = [gw.BotMessage(ping=gw.Ping(nonce=i)) for i in range(30)]
        return [*junk, random(request, bot)]

    bot, events = await _play_with(referee, flood, move_time_ms=2000)
    assert result_of(events).status == org.TABLE_STATUS_COMPLETED
    assert bot.status in (None, grpc.StatusCode.OK)


@pytest.mark.parametrize("fields, words", [
    ({"seats": ["house:random"]}, "seats: a table has 2 to 4 seats, got 1"),
    ({"seats": ["house:random"] * 5}, "got 5"),
    ({"preset": "mars"}, "unknown preset 'mars'"),
    ({"seats": ["house:random", "house:genius"]}, "unknown house bot 'genius'"),
    ({"options_json": "{not json"}, "options_json: not valid JSON"),
    ({"options_json": '{"no_such_option": 1}'}, "no_such_option"),
    ({"options_json": "[1, 2]"}, "must be a JSON object"),
    # hostile JSON never reaches the parser's recursion (was UNKNOWN: RecursionError)
    ({"options_json": "[" * 50_000}, "options_json: 50000 bytes, at most 16384"),
    ({"options_json": "[" * 12_000}, "options_json: nested 12000 levels deep, at most 8"),
    ({"options_json": '{"chops": ' + "[" * 5000 + "]" * 5000 + "}"},
     "options_json: nested 5001 levels deep, at most 8"),
    ({"options_json": '{"chops": [[["2>ps3"]]]}'}, "options_json: "),
    ({"options_json": '{"frozen_points": 4294967296}'},
     "options_json: option frozen_points must be between -100 and 100, got 4294967296"),
    ({"games": 0}, "games: play at least one game"),
    ({"first_game_index": 5}, "first_game_index: 5 is past the last game"),
    ({"table_id": ""}, "table_id: required"),
])
async def test_bad_table_requests_are_refused_naming_the_field(referee: Referee, fields: dict,
                                                               words: str) -> None:
    request = {"table_id": "bad", "seats": ["house:random", "house:greedy"], "games": 2}
    request.update(fields)
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await play_table(referee.target, **request)
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert words in (info.value.details() or "")


async def test_absent_bot_fails_the_table_naming_it(referee: Referee) -> None:
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await play_table(referee.target, table_id="absent", games=1,
                         seats=["house:random", "zoe"], connect_deadline_ms=200)
    assert info.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert "not connected: zoe" in (info.value.details() or "")


async def test_a_bot_at_capacity_is_waited_for(referee: Referee) -> None:
    bots = await start_bots(referee.target, ["alice"], max_tables=1)
    tables = [play_table(referee.target, table_id=f"cap{i}", games=1, seed=f"cap{i}",
                         seats=["alice", "house:random"]) for i in range(3)]
    results = await asyncio.gather(*tables)
    assert all(result_of(e).status == org.TABLE_STATUS_COMPLETED for e in results)
    # never two tables at once on a stream that declared max_tables = 1
    live = 0
    peak = 0
    for m in bots[0].received:
        kind = m.WhichOneof("body")
        live += kind == "table_start"
        live -= kind == "table_end"
        peak = max(peak, live)
    assert peak == 1
    await bots[0].close()


async def test_a_running_table_id_cannot_be_reused(referee: Referee) -> None:
    bots = await start_bots(referee.target, ["alice"],
                            policy=lambda r, b: None)  # never answers: table stays running
    first = asyncio.get_running_loop().create_task(play_table(
        referee.target, table_id="same", games=1, seats=["alice", "house:random"],
        move_time_ms=2000, seed="reuse",
        deal_seeds=["reuse/game/0"]))  # a fixed deal: no instant win ends it early
    for _ in range(500):
        if "same" in referee.registry.tables:
            break
        await asyncio.sleep(0.01)
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await play_table(referee.target, table_id="same", games=1,
                         seats=["house:random", "house:random"])
    assert info.value.code() == grpc.StatusCode.ALREADY_EXISTS
    first.cancel()
    await bots[0].kill()


async def test_cancelling_the_call_aborts_the_table_for_the_bots(referee: Referee) -> None:
    bots = await start_bots(referee.target, ["alice"], policy=lambda r, b: None)
    channel, stub = organizer_stub(referee.target)
    call = stub.PlayTable(org.PlayTableRequest(
        table_id="cancel", games=3, move_time_ms=5000,
        seats=[org.SeatSpec(bot_id="alice"), org.SeatSpec(house_bot="random")]),
        metadata=AUTH)
    first = await call.read()
    assert first.WhichOneof("event") == "started"
    for _ in range(500):  # alice has been asked for a move
        if bots[0].of_kind("move_request"):
            break
        await asyncio.sleep(0.01)
    call.cancel()
    assert (await bots[0].table_end("cancel", timeout=2)).reason == gw.TABLE_END_REASON_ABORTED
    assert "cancel" not in referee.registry.tables
    await channel.close()
    await bots[0].kill()


async def test_shutdown_aborts_running_tables_with_a_resumable_result(
        referee: Referee) -> None:
    bots = await start_bots(referee.target, ["alice"])
    slow = random_policy(7)

    def sleepy(request: gw.MoveRequest, bot: RawBot):
        async def later():
            await asyncio.sleep(0.05)
            bot.send(slow(request, bot))
        asyncio.get_running_loop().create_task(later())

    bots[0].policy = sleepy
    table = asyncio.get_running_loop().create_task(play_table(
        referee.target, table_id="shut", games=50, seats=["alice", "house:random"]))
    await asyncio.sleep(1.0)
    await referee.stop(grace=0.1)
    events = await table
    result = result_of(events)
    assert result.status == org.TABLE_STATUS_ABORTED
    assert "shutting down" in result.detail
    assert result.next_game_index == len(games_of(events)) < 50
    assert (await bots[0].table_end("shut")).reason == gw.TABLE_END_REASON_ABORTED


async def test_goodbye_finishes_running_tables_but_takes_no_new_ones(referee: Referee) -> None:
    said_goodbye = asyncio.Event()
    random = random_policy(11)

    def polite(request: gw.MoveRequest, bot: RawBot):
        if not said_goodbye.is_set():
            said_goodbye.set()
            return [gw.BotMessage(goodbye=gw.Goodbye(reason="deploying v2")),
                    random(request, bot)]
        return random(request, bot)

    bot = await RawBot(referee.target, "alice", policy=polite).start().connected()
    events = await play_table(referee.target, table_id="bye", games=2,
                              seats=["alice", "house:random"])
    assert result_of(events).status == org.TABLE_STATUS_COMPLETED
    assert not bot.of_kind("strike")
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await play_table(referee.target, table_id="after", games=1,
                         seats=["alice", "house:random"], connect_deadline_ms=200)
    assert info.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert "no free table slot: alice" in (info.value.details() or "")
    await bot.close()


async def test_a_seat_moves_at_once_to_the_bots_other_open_stream(referee: Referee) -> None:
    dropped = asyncio.Event()

    def drop(request: gw.MoveRequest, bot: RawBot):
        if len(bot.of_kind("move_request")) == 3:
            dropped.set()
            return None
        return random_policy(12)(request, bot)

    first = await RawBot(referee.target, "alice", policy=drop).start().connected()
    spare = await RawBot(referee.target, "alice", policy=random_policy(13)).start().connected()

    async def crash():
        await dropped.wait()
        await first.kill()

    task = asyncio.get_running_loop().create_task(crash())
    events = await play_table(referee.target, table_id="spare", games=1, seed="spare",
                              seats=["alice", "house:random"], move_time_ms=3000,
                              disconnect_grace_ms=60_000)
    await task
    result = result_of(events)
    assert result.status == org.TABLE_STATUS_COMPLETED and not result.forfeited
    assert list(result.strikes) == [0, 0]
    assert spare.of_kind("table_start")[0].resumed
    assert spare.of_kind("move_request")
    await spare.close()


async def test_an_internal_failure_ends_only_its_own_table(referee: Referee,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """Even an engine bug hit by one table (simulated) leaves the other tables playing."""
    import referee_service.table
    from bots_sdk.rules import Game

    class Broken:
        """A game whose legal_plays() fails (the compiled Game cannot be patched itself)."""

        def __init__(self, game: Game) -> None:
            self._game = game

        def __getattr__(self, name: str):
            return getattr(self._game, name)

        def legal_plays(self):
            raise RuntimeError("simulated engine failure")

    class PatchedGame:
        @staticmethod
        def from_seed(seed, *args, **kwargs):
            game = Game.from_seed(seed, *args, **kwargs)
            return Broken(game) if seed.startswith("boom/") else game

    # the games the referee deals for its tables
    monkeypatch.setattr(referee_service.table, "Game", PatchedGame)
    bots = await start_bots(referee.target, ["alice", "bob"])
    boom, fine = await asyncio.gather(
        play_table(referee.target, table_id="boom", seed="boom", games=1,
                   deal_seeds=["boom/0"], seats=["alice", "house:greedy"]),
        play_table(referee.target, table_id="fine", seed="fine", games=2,
                   seats=["bob", "house:greedy"]))
    assert result_of(boom).status == org.TABLE_STATUS_ABORTED
    assert "simulated engine failure" in result_of(boom).detail
    assert result_of(fine).status == org.TABLE_STATUS_COMPLETED
    assert (await bots[0].table_end("boom")).reason == gw.TABLE_END_REASON_ABORTED
    # the referee still serves new tables
    again = await play_table(referee.target, table_id="after-boom", games=1,
                             seats=["alice", "bob"])
    assert result_of(again).status == org.TABLE_STATUS_COMPLETED
    for bot in bots:
        await bot.close()


async def test_a_late_answer_from_an_aborted_run_is_not_taken_for_the_resumed_run(
        referee: Referee) -> None:
    """A table aborted and played again under the same table id (a worker retrying it)
    asks the same seat the same first move: the bot's late answer to the aborted run's
    request must not be applied to the new run's (they once both had move id 1)."""
    alice = await RawBot(referee.target, "alice", policy=lambda r, b: None).start().connected()
    request = org.PlayTableRequest(
        table_id="rerun", games=1, move_time_ms=5000, seed="rerun", deal_seeds=["rerun/0"],
        seats=[org.SeatSpec(bot_id="alice"), org.SeatSpec(house_bot="random")])
    channel, stub = organizer_stub(referee.target)

    async def next_request(after: int) -> gw.MoveRequest:
        for _ in range(500):
            asked = alice.of_kind("move_request")
            if len(asked) > after:
                return asked[after]
            await asyncio.sleep(0.01)
        raise AssertionError("alice was not asked for a move")

    first = stub.PlayTable(request, metadata=AUTH)
    aborted = await next_request(0)
    first.cancel()
    assert (await alice.table_end("rerun", timeout=2)).reason == gw.TABLE_END_REASON_ABORTED
    second = stub.PlayTable(request, metadata=AUTH)
    events = asyncio.ensure_future(_events(second))
    current = await next_request(1)
    assert current.view == aborted.view  # the same position, asked again
    assert current.move_id != aborted.move_id
    plays = [list(p.cards) for p in current.view.legal_plays]
    late, mine = (plays[-1], None) if current.view.can_pass else (plays[-1], plays[0])
    assert late != mine
    alice.send(move(aborted, late))  # the answer to the aborted run, arriving late
    for _ in range(500):
        rejected = [r for r in alice.of_kind("move_rejected") if r.sent_move_id == aborted.move_id]
        if rejected:
            break
        await asyncio.sleep(0.01)
    assert rejected and rejected[0].code == gw.MOVE_ERROR_CODE_STALE_MOVE
    assert rejected[0].move_id == current.move_id  # it names what is awaited instead
    alice.policy = random_policy(7)
    alice.send(move(current, mine))
    done = await asyncio.wait_for(events, 60)
    assert result_of(done).status == org.TABLE_STATUS_COMPLETED
    replay = json.loads(games_of(done)[0].replay_json)
    first_of_alice = next(m for m in replay["moves"] if m["seat"] == current.view.seat)
    assert first_of_alice.get("cards", None) == (
        None if mine is None else [CARD_TEXT[c] for c in sorted(mine)])
    await channel.close()
    await alice.kill()


async def _events(call: object) -> list[org.TableEvent]:
    return [event async for event in call]  # type: ignore[attr-defined]
