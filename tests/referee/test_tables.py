"""Whole tables over real gRPC: every preset and table size, records, seeds, duplicates."""

from __future__ import annotations

import asyncio
import json

import grpc
import pytest

from bots_sdk.cards import CARD_TEXT
from bots_sdk.protocol.tienlen.v1 import bot_gateway_pb2 as gw
from bots_sdk.protocol.tienlen.v1 import organizer_pb2 as org
from bots_sdk.rules import PRESETS, replay_game
from referee_service.server import Referee

from .harness import games_of, play_table, result_of, start_bots

PRESET_NAMES = sorted(PRESETS)


def check_record(record: org.GameRecord, players: int) -> dict:
    replay = json.loads(record.replay_json)
    replay_game(replay)  # re-simulates every move and checks the stored result
    assert replay["players"] == players
    assert sum(record.result.points) == 0
    assert list(record.result.points) == replay["result"]["points"]
    timing = json.loads(record.timing_json)
    assert len(timing["moves"]) == len(replay["moves"])
    assert [m["seat"] for m in timing["moves"]] == [m["seat"] for m in replay["moves"]]
    return replay


@pytest.mark.parametrize("players", [2, 3, 4])
@pytest.mark.parametrize("preset", PRESET_NAMES)
async def test_full_table_in_every_preset_and_size(referee: Referee, preset: str,
                                                   players: int) -> None:
    names = ["alice", "bob", "carol", "dave"][:players]
    bots = await start_bots(referee.target, names)
    events = await play_table(referee.target, table_id=f"{preset}-{players}", seats=names,
                              preset=preset, games=2, seed=f"seed-{preset}-{players}")
    started = events[0].started
    assert started.seed == f"seed-{preset}-{players}" and started.games == 2
    records = games_of(events)
    assert [r.game_index for r in records] == [0, 1]
    for record in records:
        replay = check_record(record, players)
        assert replay["preset"] == preset
        assert list(record.seat_names) == [n.title() for n in names]
    result = result_of(events)
    assert result.status == org.TABLE_STATUS_COMPLETED
    assert result.games_played == 2 and result.next_game_index == 2
    assert list(result.strikes) == [0] * players and not result.forfeited
    assert list(result.totals) == [
        sum(r.result.points[i] for r in records) for i in range(players)]
    for bot in bots:
        ends = bot.of_kind("table_end")
        assert len(ends) == 1 and ends[0].reason == gw.TABLE_END_REASON_COMPLETED
        assert len(bot.of_kind("game_end")) == 2
        assert not bot.of_kind("move_rejected") and not bot.of_kind("strike")
        await bot.close()


async def test_house_bots_fill_seats(referee: Referee) -> None:
    bots = await start_bots(referee.target, ["alice"])
    events = await play_table(referee.target, table_id="house",
                              seats=["alice", "house:random", "house:greedy", "house:heuristic"],
                              games=3, seed="h")
    records = games_of(events)
    assert len(records) == 3
    names = list(records[0].seat_names)
    assert names == ["Alice", "house:random", "house:greedy", "house:heuristic"]
    for record in records:
        check_record(record, 4)
        timing = json.loads(record.timing_json)["moves"]
        assert all(m["house"] == (m["seat"] != 0) for m in timing)
        assert not any(m["fallback"] for m in timing)
    table_start = bots[0].of_kind("table_start")[0]
    assert [s.house for s in table_start.seats] == [False, True, True, True]
    await bots[0].close()


async def test_game_records_stream_as_games_finish_and_carry_the_leader(
        referee: Referee) -> None:
    """Independent games: game i+1 starts from game i's next leader/starting flag, and
    game i is dealt from the organiser's deal_seeds[i]."""
    deal_seeds = [f"carry-deal-{i}" for i in range(6)]
    events = await play_table(referee.target, table_id="carry", games=6, seed="carry",
                              deal_seeds=deal_seeds,
                              seats=["house:greedy", "house:random", "house:greedy"])
    records = games_of(events)
    replays = [json.loads(r.replay_json) for r in records]
    assert replays[0]["starting"] is True
    assert any(not r["starting"] for r in replays[1:])  # the leader does carry over
    for before, after in zip(replays, replays[1:], strict=False):
        assert after["starting"] == before["result"]["next_starting"]
        if not after["starting"]:
            assert after["leader"] == before["result"]["next_leader"]
    assert [r["seed"] for r in replays] == deal_seeds
    assert [r.seed for r in records] == deal_seeds


