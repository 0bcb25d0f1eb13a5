"""`tienlen-bot` as a user runs it: real subprocesses, real files, one-line errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def tienlen_bot(*args: str, cwd: Path | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "bots_sdk.cli", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=timeout,
    )


def test_arena_prints_a_row_per_bot_and_the_pairwise_comparison():
    out = tienlen_bot("arena", "random", "greedy", "heuristic", "--games", "12", "--duplicate", "--seed", "cli")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].startswith("12 games, preset south, 4 players, duplicate deals")
    header = next(line for line in lines if line.startswith("bot "))
    for column in ("seat-games", "1st", "avg place", "points/game (95% CI)", "rejected", "fallbacks", "ms/move"):
        assert column in header
    assert "strikes" not in header  # only a referee strikes (the arena records none)
    # r g h r: random holds two seats, so it has more seat-games than the 12 games.
    assert "(seat-games: a bot named for several seats plays each of them" in out.stdout
    rows = {line.split()[0] for line in lines if line.split() and line.split()[0] in {"random", "greedy", "heuristic"}}
    assert rows == {"random", "greedy", "heuristic"}
    assert "pairwise (points/game difference, paired over 3 duplicate sets)" in out.stdout  # 4 rotations of r g h r
    assert "greedy - heuristic" in out.stdout


def test_arena_json_and_replays(tmp_path):
    out = tienlen_bot(
        "arena", "greedy", "random", "--games", "4", "--players", "2", "--json", "--replays", str(tmp_path)
    )
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["games"] == 4 and [b["name"] for b in doc["bots"]] == ["greedy", "random"]
    assert sum(b["first_places"] for b in doc["bots"]) == 4
    assert len(list(tmp_path.glob("game-*.json"))) == 4

    shown = tienlen_bot("replay", str(tmp_path / "game-000000.json"))
    assert shown.returncode == 0, shown.stderr
    text = shown.stdout
    assert "preset south, 2 players, starting game" in text
    assert "round 1" in text and "leads" in text
    assert "seat 0 (greedy)" in text or "seat 0 (random)" in text  # names from index.json
    assert "finishing order:" in text and "points:" in text


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["arena", "nowhere/bot.py", "random"], "bot file 'nowhere/bot.py' not found"),
        (["arena", "random", "nosuchbot"], "'nosuchbot' is not a bot file"),
        (["arena", "random", "greedy", "--preset", "mars"], "unknown preset 'mars'"),
        (["arena", "random", "greedy", "--option", "no_such_option=1"], "bad --option"),
        (["arena", "random", "greedy", "random", "--players", "2"], "3 bots for 2 seats"),
        (["replay", "missing.json"], "replay file 'missing.json' not found"),
        (["run", "random", "--server", "nonsense", "--token", "x"], "--server must be HOST:PORT"),
        (["run", "random", "--server", "127.0.0.1:1"], "no bot token"),
    ],
)
def test_bad_input_gets_one_line_error(args, message, monkeypatch):
    monkeypatch.delenv("TIENLEN_TOKEN", raising=False)
    out = tienlen_bot(*args)
    assert out.returncode == 2
    assert message in out.stderr
    assert "Traceback" not in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1


def test_a_bot_that_raises_on_import_is_one_line(tmp_path):
    bot = tmp_path / "broken.py"
    bot.write_text("import json\nraise ValueError('no config file')\n")
    out = tienlen_bot("arena", str(bot), "random", "--games", "1")
    assert out.returncode == 2
    assert out.stderr.strip() == f"tienlen-bot: error: {bot}: failed to import: ValueError: no config file"


def test_replay_of_a_tampered_file_says_so(tmp_path):
    tienlen_bot("arena", "greedy", "random", "--games", "1", "--replays", str(tmp_path), "--quiet")
    path = tmp_path / "game-000000.json"
    doc = json.loads(path.read_text())
    doc["result"]["points"] = [99] + doc["result"]["points"][1:]
    path.write_text(json.dumps(doc))
    out = tienlen_bot("replay", str(path))
    assert out.returncode == 0
    assert "!! the replay's stored points [99" in out.stdout
    path.write_text(json.dumps({"schema": "something/9"}))
    out = tienlen_bot("replay", str(path))
    assert out.returncode == 2 and "unsupported replay schema 'something/9'" in out.stderr


@pytest.mark.parametrize(("edit", "message"), [
    (lambda text: text[: len(text) // 2], "not a replay: the text is not JSON"),
    (lambda text: json.dumps({**json.loads(text), "players": 9}), "replay players must be 2, 3 or 4, not 9"),
    # (appended: a game can end at once, with no move, on an instant win)
    (lambda text: json.dumps({**json.loads(text), "moves": [*json.loads(text)["moves"], {"sat": 1}]}),
     "is malformed (no seat of the game)"),
])
def test_a_malformed_replay_is_one_line_naming_the_file_and_the_fault(tmp_path, edit, message):
    """`tienlen-bot replay` reads through the engine's one replay reader: exit 2, one line."""
    tienlen_bot("arena", "greedy", "random", "--games", "1", "--replays", str(tmp_path), "--quiet")
    path = tmp_path / "game-000000.json"
    text = json.dumps(json.loads(path.read_text()))
    path.write_text(edit(text))
    out = tienlen_bot("replay", str(path))
    assert out.returncode == 2, out.stdout
    assert out.stderr.startswith(f"tienlen-bot: error: {path}: ") and message in out.stderr, out.stderr
    assert len(out.stderr.strip().splitlines()) == 1 and out.stdout == ""


