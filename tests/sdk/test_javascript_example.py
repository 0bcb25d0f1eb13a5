"""The JavaScript example bot (bots_sdk/examples/javascript) against a real referee: the
proof that the protocol needs nothing from the platform's Python code. Its npm packages
are installed from the registry in the set-up (`npm ci`, from its package-lock.json); the
tests skip, saying so, only where Node.js is not installed."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from bots_sdk.protocol.tienlen.v1 import organizer_pb2 as org
from bots_sdk.rules import PRESETS
from referee_service.auth import BotIdentity, StaticTokenStore
from referee_service.organizer_client import OrganizerClient
from referee_service.server import RefereeThread, referee_in_thread

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "bots_sdk" / "examples" / "javascript"
NODE, NPM = shutil.which("node"), shutil.which("npm")
TOKEN = "tok-js-example-1"
ORGANIZER = "js-org-token"

pytestmark = [
    pytest.mark.skipif(NODE is None or NPM is None,
                       reason="Node.js (node and npm, version 20 or later) is not installed: "
                              "the JavaScript example bot cannot be run here"),
    pytest.mark.timeout(600),
]


@pytest.fixture(scope="module")
def bot_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the example with its packages installed, as its README says to run it."""
    assert NODE is not None and NPM is not None
    version = subprocess.run([NODE, "--version"], capture_output=True, text=True).stdout
    major = int(re.match(r"v(\d+)", version)[1])  # type: ignore[index]
    if major < 20:
        pytest.skip(f"the JavaScript example needs Node.js 20 or later, this is {version.strip()}")
    where = tmp_path_factory.mktemp("js-bot")
    for name in ("bot.js", "package.json", "package-lock.json"):
        shutil.copy(EXAMPLE / name, where / name)
    install = subprocess.run([NPM, "ci", "--no-audit", "--no-fund"], cwd=where,
                             capture_output=True, text=True, timeout=300)
    assert install.returncode == 0, install.stdout + install.stderr
    return where


@pytest.fixture
def referee() -> Iterator[RefereeThread]:
    store = StaticTokenStore({TOKEN: BotIdentity("jsbot", "JS example")})
    with referee_in_thread(store, organizer_token=ORGANIZER) as thread:
        yield thread