async def test_starting_games_start_every_game_afresh(referee: Referee) -> None:
    """Field duplicates need deal i played the same way at every table: no carry-over."""
    events = await play_table(referee.target, table_id="fresh", games=5, seed="fresh",
                              deal_seeds=[f"fresh-{i}" for i in range(5)], starting_games=True,
                              seats=["house:greedy", "house:random", "house:greedy"])
    replays = [json.loads(r.replay_json) for r in games_of(events)]
    assert [r["starting"] for r in replays] == [True] * 5
    assert all(r["leader"] is None for r in replays)


async def test_without_deal_seeds_every_deal_is_a_fresh_secret_seed(referee: Referee) -> None:
    """Standalone use: the referee draws each deal with `secrets`, never from `seed`."""
    seats = ["house:greedy", "house:greedy"]
    first, second = [games_of(await play_table(referee.target, table_id=f"drawn-{k}", games=4,
                                               seed="same-table-seed", seats=seats, deal_seeds=[]))
                     for k in range(2)]
    seeds = [r.seed for r in [*first, *second]]
    assert len(set(seeds)) == 8  # the same table seed gives different deals
    assert all(len(s) == 32 and int(s, 16) >= 0 for s in seeds)
    assert not any("same-table-seed" in s for s in seeds)
    assert [json.loads(r.replay_json)["seed"] for r in first] == seeds[:4]


async def test_duplicate_set_replays_one_deal_in_every_rotation(referee: Referee) -> None:
    events = await play_table(referee.target, table_id="dup", duplicate_sets=2, seed="dup", deal_seeds=[],
                              seats=["house:random", "house:greedy", "house:heuristic",
                                     "house:random"])
    records = games_of(events)
    assert [r.game_index for r in records] == list(range(8))
    for set_index in range(2):
        games = records[4 * set_index: 4 * set_index + 4]
        replays = [json.loads(r.replay_json) for r in games]
        assert all(r["hands"] == replays[0]["hands"] for r in replays)
        assert all(r["starting"] for r in replays)
        assert len({r.seed for r in games}) == 1  # one drawn deal per set
        assert {r["seed"] for r in replays} == {games[0].seed}
        rotations = [list(r.seat_participants) for r in games]
        assert rotations == [[(s + k) % 4 for s in range(4)] for k in range(4)]
        # every participant held every hand exactly once in the set
        for participant in range(4):
            held = {rot.index(participant) for rot in rotations}
            assert held == {0, 1, 2, 3}
    assert replays[0]["hands"] != json.loads(records[0].replay_json)["hands"]
    assert records[0].seed != records[4].seed
    result = result_of(events)
    totals = [0] * 4
    for record in records:
        for seat, participant in enumerate(record.seat_participants):
            totals[participant] += record.result.points[seat]
    assert list(result.totals) == totals


async def test_a_killed_table_replays_identically_from_first_game_index(
        referee: Referee) -> None:
    """The organiser resends the deal seeds of the games still to play."""
    seats = ["house:greedy", "house:greedy", "house:greedy"]  # deterministic players
    deals = [f"k-{i}" for i in range(4)]
    full = games_of(await play_table(referee.target, table_id="full", games=4, seed="k",
                                     seats=seats, deal_seeds=deals))
    previous = json.loads(full[1].replay_json)["result"]
    resumed = games_of(await play_table(
        referee.target, table_id="resumed", games=4, seed="k", seats=seats,
        first_game_index=2, resume_leader=previous["next_leader"] or 0,
        resume_starting=previous["next_starting"], deal_seeds=deals[2:]))
    assert [r.game_index for r in resumed] == [2, 3]
    for a, b in zip(full[2:], resumed, strict=True):
        assert json.loads(a.replay_json) == json.loads(b.replay_json)
    # duplicate tables resume from the set and rotation of the index alone
    sets = ["k-set-0"] * 3 + ["k-set-1"] * 3
    dup = games_of(await play_table(referee.target, table_id="dup-full", duplicate_sets=2,
                                    seed="k", seats=seats, deal_seeds=sets))
    dup_resumed = games_of(await play_table(referee.target, table_id="dup-res",
                                            duplicate_sets=2, seed="k", seats=seats,
                                            first_game_index=4, deal_seeds=sets[4:]))
    assert [json.loads(r.replay_json) for r in dup[4:]] == [
        json.loads(r.replay_json) for r in dup_resumed]
    assert [list(r.seat_participants) for r in dup[4:]] == [
        list(r.seat_participants) for r in dup_resumed]


