"""The search example bot: legal in every preset and table size, within its thinking
budget, inside the referee's move clock (a tiny clock included), and a house bot that
thinks in a worker process instead of on the referee's event loop."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import grpc
import pytest

from bots_sdk.arena import ArenaConfig, Lineup, run_arena
from bots_sdk.bot import View
from bots_sdk.cards import parse_cards
from bots_sdk.examples.heuristic import HeuristicBot
from bots_sdk.examples.search import SearchBot, _budget_from_env, rollout
from bots_sdk.protocol.tienlen.v1 import organizer_pb2 as org
from bots_sdk.protocol.tienlen.v1 import organizer_pb2_grpc as org_grpc
from bots_sdk.rules import PRESETS, Game

from .helpers import ORGANIZER, TOKEN, play_table, result_of

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def quick(monkeypatch):
    """A small budget: these tests check behaviour, not strength."""
    monkeypatch.setattr(SearchBot, "budget_ms", 3.0)


@pytest.mark.parametrize("preset", sorted(PRESETS))
@pytest.mark.parametrize("players", [2, 3, 4])
def test_search_plays_only_legal_moves(quick, preset, players):
    specs = ["search", "heuristic", "random", "search"][:players]
    result = run_arena(ArenaConfig(lineup=Lineup.build(specs, players), players=players,
                                   preset=preset, games=3, seed=f"search-{preset}"))
    assert result.errors == []
    assert all(sum(r.points) == 0 for r in result.records)


def test_rollouts_finish_games_in_every_preset():
    for preset in PRESETS:
        for players in (2, 3, 4):
            game = Game.from_seed(f"roll-{preset}", players, preset=preset, starting=False,
                                  leader=0)
            assert rollout(game) and game.is_over and sum(game.points) == 0
            fast = Game.from_seed(f"roll-{preset}", players, preset=preset, starting=False,
                                  leader=0)
            assert rollout(fast, policy="fast") and fast.is_over


@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_heuristic_rollouts_play_exactly_as_the_heuristic_bot(preset):
    """The simulations' opponents are the real heuristic bot's decisions, not a likeness:
    a rolled-out game equals the game four heuristic bots play from their views."""
    for players in (2, 3, 4):
        for k in range(3):
            seed = f"same-{preset}-{players}-{k}"
            bots = [HeuristicBot() for _ in range(players)]
            game = Game.from_seed(seed, players, preset=preset, starting=k != 1, leader=k % 2)
            while not game.is_over:
                move = bots[game.to_move].play(View(game.view(game.to_move)))
                game.pass_turn() if move is None else game.play(list(move))
            twin = Game.from_seed(seed, players, preset=preset, starting=k != 1, leader=k % 2)
            assert rollout(twin)
            assert twin.history == game.history and twin.points == game.points


def test_budget_is_thinking_time_and_searches(monkeypatch):
    monkeypatch.setattr(SearchBot, "budget_ms", 40.0)
    game = Game.from_seed("budget", 4)
    for _ in range(6):  # into the game, where there are choices
        plays = game.legal_plays()
        game.play(plays[0])
    bot = SearchBot(seed=1)
    view = View(game.view(game.to_move))
    cpu = time.thread_time()
    move = bot.play(view)
    spent = (time.thread_time() - cpu) * 1000
    assert move is None and game.can_pass or [c for c in move] in game.legal_plays()
    assert bot.stats["deals"] > 0
    assert 30 <= spent < 40 + 30  # the budget, plus at most one rollout's overrun


def test_the_move_clock_caps_the_search(monkeypatch):
    monkeypatch.setattr(SearchBot, "budget_ms", 5000.0)  # far beyond every clock below
    bot = SearchBot(seed=2)
    game = Game.from_seed("clock", 4)
    game.play(game.legal_plays()[0])
    assert bot.wall_limit_ms(View(game.view(game.to_move))) is None  # arena: no clock
    # the SDK client falls back at 30 ms + 10 % before the deadline; the bot uses 60 % of
    # what is left before that, less 5 ms
    assert bot.wall_limit_ms(View(game.view(game.to_move), time_left_ms=1000)) == 517
    assert bot.wall_limit_ms(View(game.view(game.to_move), time_left_ms=30)) == 0
    start = time.perf_counter()
    bot.play(View(game.view(game.to_move), time_left_ms=200))
    # stopped by the clock (~85 ms of wall time), not the 5 s budget; the bound is generous
    # so that a loaded machine, which only stretches a rollout's overrun, never fails it
    assert (time.perf_counter() - start) * 1000 < 2500
    deals = bot.stats["deals"]
    bot.play(View(game.view(game.to_move), time_left_ms=20))  # no time: the prior's move
    assert bot.stats["deals"] == deals


def test_the_house_deadline_caps_the_search(monkeypatch):
    """At a table a remote seat observes, the referee's house runner holds every answer
    until the pace and tells the bot when to stop (`house_deadline`), so a busy machine
    (or a queue in the house worker pool) makes the search shallower, never its answer
    later than the pace (referee_service/house.py, "Pacing")."""
    monkeypatch.setattr(SearchBot, "budget_ms", 5000.0)
    assert SearchBot().house_pace_ms == 5000.0 + SearchBot.house_pace_slack_ms
    bot = SearchBot(seed=2)
    game = Game.from_seed("clock", 4)
    game.play(game.legal_plays()[0])
    bot.house_deadline = time.monotonic() + 0.1
    start = time.perf_counter()
    bot.play(View(game.view(game.to_move)))
    assert (time.perf_counter() - start) * 1000 < 2500  # not the 5 s budget (generous: load)
    bot.house_deadline = time.monotonic() - 1  # already past: the prior's move, at once
    deals = bot.stats["deals"]
    bot.play(View(game.view(game.to_move)))
    assert bot.stats["deals"] == deals


def test_forced_and_winning_moves_are_not_searched(monkeypatch):
    monkeypatch.setattr(SearchBot, "budget_ms", 1000.0)
    game = Game([parse_cards("5S 5C"), parse_cards("3S 9H")], starting=False, leader=0)
    bot = SearchBot(seed=3)
    assert sorted(str(c) for c in bot.play(View(game.view(0)))) == ["5C", "5S"]  # goes out
    assert bot.stats["deals"] == 0  # not one deal searched (what a timer would only suggest)


def test_budget_setting_is_checked(monkeypatch):
    monkeypatch.setenv("TIENLEN_SEARCH_MS", "fast")
    with pytest.raises(ValueError, match="TIENLEN_SEARCH_MS"):
        _budget_from_env()
    monkeypatch.setenv("TIENLEN_SEARCH_MS", "-5")
    with pytest.raises(ValueError, match="0..60000"):
        _budget_from_env()
    monkeypatch.setenv("TIENLEN_SEARCH_MS", "75")
    assert _budget_from_env() == 75.0


async def spawn_bot(*args: str, **env: str) -> asyncio.subprocess.Process:
    environ = {**os.environ, "PYTHONPATH": str(ROOT), "TIENLEN_TOKEN": TOKEN, **env}
    return await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bots_sdk.cli", *args, env=environ,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)


@pytest.mark.timeout(180)
async def test_search_answers_inside_a_tiny_move_clock(referee):
    """200 ms a move, no time bank, and a thinking budget of 5 s: the bot must cut its
    search to the clock (no strike) and answer itself (the SDK client's fallback, sent when
    the bot overruns the client's margin, covers at most a rare move descheduled on a busy
    machine; an uncapped bot would need it on every move)."""
    proc = await spawn_bot("run", "search", "--server", referee.target, "--exit-when-idle",
                           TIENLEN_SEARCH_MS="5000")
    for _ in range(500):
        if any(referee.registry.connected_bots()):
            break
        assert proc.returncode is None, (await proc.stderr.read()).decode()
        await asyncio.sleep(0.02)
    events = await play_table(referee, "tiny-clock", games=2, move_time_ms=200,
                              time_bank_ms=0, house=("heuristic", "heuristic", "heuristic"))
    result = result_of(events)
    _, err = await asyncio.wait_for(proc.communicate(), 60)
    log = err.decode()
    assert result.games_played == 2 and result.strikes[0] == 0, log
    moves = int(re.search(r"bye: \d+ tables, \d+ games, (\d+) moves", log).group(1))
    assert moves > 10 and log.count("took longer") <= moves // 10, log
    slowest = 0.0
    for event in events:
        if event.WhichOneof("event") == "game":
            seats = list(event.game.seat_participants)
            for m in json.loads(event.game.timing_json)["moves"]:
                if seats[m["seat"]] == 0:
                    slowest = max(slowest, m["elapsed_ms"])
    assert 0 < slowest < 200


@pytest.mark.timeout(240)
async def test_house_search_thinks_off_the_referee_loop(referee, monkeypatch):
    """While a table of house search bots plays, the referee's event loop keeps running
    (every other table and bot stream depends on it). On the loop, each search move
    would hold it for the whole budget; here the budget is 150 ms."""
    from bots_sdk import examples
    from referee_service import house

    # The class the referee's house seats instantiate (examples.EXAMPLES): a test that
    # loaded examples/search.py by its path may have made a second module of it, and
    # patching that one's class changed nothing here.
    Search = examples.get("search")

    monkeypatch.setenv("TIENLEN_SEARCH_MS", "150")
    monkeypatch.setattr(Search, "budget_ms", 150.0)

    async def max_lag(seats: list[str], table_id: str) -> tuple[float, list]:
        loop = asyncio.get_running_loop()
        worst = 0.0
        done = False

        async def probe() -> None:
            nonlocal worst
            while not done:
                t = loop.time()
                await asyncio.sleep(0.005)
                worst = max(worst, loop.time() - t - 0.005)

        task = asyncio.create_task(probe())
        request = org.PlayTableRequest(table_id=table_id, seed=table_id, games=1,
                                       move_time_ms=5000,
                                       seats=[org.SeatSpec(house_bot=h) for h in seats])
        async with grpc.aio.insecure_channel(referee.target) as channel:
            call = org_grpc.OrganizerStub(channel).PlayTable(
                request, metadata=(("authorization", f"Bearer {ORGANIZER}"),))
            events = [event async for event in call]
        done = True
        await task
        return worst * 1000, events

    seats = ("search", "heuristic", "greedy")
    house.shutdown_house_workers()
    # Start the worker process first: its start-up is once per referee, not per move.
    await asyncio.get_running_loop().run_in_executor(house._pool(), int)
    off_lag, events = await max_lag(list(seats), "house-off")
    assert result_of(events).games_played == 1 and list(result_of(events).strikes) == [0, 0, 0]
    monkeypatch.setattr(Search, "house_offload", False)
    on_lag, _ = await max_lag(list(seats), "house-on")
    assert on_lag > 120, on_lag  # what offloading avoids: a stall of the whole budget
    assert off_lag < on_lag / 2.5, (off_lag, on_lag)
    print(f"loop lag: {on_lag:.0f} ms on the loop, {off_lag:.0f} ms offloaded")


def test_the_guides_stronger_bots_code_runs():
    text = (ROOT / "docs" / "bot-guide.md").read_text()
    section = text[text.index("## Stronger bots"):]
    blocks = re.findall(r"```python\n(.*?)```", section, re.S)
    assert len(blocks) == 2
    for block in blocks:
        out = subprocess.run([sys.executable, "-c", block], cwd=ROOT, capture_output=True,
                             text=True, timeout=120)
        assert out.returncode == 0, out.stderr
