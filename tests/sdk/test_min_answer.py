"""`min_answer_ms`: a bot's opt-in to pace its own answers.

The other seats at a table see how long a seat took between their answer and their next
request. A bot that answers forced moves at once and thinks when it has a choice tells
them what its hand allows; with `min_answer_ms` every answer leaves no sooner than that
after its request arrived, whatever the bot did. Measured by the referee (the time it
charges the move, from sending the request to the answer's arrival), against a real
referee on loopback: in-process clients, and `tienlen-bot run --min-answer-ms` as a
process.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import statistics
import subprocess
import sys
from pathlib import Path

import pytest

from bots_sdk import Bot
from bots_sdk.client import BotClient, ClientError

from .helpers import TOKEN, play_table, result_of
from .test_client import connected, finish

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.timeout(120)


def sdk_moves(events) -> list[dict]:
    """The timing records of the SDK bot's moves (it sits at participant 0)."""
    out = []
    for e in events:
        if e.WhichOneof("event") != "game":
            continue
        seat = list(e.game.seat_participants).index(0)
        out += [m for m in json.loads(e.game.timing_json)["moves"]
                if m["seat"] == seat and not m["house"]]
    return out


class ThinksOnlyWithAChoice(Bot):
    """Answers a forced move at once and thinks 15 ms when it has a choice: the
    timing a pacing bot hides."""

    min_answer_ms = 60
    choices = 0
    forced = 0

    async def play(self, view):
        plays = view.legal_plays()
        if len(plays) + view.can_pass > 1:
            type(self).choices += 1
            await asyncio.sleep(0.015)
        else:
            type(self).forced += 1
        return plays[0] if plays else view.pass_turn()


async def test_min_answer_ms_holds_every_answer_forced_or_not(referee):
    ThinksOnlyWithAChoice.choices = ThinksOnlyWithAChoice.forced = 0
    client, task = await connected(ThinksOnlyWithAChoice, referee)
    events = await asyncio.wait_for(play_table(referee, "paced", games=3), 60)
    await finish(client, task)
    assert result_of(events).games_played == 3
    moves = sdk_moves(events)
    assert ThinksOnlyWithAChoice.choices and ThinksOnlyWithAChoice.forced
    assert len(moves) == ThinksOnlyWithAChoice.choices + ThinksOnlyWithAChoice.forced
    # the referee's clock started before the request left; the hold counts from arrival
    assert min(m["elapsed_ms"] for m in moves) >= 60, sorted(m["elapsed_ms"] for m in moves)
    assert all(m["fallback"] is None for m in moves)
    # Move.thinking_us stays the bot's own time: the hold is not reported as thinking
    assert statistics.median(m["thinking_ms"] for m in moves) < 60


class WantsLong(Bot):
    """Asks for a hold much longer than the move clock."""

    min_answer_ms = 5000
    threaded = False

    def play(self, view):
        plays = view.legal_plays()
        return plays[0] if plays else view.pass_turn()


async def test_the_move_clock_wins_over_a_hold_longer_than_it(referee, caplog):
    """A 5 s hold on a 1 s clock without a time bank: every answer is held half the time
    left and still arrives in time, no strike, no fallback; the author is told once."""
    client, task = await connected(WantsLong, referee)
    with caplog.at_level(logging.WARNING, logger="bots_sdk.client"):
        events = await asyncio.wait_for(
            play_table(referee, "clock", games=1, move_time_ms=1000, time_bank_ms=0), 90)
    await finish(client, task)
    result = result_of(events)
    assert result.games_played == 1 and list(result.strikes) == [0, 0, 0, 0]
    moves = sdk_moves(events)
    assert moves and all(m["fallback"] is None for m in moves)
    assert all(500 <= m["elapsed_ms"] < 1000 for m in moves)
    warned = [r for r in caplog.records if "min_answer_ms 5000 is more than half" in r.message]
    assert len(warned) == len(moves).bit_length()  # once, then at 2, 4, 8, ... repeats


async def test_the_client_option_overrides_the_bots_attribute(referee):
    client, task = await connected(WantsLong, referee, min_answer_ms=0)
    events = await asyncio.wait_for(play_table(referee, "override", games=1), 60)
    await finish(client, task)
    moves = sdk_moves(events)
    # held 5 s a move, one game would take minutes: the test's timeout would end it
    assert moves and statistics.median(m["elapsed_ms"] for m in moves) < 2500


@pytest.mark.parametrize("value", [-1, 60_001])
def test_an_impossible_hold_is_a_clear_error(value):
    with pytest.raises(ClientError, match=r"min_answer_ms must be 0\.\.60000"):
        BotClient(WantsLong, target="127.0.0.1:1", token="t", min_answer_ms=value)


def tienlen_bot(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "bots_sdk.cli", *args], capture_output=True,
                          text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(ROOT), **env})


@pytest.mark.parametrize(("args", "env", "message"), [
    (["--min-answer-ms", "-5"], {}, "min_answer_ms must be 0..60000, got -5"),
    (["--min-answer-ms", "soon"], {}, "invalid int value: 'soon'"),
    ([], {"TIENLEN_MIN_ANSWER_MS": "soon"}, "invalid int value: 'soon'"),
])
def test_bad_min_answer_ms_on_the_command_line_is_one_line(args, env, message):
    out = tienlen_bot("run", "random", "--token", "x", "--server", "127.0.0.1:1", *args, **env)
    assert out.returncode == 2
    assert message in out.stderr and "Traceback" not in out.stderr


@pytest.mark.parametrize("how", ["flag", "environment"])
async def test_tienlen_bot_run_paces_a_real_process(referee, how):
    args, env = (["--min-answer-ms", "50"], {}) if how == "flag" else \
        ([], {"TIENLEN_MIN_ANSWER_MS": "50"})
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bots_sdk.cli", "run", "greedy", "--server", referee.target,
        "--exit-when-idle", *args, env={**os.environ, "PYTHONPATH": str(ROOT),
                                        "TIENLEN_TOKEN": TOKEN, **env},
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    try:
        for _ in range(500):
            if any(referee.registry.connected_bots()) or proc.returncode is not None:
                break
            await asyncio.sleep(0.02)
        events = await asyncio.wait_for(play_table(referee, f"cli-{how}", games=1), 60)
        _, err = await asyncio.wait_for(proc.communicate(), 30)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    assert proc.returncode == 0, err.decode()
    moves = sdk_moves(events)
    assert moves and min(m["elapsed_ms"] for m in moves) >= 50
