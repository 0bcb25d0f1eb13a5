"""A referee keeps nothing per table or per stream once they end (issue 26, the soak's RSS).

A referee runs for weeks: whatever it keeps per table played or per stream opened must go
when the table or the stream ends, or be capped. What it keeps on purpose: an aborted
table's move-id offsets (a resumed run must never reuse them, docs/protocol.md "Move
ids"), capped at `MAX_REMEMBERED_TABLES`, and one message allowance per bot (a
reconnection never refills it), one per bot whatever the number of streams.
"""

from __future__ import annotations

import asyncio

import pytest

from bots_sdk.protocol.tienlen.v1 import organizer_pb2 as org
from referee_service import sessions
from referee_service.server import Referee

from .harness import AUTH, organizer_stub, play_table, result_of, start_bots

REMOTE = ["alice", "bob"]
SEATS = ["alice", "bob", "house:greedy", "house:heuristic"]


async def _until(predicate, what: str, timeout: float = 10.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not predicate():
        assert loop.time() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.02)


async def test_nothing_of_a_completed_table_or_a_closed_stream_stays(referee: Referee) -> None:
    registry = referee.registry
    bots = await start_bots(referee.target, REMOTE)
    for n in range(12):
        events = await play_table(referee.target, table_id=f"done-{n}", seed=f"mem-{n}", games=2,
                                  seats=SEATS)
        assert result_of(events).status == org.TABLE_STATUS_COMPLETED
    # played through streams that stay open: nothing of the 12 tables is left
    assert registry.tables == {}
    assert registry.move_id_bases == {}
    for bot_id in REMOTE:
        assert [s.seats for s in registry.sessions[bot_id]] == [{}]
    for bot in bots:
        await bot.close()
    await _until(lambda: not registry.sessions, "the closed streams to be forgotten")
    assert registry._tokens == {}
    assert set(registry.buckets) == set(REMOTE)  # one allowance per bot, on purpose


async def _aborted(target: str, table_id: str) -> None:
    """A table whose organiser call is cancelled after its first game: the referee aborts it."""
    channel, stub = organizer_stub(target)
    try:
        call = stub.PlayTable(org.PlayTableRequest(
            table_id=table_id, seed=table_id, games=200, move_time_ms=5000, connect_deadline_ms=5000,
            seats=[org.SeatSpec(house_bot=s[len("house:"):]) if s.startswith("house:")
                   else org.SeatSpec(bot_id=s) for s in SEATS]), metadata=AUTH)
        async for event in call:
            if event.WhichOneof("event") == "game":
                break
        assert call.cancel(), f"{table_id} ended before it was cancelled"
    finally:
        await channel.close()


async def test_aborted_tables_offsets_are_kept_for_a_resume_and_capped(
        referee: Referee, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sessions, "MAX_REMEMBERED_TABLES", 3)
    registry = referee.registry
    bots = await start_bots(referee.target, REMOTE)
    try:
        for n in range(5):
            await _aborted(referee.target, f"aborted-{n}")
            await _until(lambda n=n: f"aborted-{n}" not in registry.tables, f"aborted-{n} to end")
        # the last three are remembered (a resume of any of them draws new offsets), the
        # oldest forgotten: the number of tables never completed does not grow the referee
        assert list(registry.move_id_bases) == ["aborted-2", "aborted-3", "aborted-4"]
        assert all(len(bases) == len(REMOTE) for bases in registry.move_id_bases.values())
        # a resumed run that completes the table lets its offsets go
        events = await play_table(referee.target, table_id="aborted-4", seed="resumed", games=1, seats=SEATS)
        assert result_of(events).status == org.TABLE_STATUS_COMPLETED
        assert list(registry.move_id_bases) == ["aborted-2", "aborted-3"]
        assert registry.tables == {}
    finally:
        for bot in bots:
            await bot.close()