async def test_one_stream_plays_many_tables_at_once(referee: Referee) -> None:
    bots = await start_bots(referee.target, ["alice", "bob"], max_tables=8)
    results = await asyncio.gather(*[
        play_table(referee.target, table_id=f"multi-{i}", seats=["alice", "bob"], games=1,
                   seed=f"m{i}")
        for i in range(6)])
    assert all(result_of(e).status == org.TABLE_STATUS_COMPLETED for e in results)
    starts = bots[0].of_kind("table_start")
    assert len({s.table_id for s in starts}) == 6
    # requests of different tables interleaved on the one stream
    order = [m.move_request.table_id for m in bots[0].received
             if m.WhichOneof("body") == "move_request"]
    switches = sum(1 for a, b in zip(order, order[1:], strict=False) if a != b)
    assert switches > 6
    for bot in bots:
        await bot.close()


async def test_a_bot_may_not_hold_two_seats_of_one_table(referee: Referee) -> None:
    """It would see both hands, and its messages could not say which seat they are about."""
    bots = await start_bots(referee.target, ["alice", "bob"])
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await play_table(referee.target, table_id="self", games=1, seed="self",
                         seats=["alice", "bob", "alice"])
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert refused.value.details() == (
        "seats[2]: bot 'alice' already plays seats[0]; a bot plays at most one seat of a "
        "table (house bots may repeat)")
    assert not bots[0].of_kind("table_start")
    events = await play_table(referee.target, table_id="houses", games=1, seed="h",
                              seats=["alice", "house:random", "house:random"])
    assert result_of(events).status == org.TABLE_STATUS_COMPLETED
    for bot in bots:
        await bot.close()


async def test_thirty_two_tables_concurrently(referee: Referee) -> None:
    names = ["alice", "bob", "carol", "dave", "erin", "frank", "grace", "heidi"]
    bots = await start_bots(referee.target, names, max_tables=16)
    tables = []
    for i in range(32):
        seats = [names[(i + k) % 8] for k in range(4)]
        tables.append(play_table(referee.target, table_id=f"c{i}", seats=seats, games=1,
                                 seed=f"c{i}"))
    results = await asyncio.gather(*tables)
    for events in results:
        assert result_of(events).status == org.TABLE_STATUS_COMPLETED
        check_record(games_of(events)[0], 4)
    assert max(len(b.of_kind("table_start")) for b in bots) == 16
    for bot in bots:
        await bot.close()


async def test_game_start_names_the_opening_card_of_starting_games(referee: Referee) -> None:
    bots = await start_bots(referee.target, ["alice", "bob"])
    events = await play_table(referee.target, table_id="opening", games=4, preset="hue",
                              seats=["alice", "bob", "house:random"])
    assert result_of(events).status == org.TABLE_STATUS_COMPLETED
    records = {r.game_index: json.loads(r.replay_json) for r in games_of(events)}
    for bot in bots:
        for start in bot.of_kind("game_start"):
            replay = records[start.game_index]
            if start.starting:
                first_play = next(m for m in replay["moves"] if m.get("cards"))
                assert start.HasField("opening_card") and not start.HasField("leader")
                assert CARD_TEXT[start.opening_card] in first_play["cards"]
            else:
                assert not start.HasField("opening_card") and start.HasField("leader")
        await bot.close()
    assert bots[0].of_kind("game_start")[0].starting
