"""A seat's own clock (SeatSpec.move_time_ms / time_bank_ms: a person's seat at a casual
table, docs/web.md "Play"): that seat is told, asked and timed out on its own clock, every
other seat on the table's; a table that names no seat clock (every tournament table) gives
every seat the table's clock, as before. Real gRPC on loopback."""

from __future__ import annotations

import json

import grpc
import pytest

from bots_sdk.protocol.tienlen.v1 import bot_gateway_pb2 as gw
from bots_sdk.protocol.tienlen.v1 import organizer_pb2 as org
from referee_service.server import Referee

from .harness import RawBot, games_of, play_table, result_of


def _silent(request: gw.MoveRequest, bot: RawBot) -> None:
    return None  # never answers: every move times out


def _moves(events: list[org.TableEvent]) -> list[dict]:
    return [m for r in games_of(events) for m in json.loads(r.timing_json)["moves"]]


async def test_a_seat_with_its_own_clock_times_out_on_it_and_the_others_on_the_tables(
        referee: Referee) -> None:
    # alice: her own clock, 300 ms a move + 400 ms bank; bob: the table's, 60 ms + 100 ms.
    alice = await RawBot(referee.target, "alice", policy=_silent).start().connected()
    bob = await RawBot(referee.target, "bob", policy=_silent).start().connected()
    try:
        events = await play_table(referee.target, table_id="clocks", seats=["alice", "bob", "house:random"],
                                  seed="seat-clocks", games=1, move_time_ms=60, time_bank_ms=100,
                                  max_strikes=2, seat_clocks={0: (300, 400)})
    finally:
        await alice.close()
        await bob.close()
    start_a, start_b = alice.of_kind("table_start")[0], bob.of_kind("table_start")[0]
    assert (start_a.move_time_ms, start_a.time_bank_ms) == (300, 400)
    assert (start_b.move_time_ms, start_b.time_bank_ms) == (60, 100)
    first_a, first_b = alice.of_kind("move_request")[0], bob.of_kind("move_request")[0]
    assert first_a.time_left_ms == pytest.approx(700, abs=30) and first_a.time_bank_ms == 400
    assert first_b.time_left_ms == pytest.approx(160, abs=30) and first_b.time_bank_ms == 100
    # each one's first timeout spent its own whole bank; each struck out on its own clock
    assert alice.of_kind("move_request")[1].time_bank_ms == 0
    assert bob.of_kind("move_request")[1].time_bank_ms == 0
    assert [s.reason for s in alice.of_kind("strike")] == [gw.STRIKE_REASON_TIMEOUT] * 2
    assert [s.reason for s in bob.of_kind("strike")] == [gw.STRIKE_REASON_TIMEOUT] * 2
    result = result_of(events)
    assert result.status == org.TABLE_STATUS_COMPLETED and sorted(result.forfeited) == [0, 1]
    timed_out = {seat: [m["elapsed_ms"] for m in _moves(events) if m["seat"] == seat and m["fallback"] == "timeout"]
                 for seat in (0, 1)}
    # alice's first move waited for her 700 ms, her second for her 300 ms; bob's 160 and 60
    assert 690 <= timed_out[0][0] < 1500 and 290 <= timed_out[0][1] < 1000
    assert 150 <= timed_out[1][0] < 600 and 55 <= timed_out[1][1] < 500


async def test_without_seat_clocks_every_seat_has_the_tables_clock(referee: Referee) -> None:
    """The tournament path: no SeatSpec clock, so every seat is told and asked alike."""
    bots = [await RawBot(referee.target, b).start().connected() for b in ("alice", "bob", "carol")]
    try:
        events = await play_table(referee.target, table_id="same", seats=["alice", "bob", "carol"],
                                  seed="same-clock", games=1, move_time_ms=4000, time_bank_ms=3000)
    finally:
        for bot in bots:
            await bot.close()
    assert result_of(events).status == org.TABLE_STATUS_COMPLETED
    for bot in bots:
        start = bot.of_kind("table_start")[0]
        assert (start.move_time_ms, start.time_bank_ms) == (4000, 3000)
        first = bot.of_kind("move_request")[0]
        assert first.time_bank_ms == 3000 and 6000 < first.time_left_ms <= 7000


@pytest.mark.parametrize(("clock", "words"), [
    ({"move_time_ms": 600_001}, "seats[0].move_time_ms: 1 to 600000"),
    ({"time_bank_ms": 700_000}, "seats[0].time_bank_ms: at most 600000"),
])
async def test_a_seat_clock_out_of_bounds_is_refused_naming_the_seat(referee: Referee, clock, words) -> None:
    from .harness import AUTH, organizer_stub

    request = org.PlayTableRequest(table_id="bad-clock", games=1,
                                   seats=[org.SeatSpec(bot_id="alice", **clock), org.SeatSpec(house_bot="random")])
    channel, stub = organizer_stub(referee.target)
    try:
        with pytest.raises(grpc.aio.AioRpcError) as raised:
            async for _ in stub.PlayTable(request, metadata=AUTH):
                pass
    finally:
        await channel.close()
    assert raised.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert words in (raised.value.details() or "")