def test_new_writes_a_project_whose_tests_pass(tmp_path):
    out = tienlen_bot("new", "my-first_bot", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    project = tmp_path / "my-first_bot"
    assert sorted(p.name for p in project.iterdir()) == [
        "README.md", "bot.py", "pytest.ini", "test_bot.py"]
    hints = out.stdout.split("next:\n", 1)[1].splitlines()
    assert len(hints) == 3 and len({line.index("#") for line in hints}) == 1  # one column
    assert "class MyFirstBot(Bot):" in (project / "bot.py").read_text()
    again = tienlen_bot("new", "my-first_bot", cwd=tmp_path)
    assert again.returncode == 2 and "is not empty" in again.stderr
    tests = subprocess.run(
        # As an author runs it: their project only (no Django plugin, no platform settings).
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:django", str(project)],
        capture_output=True,
        text=True,
        cwd=project,
        env={k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"} | {"PYTHONPATH": str(ROOT)},
        timeout=300,
    )
    assert tests.returncode == 0, tests.stdout + tests.stderr
    assert "2 passed" in tests.stdout
    assert "warning" not in (tests.stdout + tests.stderr).lower()  # pytest-asyncio's, before
    arena = tienlen_bot("arena", str(project / "bot.py"), "random", "--games", "8")
    assert arena.returncode == 0 and "my-first_bot" in arena.stdout


def test_check_reports_problems_and_fails(tmp_path):
    bot = tmp_path / "sloppy.py"
    bot.write_text(
        "from bots_sdk import Bot\n"
        "class Sloppy(Bot):\n"
        "    def play(self, view):\n"
        "        return view.hand[-1:]  # its highest card, legal or not\n"
    )
    out = tienlen_bot("check", str(bot), "--games", "2")
    assert out.returncode == 1
    assert "FAIL  preset south:" in out.stdout
    assert "NOT ready" in out.stdout


def test_check_passes_a_good_bot_including_the_protocol_round_trip():
    out = tienlen_bot("check", "greedy", "--games", "2")
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.count("PASS") == 7  # five presets, timing, round trip
    assert "protocol round trip: 4/4 games over gRPC" in out.stdout
    assert "ready for a ladder" in out.stdout


@pytest.mark.parametrize("command", [["arena", "{bot}", "random", "--games", "1", "--jobs", "2"], ["run", "{bot}", "--token", "t", "--server", "127.0.0.1:1"], ["arena", "{bot}", "random", "--games", "1"]])
def test_a_bot_that_cannot_be_constructed_is_one_line(tmp_path, command):
    bot = tmp_path / "needs_args.py"
    bot.write_text(
        "from bots_sdk import Bot\n"
        "class NeedsArgs(Bot):\n"
        "    def __init__(self, depth):\n"
        "        self.depth = depth\n"
        "    def play(self, view):\n"
        "        return None\n"
    )
    out = tienlen_bot(*[a.format(bot=bot) for a in command])
    assert out.returncode == 2
    assert "NeedsArgs() failed: TypeError" in out.stderr and "Traceback" not in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1


def test_arena_sprt_stops_as_soon_as_it_knows():
    out = tienlen_bot("arena", "heuristic", "random", "--games", "2000", "--duplicate", "--sprt", "0.5")
    assert out.returncode == 0, out.stderr
    first = out.stdout.splitlines()[0]
    played = int(first.split()[0])
    assert played < 2000  # stopped early
    assert "SPRT (heuristic - random, delta 0.5" in out.stdout
    assert "heuristic is better than random;" in out.stdout


def test_ctrl_c_stops_a_multi_process_arena_quietly(tmp_path):
    import signal
    import time

    proc = subprocess.Popen(
        [sys.executable, "-m", "bots_sdk.cli", "arena", "heuristic", "greedy", "--games", "100000",
         "--jobs", "2", "--quiet", "--replays", str(tmp_path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        start_new_session=True,  # its own process group, like a terminal's foreground job
    )
    deadline = time.monotonic() + 60
    while not any(tmp_path.glob("game-*.json")):  # the workers are playing
        assert time.monotonic() < deadline and proc.poll() is None
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C does: the whole group gets it
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130
    assert err.strip() == "tienlen-bot: interrupted"


@pytest.fixture
def web_port():
    """A port where a plain HTTP/1.1 server answers (like the site's)."""
    import http.server
    import threading

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), http.server.SimpleHTTPRequestHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


@pytest.mark.parametrize(
    "where, words",
    [
        ("closed", "nothing accepts connections there (connection refused); check the host and port"),
        ("unknown", "unknown host 'no-such-host.invalid'"),
        ("web", "that port answers, but not with gRPC (a web server?)"),
    ],
)
def test_run_fails_at_once_with_one_line_when_the_first_connection_cannot_work(where, words, web_port):
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        closed = sock.getsockname()[1]
    server = {
        "closed": f"127.0.0.1:{closed}",
        "unknown": "no-such-host.invalid:50051",
        "web": f"127.0.0.1:{web_port}",
    }[where]
    out = tienlen_bot("run", "random", "--server", server, "--token", "t0k", timeout=30)
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1, out.stderr
    assert lines[0].startswith(f"tienlen-bot: error: cannot connect to the referee at {server}: {words}")


@pytest.mark.parametrize(
    ("body", "raised", "rejected"),
    [
        ("raise RuntimeError('always broken')", 1, 0),
        ("return '2H 2D 2C 2S'", 0, 1),  # never even holds them all
    ],
)
def test_arena_fails_when_a_bot_never_makes_a_legal_move(tmp_path, body, raised, rejected):
    """Such a bot used to show hundreds of "strikes" and the arena exited 0 (the
    referee records no strike for it: the SDK answers with the fallback move)."""
    bot = tmp_path / "broken_bot.py"
    bot.write_text(
        "from bots_sdk import Bot\n\n"
        "class Broken(Bot):\n"
        "    def play(self, view):\n"
        f"        {body}\n"
    )
    out = tienlen_bot("arena", str(bot), "greedy", "--games", "3", "--players", "2", "--seed", "broken")
    assert out.returncode == 1, out.stderr
    row = next(line for line in out.stdout.splitlines() if line.startswith("Broken"))
    moves_line = out.stderr.strip()
    assert moves_line.startswith("tienlen-bot: error: Broken never made a legal move of its own: all ")
    moves = int(moves_line.split("all ", 1)[1].split(" ", 1)[0])
    assert f"(play() raised {moves * raised} time(s), {moves * rejected} illegal answer(s))" in moves_line
    # the row: seat-games 3, ..., rejected, fallbacks (every move)
    assert row.split()[-3:-1] == [str(moves * rejected), str(moves)]
    assert "these cost no strike" in out.stdout.replace("\n", " ")
    as_json = tienlen_bot("arena", str(bot), "greedy", "--games", "3", "--players", "2", "--json", "--seed", "broken")
    assert as_json.returncode == 1
    broken = json.loads(as_json.stdout)["bots"][0]
    assert broken["own_moves"] == 0 and broken["fallbacks"] == moves and broken["rejected"] == moves * rejected
    assert broken["seat_games"] == 3 and "strikes" not in broken


def test_arena_passes_a_bot_with_some_legal_moves(tmp_path):
    bot = tmp_path / "half_bot.py"
    bot.write_text(
        "from bots_sdk import Bot\n\n"
        "class Half(Bot):\n"
        "    n = 0\n"
        "    def play(self, view):\n"
        "        Half.n += 1\n"
        "        if Half.n % 2:\n"
        "            raise RuntimeError('odd')\n"
        "        return view.legal_plays()[0]\n"
    )
    out = tienlen_bot("arena", str(bot), "greedy", "--games", "2", "--players", "2")
    assert out.returncode == 0, out.stderr


def test_check_without_a_referee_says_the_round_trip_was_skipped(monkeypatch):
    """An SDK installed alone has no `tienlen-referee`: the check warns and still passes
    (the SDK never imports the referee to run one)."""
    import io

    from bots_sdk import certify
    from bots_sdk.examples import GreedyBot

    monkeypatch.setattr(certify, "referee_command", lambda: None)
    out = io.StringIO()
    report = certify.certify(GreedyBot, games=1, out=out)
    assert report.passed, out.getvalue()
    assert "WARN  protocol round trip skipped: no referee here" in out.getvalue()


def test_check_reports_a_referee_that_does_not_start(monkeypatch):
    import io

    from bots_sdk import certify
    from bots_sdk.examples import GreedyBot

    broken = [sys.executable, "-c", "import sys; print('bad config', file=sys.stderr); sys.exit(3)"]
    monkeypatch.setattr(certify, "referee_command", lambda: broken)
    out = io.StringIO()
    report = certify.certify(GreedyBot, games=1, out=out)
    assert not report.passed
    assert "FAIL  protocol round trip: the referee did not start:" in out.getvalue()
    assert "exited (status 3) before listening: bad config" in out.getvalue()
