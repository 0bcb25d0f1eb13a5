"""`tienlen-referee play` as a bot author runs it: a real referee, a real bot process, the
command in its own process; one-line errors for everything the user can get wrong."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from referee_service.auth import BotIdentity, StaticTokenStore
from referee_service.organizer_client import OrganizerClient
from referee_service.server import RefereeThread, referee_in_thread

ROOT = Path(__file__).resolve().parents[2]
ORGANIZER = "play-org-token"
TOKENS = {"alice": "tok-alice-1", "stuck": "tok-stuck-2"}

pytestmark = pytest.mark.timeout(180)


@pytest.fixture
def referee() -> Iterator[RefereeThread]:
    store = StaticTokenStore({t: BotIdentity(b, b.title()) for b, t in TOKENS.items()})
    with referee_in_thread(store, organizer_token=ORGANIZER) as thread:
        yield thread


def start_bot(target: str, name: str, bot: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "bots_sdk.cli", "run", bot, "--server", target,
         "--log-level", "WARNING"],
        cwd=ROOT, env={**os.environ, "TIENLEN_TOKEN": TOKENS[name], "PYTHONPATH": str(ROOT)},
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def wait_connected(target: str, bot_id: str) -> None:
    with OrganizerClient(target, ORGANIZER) as client:
        deadline = time.monotonic() + 30
        while bot_id not in {b.bot_id for b in client.list_bots()}:
            assert time.monotonic() < deadline, f"{bot_id} did not connect"
            time.sleep(0.1)


def play(*args: str, token: str | None = ORGANIZER) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "TIENLEN_ORGANIZER_TOKEN"}
    if token is not None:
        env["TIENLEN_ORGANIZER_TOKEN"] = token
    return subprocess.run([sys.executable, "-m", "referee_service", "play", *args],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)


def test_play_prints_the_result_table_and_no_strikes(referee: RefereeThread) -> None:
    bot = start_bot(referee.target, "alice", "greedy")
    try:
        wait_connected(referee.target, "alice")
        out = play("--server", referee.target, "--games", "6", "--table-id", "try-1",
                   "--seats", "alice,house:heuristic,house:greedy,house:random")
    finally:
        bot.terminate()
        bot.wait(10)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == "table try-1: 6 games, preset south, completed"
    table = lines[4:lines.index("", 4)]  # after the title, a blank line, header and rule
    rows = {line.split()[0]: line.split() for line in table}
    assert set(rows) == {"alice", "house:heuristic", "house:greedy", "house:random"}
    assert all(row[1] == "6" for row in rows.values())  # games each
    assert "strikes: none" in lines
    assert "pairwise (points/game difference, paired over 6 games):" in out.stdout


def test_play_reports_strikes_with_their_reason(referee: RefereeThread, tmp_path: Path) -> None:
    (tmp_path / "stuck.py").write_text(
        "import time\n"
        "from bots_sdk import Bot\n"
        "class Stuck(Bot):\n"
        "    first = True\n"
        "    async def play(self, view):\n"
        "        if Stuck.first:  # blocks its own event loop: the answer comes too late\n"
        "            Stuck.first = False\n"
        "            time.sleep(3.2)  # over 1 s + the 2 s bank\n"
        "        plays = view.legal_plays()\n"
        "        return plays[0] if plays else view.pass_turn()\n")
    bot = start_bot(referee.target, "stuck", str(tmp_path / "stuck.py"))
    try:
        wait_connected(referee.target, "stuck")
        out = play("--server", referee.target, "--games", "2", "--move-time-ms", "1000",
                   "--seats", "stuck,house:random", "--json")
    finally:
        bot.terminate()
        bot.wait(10)
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    stuck = report["participants"][0]
    assert stuck["name"] == "stuck" and stuck["strikes"] >= 1
    assert stuck["strike_reasons"] == {"timeout": stuck["strikes"]}
    assert report["participants"][1]["strikes"] == 0 and report["games"] == 2


@pytest.mark.parametrize("args, token, words", [
    (["--games", "2", "--seats", "house:random,house:greedy"], None,
     "set TIENLEN_ORGANIZER_TOKEN to the referee's organiser token"),
    (["--games", "2", "--seats", "house:random,house:greedy"], "wrong",
     "the referee refused the organiser token: missing or wrong organiser token"),
    (["--games", "2", "--seats", "house:random,house:genius"], ORGANIZER,
     "seats[1]: unknown house bot 'genius' (known: "),
    (["--games", "2", "--seats", "house:random,,house:greedy"], ORGANIZER,
     "--seats: an empty name in"),
    (["--games", "2", "--seats", "house:random"], ORGANIZER,
     "--seats: a table has 2 to 4 seats, got 1"),
    (["--games", "0", "--seats", "house:random,house:greedy"], ORGANIZER,
     "--games must be at least 1"),
    (["--games", "2", "--seats", "zoe,house:greedy", "--wait", "0.5"], ORGANIZER,
     "bots unavailable after 500 ms (not connected: zoe); start each bot first"),
    (["--games", "2", "--seats", "house:random,house:greedy", "--preset", "mars"], ORGANIZER,
     "preset: unknown preset 'mars'"),
    (["--games", "2", "--seats", "house:random,house:greedy", "--option", "nope=1"], ORGANIZER,
     "options_json: unknown option 'nope'"),
])
def test_mistakes_get_one_line(referee: RefereeThread, args: list[str], token: str | None,
                               words: str) -> None:
    out = play("--server", referee.target, *args, token=token)
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("tienlen-referee play: error: "), out.stderr
    assert words in lines[0]


def test_an_address_without_a_referee_is_named() -> None:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    out = play("--server", f"127.0.0.1:{port}", "--games", "1", "--seats", "house:random,house:random")
    assert out.returncode == 2
    assert out.stderr.startswith(f"tienlen-referee play: error: cannot reach the referee at "
                                 f"127.0.0.1:{port}")
    assert "is it running, and is this its --listen address?" in out.stderr
    bad = play("--server", "nowhere", "--games", "1", "--seats", "house:random,house:random")
    assert "--server must be HOST:PORT, got 'nowhere'" in bad.stderr
