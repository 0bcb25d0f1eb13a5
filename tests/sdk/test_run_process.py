"""`tienlen-bot run` and `run(MyBot)` as real processes against a real referee."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path

import pytest

from .helpers import TOKEN, play_table, result_of

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.timeout(120)


async def spawn(*args: str) -> asyncio.subprocess.Process:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TIENLEN_TOKEN": TOKEN}
    return await asyncio.create_subprocess_exec(
        sys.executable, *args, env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )


async def wait_connected(referee_, proc: asyncio.subprocess.Process) -> None:
    for _ in range(500):
        if any(referee_.registry.connected_bots()):
            return
        if proc.returncode is not None:
            raise AssertionError((await proc.stderr.read()).decode())
        await asyncio.sleep(0.02)
    raise AssertionError("the bot process did not connect")


async def test_a_bot_file_runs_itself_with_run_and_exits_when_idle(referee, tmp_path):
    bot = tmp_path / "selfrun.py"
    bot.write_text(
        "from bots_sdk import Bot, run\n"
        "class SelfRun(Bot):\n"
        "    def play(self, view):\n"
        "        plays = view.legal_plays()\n"
        "        return plays[0] if plays else view.pass_turn()\n"
        "if __name__ == '__main__':\n"
        "    run(SelfRun)\n"
    )
    proc = await spawn(str(bot), "--server", referee.target, "--exit-when-idle")
    await wait_connected(referee, proc)
    events = await play_table(referee, "selfrun", games=2)
    assert result_of(events).games_played == 2
    _, err = await asyncio.wait_for(proc.communicate(), 30)
    log = err.decode()
    assert proc.returncode == 0, log
    assert "connected to" in log and "running SelfRun" in log
    assert "table selfrun, game 2 over" in log  # games count from 1, as on the site
    assert "bye: 1 tables, 2 games" in log
    assert TOKEN not in log  # the secret never reaches the log


async def test_ctrl_c_finishes_the_running_table_then_exits(referee):
    proc = await spawn("-m", "bots_sdk.cli", "run", "greedy", "--server", referee.target)
    await wait_connected(referee, proc)
    table = asyncio.create_task(play_table(referee, "ctrl-c", games=3, move_time_ms=1000))
    for _ in range(500):
        if referee.registry.tables:
            break
        await asyncio.sleep(0.01)
    await asyncio.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    result = result_of(await asyncio.wait_for(table, 60))
    _, err = await asyncio.wait_for(proc.communicate(), 30)
    log = err.decode()
    assert proc.returncode == 0, log
    assert result.games_played == 3 and result.strikes[0] == 0
    assert "interrupt: finishing running tables" in log
    assert "Traceback" not in log
