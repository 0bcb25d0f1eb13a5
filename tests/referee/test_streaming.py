"""Game records reach the organiser while the table is still playing.

The tournament worker records each game as it arrives; if a table's records only arrived
in one burst at the end, recording could never overlap play (benchmarks/README.md,
tournament recording)."""

from __future__ import annotations

import asyncio
import gc
import json

from bots_sdk.protocol.tienlen.v1 import organizer_pb2 as org
from referee_service.organizer_client import OrganizerClient
from referee_service.server import Referee, referee_in_thread

from .harness import games_of, play_table

ORGANIZER = "stream-org-token"


def test_first_record_of_a_house_bot_table_arrives_before_its_last_game() -> None:
    games = 200  # long enough that thread scheduling in the caller cannot hide the point
    with referee_in_thread(organizer_token=ORGANIZER) as thread, \
            OrganizerClient(thread.target, ORGANIZER, timeout=120) as client:
        events = client.play_table(table_id="streamed", seed="stream-1", games=games,
                                   seats=["house:random", "house:greedy",
                                          "house:heuristic", "house:random"])
        assert isinstance(next(events), org.TableStarted)
        first = next(events)
        assert isinstance(first, org.GameRecord) and first.game_index == 0
        runner = thread.referee.registry.tables.get("streamed")
        # the table is still running and has games left to play
        assert runner is not None and not runner.finished
        assert runner.games_played < games // 2
        rest = list(events)
    assert [e.game_index for e in rest[:-1]] == list(range(1, games))
    assert isinstance(rest[-1], org.TableResult) and rest[-1].games_played == games


async def test_a_house_bot_table_never_monopolises_the_event_loop(referee: Referee) -> None:
    """Other work on the referee's loop (other tables, bot streams, health checks) keeps
    running while a house-bot-only table plays: the loop is never held for a whole game."""
    seats = ["house:heuristic", "house:greedy", "house:random"]
    # warm up (first imports, the channel) so that only the table itself is measured
    await play_table(referee.target, table_id="warm", games=1, seed="warm", seats=seats)
    loop = asyncio.get_running_loop()
    gaps: list[float] = []
    stop = asyncio.Event()

    async def ticker() -> None:
        last = loop.time()
        while not stop.is_set():
            await asyncio.sleep(0.001)
            now = loop.time()
            gaps.append(now - last)
            last = now

    # a full collection of the objects earlier tests left behind also pauses the loop
    # (~50 ms here); that is not the table's doing, so keep it out of the measurement
    gc.collect()
    gc.freeze()
    try:
        ticks = asyncio.create_task(ticker())
        start = loop.time()
        events = await play_table(referee.target, table_id="loop", games=60,
                                  seed="loop-1", seats=seats)
        took = loop.time() - start
        stop.set()
        await ticks
    finally:
        gc.unfreeze()
    assert len(games_of(events)) == 60
    # the ticker gets turns all through the table (it would get one at the start and one
    # at the end if the table never yielded), never waiting for a large part of it (the
    # bound is loose: on a loaded machine the whole process is sometimes descheduled)
    assert len(gaps) > 60, (len(gaps), took)
    assert max(gaps) < took / 2, (max(gaps), took)


async def test_a_table_of_forfeited_bots_never_monopolises_the_event_loop() -> None:
    """Once every remote seat has forfeited, the referee plays their fallback moves
    without waiting for anybody: it must still give the loop a turn between moves.
    (In-process, without gRPC, so that only the table's own yielding is counted.)"""
    from bots_sdk.protocol.tienlen.v1 import organizer_pb2 as org
    from referee_service.house import house_bot_names
    from referee_service.sessions import BotSession, SessionRegistry
    from referee_service.spec import table_spec
    from referee_service.table import TableRunner

    registry = SessionRegistry()
    for bot_id in ("alice", "bob", "carol"):  # streams that never answer
        registry.add(BotSession(bot_id=bot_id, bot_name=bot_id, bot_version="1",
                                max_tables=1))
    spec = table_spec(org.PlayTableRequest(
        table_id="silent", games=40, seed="silent-1", move_time_ms=20, time_bank_ms=0,
        max_strikes=1, seats=[org.SeatSpec(bot_id=b) for b in ("alice", "bob", "carol")]),
        house_bot_names())
    runner = TableRunner(spec, registry)
    task = runner.start()
    while not all(p.forfeited for p in runner.participants):
        await asyncio.sleep(0.005)
    turns = 0  # from here on every move is a fallback played at once
    while not task.done():
        await asyncio.sleep(0)
        turns += 1
    events = []
    while not runner.events.empty():
        events.append(runner.events.get_nowait())
    assert events[-1].result.games_played == 40
    fallback_moves = sum(
        1 for e in events if e.WhichOneof("event") == "game"
        for m in json.loads(e.game.timing_json)["moves"] if m["fallback"] == "forfeited")
    assert fallback_moves > 500
    assert turns >= fallback_moves // 2, (turns, fallback_moves)