def node_bot(bot_dir: Path, server: str, *args: str) -> subprocess.Popen:
    env = {**os.environ, "TIENLEN_TOKEN": TOKEN, "TIENLEN_PROTO_DIR": str(ROOT / "proto")}
    return subprocess.Popen([NODE, "bot.js", "--server", server, *args], cwd=bot_dir, env=env,  # type: ignore[list-item]
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_the_javascript_bot_plays_every_preset_and_size_without_a_rejected_move(
        bot_dir: Path, referee: RefereeThread) -> None:
    bot = node_bot(bot_dir, referee.target, "--max-tables", "2")
    tables = 0
    moves = noted = 0
    try:
        with OrganizerClient(referee.target, ORGANIZER, timeout=300) as client:
            deadline = time.monotonic() + 30
            while "jsbot" not in {b.bot_id for b in client.list_bots()}:
                assert bot.poll() is None, bot.communicate()
                assert time.monotonic() < deadline, "the JavaScript bot did not connect"
                time.sleep(0.1)
            listed = {b.bot_id: b for b in client.list_bots()}["jsbot"]
            assert listed.max_tables == 2 and listed.bot_name == "JS example"
            for preset in sorted(PRESETS):
                for players in (2, 3, 4):
                    seats = ["jsbot", "house:heuristic", "house:greedy", "house:random"][:players]
                    events = list(client.play_table(table_id=f"js-{preset}-{players}",
                                                    seats=seats, preset=preset, games=3))
                    result = events[-1]
                    assert result.status == org.TABLE_STATUS_COMPLETED, result
                    assert result.strikes[0] == 0 and not result.forfeited
                    for game in events[1:-1]:
                        seat = list(game.seat_participants).index(0)
                        mine = [m for m in json.loads(game.timing_json)["moves"] if m["seat"] == seat]
                        # every answer legal at the first attempt, none replaced
                        assert all(m["attempts"] == 1 and m["fallback"] is None for m in mine)
                        # each with its note in the record, and only the bot's own moves
                        replay = json.loads(game.replay_json)
                        assert [m["seat"] for m in replay["moves"] if "note" in m] == [m["seat"] for m in mine]
                        noted += sum(1 for m in replay["moves"] if m.get("note", "").startswith("lowest of "))
                        moves += len(mine)
                    tables += 1
    finally:
        bot.send_signal(signal.SIGINT)  # leaves with Goodbye and a last line
        out, err = bot.communicate(timeout=30)
    assert bot.returncode == 0, out + err
    assert moves > 100 and noted > 0
    assert f"bye: {tables} tables, {moves} moves, 0 rejected, 0 strikes" in out, out
    assert "connected to" in out and "as JS example (bot id jsbot" in out


def test_the_javascript_bot_fails_at_once_on_an_address_without_a_referee(bot_dir: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    bot = node_bot(bot_dir, f"127.0.0.1:{port}")
    out, err = bot.communicate(timeout=30)
    assert bot.returncode == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(
        f"bot.js: error: cannot connect to the referee at 127.0.0.1:{port}: UNAVAILABLE"), err


def test_the_javascript_bot_given_one_referee_plays_on_every_referee_of_the_pool(
        bot_dir: Path) -> None:
    """docs/protocol.md's "Referee pools" in another language: it learns the second
    referee from the first one's RefereePool, plays there, and shares its table capacity."""
    from referee_service.pool import MemoryPoolRegistry

    store = StaticTokenStore({TOKEN: BotIdentity("jsbot", "JS example")})
    pool = MemoryPoolRegistry(timeout_s=2.0)
    with referee_in_thread(store, organizer_token=ORGANIZER, pool=pool, pool_heartbeat_s=0.05) as a, \
            referee_in_thread(store, organizer_token=ORGANIZER, pool=pool, pool_heartbeat_s=0.05) as b:
        bot = node_bot(bot_dir, a.target, "--max-tables", "2")
        try:
            with OrganizerClient(a.target, ORGANIZER, timeout=120) as on_a, \
                    OrganizerClient(b.target, ORGANIZER, timeout=120) as on_b:
                deadline = time.monotonic() + 30
                while not all("jsbot" in {x.bot_id for x in c.list_bots()} for c in (on_a, on_b)):
                    assert bot.poll() is None, bot.communicate()
                    assert time.monotonic() < deadline, "the JavaScript bot did not reach both referees"
                    time.sleep(0.1)
                for client, name in ((on_a, "on-a"), (on_b, "on-b")):
                    events = list(client.play_table(table_id=name, games=2,
                                                    seats=["jsbot", "house:greedy", "house:random"]))
                    result = events[-1]
                    assert result.status == org.TABLE_STATUS_COMPLETED and result.strikes[0] == 0
                # a table running on a: b is told the bot has one free table slot left
                running = on_a.play_table(table_id="long", games=30, move_time_ms=1000,
                                          seats=["jsbot", "house:greedy"])
                next(running)  # TableStarted: the table is running
                while {x.bot_id: x for x in on_b.list_bots()}["jsbot"].max_tables != 1:
                    assert time.monotonic() < deadline + 30, "b was never told"
                    time.sleep(0.05)
                assert list(running)[-1].status == org.TABLE_STATUS_COMPLETED
        finally:
            bot.send_signal(signal.SIGINT)
            out, err = bot.communicate(timeout=30)
    assert bot.returncode == 0, out + err
    assert "bye: 3 tables" in out and "0 rejected, 0 strikes" in out, out
    assert "pool: connecting to referee" in out, out
