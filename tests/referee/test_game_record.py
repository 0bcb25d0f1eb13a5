"""What the organiser reads of a GameRecord without parsing its JSON: the typed fields
(the result with its tied seats, the replay's schema, the timing log's totals per seat)
say exactly what the replay and the timing log say. The worker trusts these fields and
stores the JSON unparsed (tournaments.play.referee.FinishedGame), so this is where their
agreement is checked: on real tables, house bots and bots that time out alike."""

from __future__ import annotations

import asyncio
import json

import pytest

from bots_sdk.protocol.tienlen.v1 import organizer_pb2 as org
from referee_service.house import house_bot_names
from referee_service.sessions import BotSession, SessionRegistry
from referee_service.spec import table_spec
from referee_service.table import TableRunner


def _totals_from_log(timing: dict, players: int) -> tuple[int, float, list[tuple[int, float, float, int]]]:
    """The totals as a reader of timing_json computes them (docs/protocol.md)."""
    seats = [[0, 0.0, 0.0, 0] for _ in range(players)]
    elapsed = 0.0
    for move in timing["moves"]:
        ms = float(move["elapsed_ms"] or 0.0)
        elapsed += ms
        row = seats[move["seat"]]
        row[0] += 1
        row[1] += float(move["thinking_ms"] or ms)
        row[2] = max(row[2], ms)
        row[3] += bool(move["fallback"])
    return len(timing["moves"]), elapsed, [tuple(r) for r in seats]


async def _records(request: org.PlayTableRequest, bots: tuple[str, ...] = ()) -> list[org.GameRecord]:
    registry = SessionRegistry()
    for bot_id in bots:  # streams that never answer: the referee plays fallbacks for them
        registry.add(BotSession(bot_id=bot_id, bot_name=bot_id, bot_version="1", max_tables=1))
    runner = TableRunner(table_spec(request, house_bot_names()), registry)
    await asyncio.wait_for(runner.start(), timeout=120)
    events = []
    while not runner.events.empty():
        events.append(runner.events.get_nowait())
    assert events[-1].result.status == org.TABLE_STATUS_COMPLETED, events[-1].result.detail
    return [e.game for e in events if e.WhichOneof("event") == "game"]


def _check(record: org.GameRecord) -> None:
    replay, timing = json.loads(record.replay_json), json.loads(record.timing_json)
    players = len(record.seat_participants)
    assert record.replay_schema == replay["schema"] == "tienlen.replay/1"
    assert record.seed == replay["seed"]
    result = replay["result"]
    assert list(record.result.points) == result["points"]
    assert list(record.result.finishing_order) == result["finishing_order"]
    assert list(record.result.tied) == result["tied"]
    assert (record.result.instant_winner if record.result.HasField("instant_winner") else None) == result["instant_winner"]
    moves, elapsed, seats = _totals_from_log(timing, players)
    assert record.timing.moves == moves
    assert record.timing.elapsed_ms == pytest.approx(elapsed)
    assert len(record.timing.seats) == players
    for typed, (n, thinking, longest, fallbacks) in zip(record.timing.seats, seats, strict=True):
        assert (typed.moves, typed.fallbacks) == (n, fallbacks)
        assert typed.thinking_ms == pytest.approx(thinking) and typed.max_ms == pytest.approx(longest)


async def test_a_house_bot_tables_records_say_what_their_replays_say() -> None:
    # Instant wins (which tie every other seat for last) are frequent in this preset's deals
    # over a few hundred games; the check holds for every game either way.
    records = await _records(org.PlayTableRequest(
        table_id="typed", games=300, seed="typed-1",
        seats=[org.SeatSpec(house_bot=b) for b in ("random", "greedy", "heuristic", "random")]))
    assert len(records) == 300
    for record in records:
        _check(record)
    assert any(r.result.tied for r in records), "no game with tied seats: pick another seed"


async def test_the_timing_totals_count_the_fallbacks_of_bots_that_never_answer() -> None:
    records = await _records(org.PlayTableRequest(
        table_id="silent-typed", games=3, seed="silent-typed-1", move_time_ms=20, time_bank_ms=0,
        max_strikes=1, seats=[org.SeatSpec(bot_id="alice"), org.SeatSpec(house_bot="greedy"),
                              org.SeatSpec(bot_id="bob")]), bots=("alice", "bob"))
    for record in records:
        _check(record)
    by_participant = [0, 0, 0]
    for record in records:
        for seat, participant in enumerate(record.seat_participants):
            by_participant[participant] += record.timing.seats[seat].fallbacks
    assert by_participant[0] > 0 and by_participant[2] > 0  # every move of theirs a fallback
    assert by_participant[1] == 0  # the house bot played its own
