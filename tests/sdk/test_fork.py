"""`tienlen-bot fork` as a bot author runs it: real processes, replays written by the local
arena (or the engine), a bot file that records the view it was given, and the platform's
replay download through a live server."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bots_sdk.bot import View
from bots_sdk.cards import CARD_TEXT, parse_cards
from bots_sdk.examples.greedy import GreedyBot
from bots_sdk.rules import Game

ROOT = Path(__file__).resolve().parents[2]
GAMES = 4  # arena games per table size


def tienlen_bot(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "bots_sdk.cli", *args],
        capture_output=True, text=True, timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})},
    )


def fork_json(*args: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    out = tienlen_bot("fork", *args, "--json", env=env)
    assert out.returncode == 0, out.stderr
    doc: dict[str, Any] = json.loads(out.stdout)
    return doc


class Games(list[tuple[Path, list[str], dict[str, Any]]]):
    def __repr__(self) -> str:  # hypothesis prints the arguments of a failing example
        return f"<{len(self)} arena games>"


@pytest.fixture(scope="module")
def arena_games(tmp_path_factory: pytest.TempPathFactory) -> Games:
    """Replays of the deterministic example bots from `tienlen-bot arena --replays`, at
    tables of 2, 3 and 4: (file, the bot of each seat, the replay)."""
    games = Games()
    for players, bots in ((4, ("greedy", "heuristic")), (3, ("heuristic", "greedy")), (2, ("heuristic", "greedy"))):
        where = tmp_path_factory.mktemp(f"arena{players}")
        out = tienlen_bot("arena", *bots, "--players", str(players), "--games", str(GAMES),
                          "--seed", f"fork-{players}", "--replays", str(where), "--quiet")
        assert out.returncode == 0, out.stderr
        index = json.loads((where / "index.json").read_text())
        for g in index["games"]:
            path = where / g["file"]
            replay = json.loads(path.read_text())
            if replay["moves"]:  # not an instant win (a game without moves has nothing to fork)
                games.append((path, [index["bots"][name] for name in g["seats"]], replay))
    assert len(games) > 2 * GAMES
    return games


# ------------------------------------------------------------------ reproducing the game


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_the_same_bot_plays_the_stored_move_and_the_stored_game_from_any_move(arena_games, data) -> None:
    path, seats, replay = arena_games[data.draw(st.integers(0, len(arena_games) - 1), label="game")]
    moves = replay["moves"]
    n = data.draw(st.integers(1, len(moves)), label="move")
    seat = moves[n - 1]["seat"]
    doc = fork_json(str(path), "--move", str(n), "--bot", seats[seat], "--continue", "--bots", *seats)
    assert (doc["move"], doc["seat"], doc["moves"]) == (n, seat, len(moves))
    stored = moves[n - 1]
    assert doc["played"]["cards"] == (None if stored.get("pass") else stored["cards"])
    assert doc["bot"]["error"] is None and doc["same"] is True
    assert sorted(parse_cards(doc["bot"]["cards"] or [])) == sorted(parse_cards(doc["played"]["cards"] or []))
    # Played out by the same bots, the game ends as it did.
    assert doc["continued"]["bots"] == seats
    assert doc["continued"]["points"] == replay["result"]["points"]
    assert doc["continued"]["finishing_order"] == replay["result"]["finishing_order"]
    assert doc["continued"]["moves_played"] == len(moves) - n + 1
    assert doc["continued"]["moves"] == moves[n - 1:]  # move for move
    assert doc["stored"] == {k: replay["result"][k] for k in ("finishing_order", "points")}


def test_every_move_of_a_game_is_reproduced(arena_games) -> None:
    """Not a sample: every move of one game, through the module the command calls."""
    from bots_sdk.examples import EXAMPLES
    from bots_sdk.fork import ask, fork_at, same_move, stored_cards

    path, seats, replay = arena_games[0]
    for n in range(1, len(replay["moves"]) + 1):
        fork = fork_at(replay, n)
        answer = ask(fork, EXAMPLES[seats[fork.seat]]())
        assert answer.error is None, (n, answer.error)
        assert same_move(answer.cards, stored_cards(replay["moves"][n - 1])), n


def test_the_text_output_shows_the_position_and_both_moves(arena_games) -> None:
    path, seats, replay = arena_games[0]
    n = next(i for i, m in enumerate(replay["moves"], 1) if i > 4 and not m.get("pass"))
    seat = replay["moves"][n - 1]["seat"]
    played = " ".join(replay["moves"][n - 1]["cards"])
    out = tienlen_bot("fork", str(path), "--move", str(n), "--bot", seats[seat])
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == (f"{path}: preset south, 4 players; move {n} of {len(replay['moves'])}, "
                        f"seat {seat} to move")
    assert lines[1].startswith("  hand (")
    assert any(line.startswith("played:") and played in line for line in lines)
    assert any(line.startswith(f"{seats[seat]}:") and played in line and "(the same move" in line for line in lines)
    # `tienlen-bot replay` numbers the same move N the same way.
    shown = tienlen_bot("replay", str(path)).stdout
    assert re.search(rf"^\s+{n}\. seat {seat} .*{re.escape(played)}", shown, re.M), shown


def test_continue_prints_each_seats_place_and_points(arena_games) -> None:
    path, seats, replay = arena_games[0]
    out = tienlen_bot("fork", str(path), "--move", "1", "--bot", "random", "--continue")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    start = lines.index(next(line for line in lines if line.startswith("played out from move 1 (")))
    rows = lines[start + 2: start + 2 + len(seats)]
    assert [r.split()[:3] for r in rows] == [["seat", str(s), "random"] for s in range(len(seats))]
    places = sorted(int(r.split()[3]) for r in rows)
    assert places == list(range(1, len(seats) + 1))


def test_seat_picks_that_seats_next_turn(arena_games) -> None:
    path, seats, replay = arena_games[0]
    moves = replay["moves"]
    n = 3
    other = next(s for s in range(len(seats)) if s != moves[n - 1]["seat"])
    at = next(i for i in range(n, len(moves) + 1) if moves[i - 1]["seat"] == other)
    doc = fork_json(str(path), "--move", str(n), "--seat", str(other), "--bot", seats[other])
    assert (doc["move"], doc["seat"], doc["same"]) == (at, other, True)


def test_bots_for_the_other_seats_and_a_random_bot_is_reproducible(arena_games) -> None:
    path, seats, replay = arena_games[0]
    n = len(replay["moves"]) // 3
    seat = replay["moves"][n - 1]["seat"]
    others = [b for s, b in enumerate(seats) if s != seat]
    doc = fork_json(str(path), "--move", str(n), "--bot", seats[seat], "--continue", "--bots", *others)
    assert doc["continued"]["bots"] == seats
    assert doc["continued"]["points"] == replay["result"]["points"]
    # `random` answers the same at the same fork, with or without --continue.
    alone = fork_json(str(path), "--move", str(n), "--bot", "random")
    again = fork_json(str(path), "--move", str(n), "--bot", "random", "--continue")
    assert alone["bot"]["cards"] == again["bot"]["cards"]
    once_more = fork_json(str(path), "--move", str(n), "--bot", "random", "--continue")
    for doc in (again, once_more):
        del doc["bot"]["think_ms"]
    assert once_more == again  # the whole game played out the same


def test_an_async_bot_that_keeps_state(arena_games, tmp_path) -> None:
    """Told of the game and asked at each earlier turn, in order, before the fork."""
    path, seats, replay = arena_games[0]
    n = len(replay["moves"]) - 1
    seat = replay["moves"][n - 1]["seat"]
    bot = tmp_path / "counting.py"
    bot.write_text(
        "from bots_sdk.bot import Bot\nfrom bots_sdk.examples.greedy import GreedyBot\n\n"
        "class Counting(Bot):\n"
        "    def on_game_start(self, game):\n        self.turns = []\n"
        "    async def play(self, view):\n"
        "        self.turns.append(len(view.history))\n"
        "        if len(self.turns) > 1 and self.turns[-2] >= self.turns[-1]:\n"
        "            raise AssertionError('asked out of order')\n"
        "        return GreedyBot().play(view)\n")
    doc = fork_json(str(path), "--move", str(n), "--bot", str(bot))
    assert doc["bot"]["error"] is None and doc["bot"]["hook_errors"] == []
    earlier = [i for i, m in enumerate(replay["moves"][: n - 1], 1) if m["seat"] == seat]
    assert [t["move"] for t in doc["bot"]["earlier_turns"]] == earlier
    if seats[seat] == "greedy":
        assert all(t["same"] for t in doc["bot"]["earlier_turns"])


# ------------------------------------------------------------------ what the bot sees

SPY = r'''
import json, os
from bots_sdk.bot import Bot
from bots_sdk.examples.greedy import GreedyBot
from bots_sdk.rules.view import FIELDS


def _plain(value):
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, (int, float, bool, str)) or value is None:
        return value
    return str(value)


class Spy(Bot):
    """Appends every field of each view it is given to a file, then plays as greedy."""

    def on_game_start(self, game):
        self.dealt = [str(c) for c in game.hand]

    def play(self, view):
        doc = {name: _plain(getattr(view, name)) for name in FIELDS}
        doc["dealt"] = self.dealt
        with open(os.environ["SPY_OUT"], "a") as f:
            f.write(json.dumps(doc) + "\n")
        return GreedyBot().play(view)
'''


@pytest.fixture
def spy(tmp_path: Path) -> tuple[Path, Path]:
    bot = tmp_path / "spy.py"
    bot.write_text(SPY)
    return bot, tmp_path / "view.json"


def spied(bot: Path, out: Path, *args: str) -> list[dict[str, Any]]:
    """The views the spy bot was given by `fork ... --bot spy.py`, the fork's own last."""
    out.unlink(missing_ok=True)
    fork_json(*args, "--bot", str(bot), env={"SPY_OUT": str(out)})
    return [json.loads(line) for line in out.read_text().splitlines()]


def _cards_in(value: Any) -> set[str]:
    return {c for c in re.findall(r"\b(?:10|[2-9JQKA])[SCDH]\b", json.dumps(value)) if c in CARD_TEXT}


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_the_view_holds_the_own_hand_and_public_information_only(arena_games, spy, data) -> None:
    bot, out = spy
    path, seats, replay = arena_games[data.draw(st.integers(0, len(arena_games) - 1), label="game")]
    moves = replay["moves"]
    n = data.draw(st.integers(1, len(moves)), label="move")
    seat = moves[n - 1]["seat"]
    views = spied(bot, out, str(path), "--move", str(n))
    view = views[-1]
    before = moves[: n - 1]
    # Asked at each of its earlier turns first, then at the fork.
    assert len(views) == 1 + sum(m["seat"] == seat for m in before)
    assert all(v["seat"] == seat for v in views)
    public = {c for m in before for c in m.get("cards", [])}
    mine_played = {c for m in before if m["seat"] == seat for c in m.get("cards", [])}
    hand = set(replay["hands"][seat]) - mine_played
    assert view["seat"] == seat and view["to_move"] == seat
    assert set(view["hand"]) == hand and view["dealt"] and set(view["dealt"]) == set(replay["hands"][seat])
    # Every card named anywhere in the view is the seat's own or one played in public.
    assert _cards_in(view) <= hand | public | set(replay["hands"][seat])
    others = {c for s, h in enumerate(replay["hands"]) if s != seat for c in h} - public
    assert not _cards_in(view) & others
    assert view["history"] == [{k: m[k] for k in ("seat", "cards", "pass", "offer") if k in m} for m in before]
    game = Game(replay["hands"], preset=replay["preset"], starting=replay["starting"], options=replay["options"])
    for m in before:
        game.pass_turn() if m.get("pass") else game.play(m["cards"])
    assert view["card_counts"] == game.card_counts
    assert view["points"] is None


def _declined_offer_replay(path: Path) -> dict[str, Any]:
    """A non-starting `hue` game (docs/rules.md, steal_lead) in which seat 1 is offered to
    steal the lead and declines: an offer the other seats are never shown."""
    game = Game.from_seed("offer/6", 4, preset="hue", starting=False, leader=0)
    assert game.offer == "steal_lead" and game.to_move == 1
    game.pass_turn()
    greedy = GreedyBot()
    while not game.is_over:
        cards = greedy.play(View(game.view(game.to_move)))
        game.pass_turn() if cards is None else game.play(list(cards))
    replay = game.replay()
    path.write_text(json.dumps(replay))
    return replay


def test_an_offer_is_shown_to_the_seat_it_was_made_to_and_to_no_other(tmp_path, spy) -> None:
    """A declined offer is in no seat's history (docs/bot-guide.md, Offers): the seat it was
    made to saw it only when it was asked, so the fork asks it at its earlier turns too."""
    bot, out = spy
    path = tmp_path / "offer.json"
    replay = _declined_offer_replay(path)
    assert replay["moves"][0] == {"seat": 1, "pass": True, "offer": "steal_lead"}
    (asked,) = spied(bot, out, str(path), "--move", "1")
    assert asked["offer"] == "steal_lead" and asked["seat"] == 1 and asked["plays"]
    later = next(i for i, m in enumerate(replay["moves"], 1) if i > 2 and m["seat"] == 1)
    views = spied(bot, out, str(path), "--move", str(later))
    assert views[0]["offer"] == "steal_lead" and views[0]["history"] == []
    assert all(v["offer"] is None for v in views[1:])
    assert not any(m.get("offer") for m in views[-1]["history"])
    other = next(i for i, m in enumerate(replay["moves"], 1) if i > 2 and m["seat"] == 2)
    views = spied(bot, out, str(path), "--move", str(other))
    assert all(v["seat"] == 2 and v["offer"] is None for v in views)
    assert not any(m.get("offer") for v in views for m in v["history"])
    assert len(views[-1]["history"]) == other - 2  # every move before it but the declined offer


# ------------------------------------------------------------------ bad input


def _one_line_error(out: subprocess.CompletedProcess, code: int = 2, prefix: str = "tienlen-bot: error: ") -> str:
    assert out.returncode == code, (out.returncode, out.stdout, out.stderr)
    assert "Traceback" not in out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(prefix), out.stderr
    return lines[0]


@pytest.mark.parametrize("move", ["0", "-3", "LAST+1"])
def test_a_move_out_of_range(arena_games, move) -> None:
    path, _, replay = arena_games[0]
    total = len(replay["moves"])
    move = str(total + 1) if move == "LAST+1" else move
    line = _one_line_error(tienlen_bot("fork", str(path), "--move", move, "--bot", "greedy"))
    assert line == f"tienlen-bot: error: --move {move} is out of range: this game has moves 1 to {total}"


@pytest.mark.parametrize("seat", ["4", "-1", "99"])
def test_a_seat_that_does_not_exist(arena_games, seat) -> None:
    path, _, _ = arena_games[0]
    line = _one_line_error(tienlen_bot("fork", str(path), "--move", "1", "--seat", seat, "--bot", "greedy"))
    assert line == f"tienlen-bot: error: --seat {seat} is not a seat of this 4-player game (seats 0 to 3)"


def test_a_seat_that_never_moves_again(arena_games) -> None:
    path, _, replay = arena_games[0]
    moves = replay["moves"]
    winner = replay["result"]["finishing_order"][0]  # out first: never asked again
    after = max(i for i, m in enumerate(moves, 1) if m["seat"] == winner) + 1
    line = _one_line_error(tienlen_bot("fork", str(path), "--move", str(after), "--seat", str(winner), "--bot", "greedy"))
    assert line == f"tienlen-bot: error: seat {winner} does not move at or after move {after}"


def _tamper(replay: dict[str, Any], how: str) -> str:
    doc = json.loads(json.dumps(replay))
    if how == "not json":
        return "{not json"
    if how == "not a replay":
        return json.dumps({"hello": "world"})
    if how == "illegal move":
        doc["moves"][0]["cards"] = ["2H"] if "2H" not in doc["hands"][doc["moves"][0]["seat"]] else ["2S"]
        doc["moves"][0].pop("pass", None)
    if how == "result":
        doc["result"]["points"] = [p + 1 for p in doc["result"]["points"]]
    if how == "hands":
        doc["hands"][0], doc["hands"][1] = doc["hands"][1], doc["hands"][0]
    return json.dumps(doc)


@pytest.mark.parametrize(("how", "words"), [
    ("not json", "not a replay: the text is not JSON"),
    ("not a replay", "unsupported replay schema None"),
    ("illegal move", "is illegal"),
    ("result", "replay result differs on 'points'"),
    ("hands", "replay hands are not the deal of its seed"),
])
def test_a_wrong_or_corrupt_file(arena_games, tmp_path, how, words) -> None:
    _, _, replay = arena_games[0]
    path = tmp_path / "bad.json"
    path.write_text(_tamper(replay, how))
    line = _one_line_error(tienlen_bot("fork", str(path), "--move", "1", "--bot", "greedy"))
    assert line.startswith(f"tienlen-bot: error: {path}: ") and words in line, line


def test_a_missing_file_a_directory_and_a_bad_bot(arena_games, tmp_path) -> None:
    path, _, _ = arena_games[0]
    missing = tmp_path / "nope.json"
    line = _one_line_error(tienlen_bot("fork", str(missing), "--move", "1", "--bot", "greedy"))
    assert line == f"tienlen-bot: error: replay file {str(missing)!r} not found"
    _one_line_error(tienlen_bot("fork", str(tmp_path), "--move", "1", "--bot", "greedy"))
    line = _one_line_error(tienlen_bot("fork", str(path), "--move", "1", "--bot", "no_such_bot"))
    assert "no_such_bot" in line
    line = _one_line_error(tienlen_bot("fork", str(path), "--move", "1", "--bot", "greedy", "--continue",
                                       "--bots", "greedy", "greedy"))
    assert "--bots names 2 bots for this 4-player game" in line


def test_a_game_without_moves(tmp_path) -> None:
    """An instant win at the deal: nothing to fork."""
    seed = next(f"instant/{i}" for i in range(10_000)
                if Game.from_seed(f"instant/{i}", 4, preset="south").is_over)
    path = tmp_path / "instant.json"
    path.write_text(json.dumps(Game.from_seed(seed, 4, preset="south").replay()))
    line = _one_line_error(tienlen_bot("fork", str(path), "--move", "1", "--bot", "greedy"))
    assert line == f"tienlen-bot: error: {path}: the game has no moves to fork from"


def test_unreachable_and_unknown_urls(arena_games) -> None:
    line = _one_line_error(tienlen_bot("fork", "http://127.0.0.1:9/games/7/", "--move", "1", "--bot", "greedy"))
    assert line.startswith("tienlen-bot: error: http://127.0.0.1:9/games/7/replay.json: cannot fetch it")
    line = _one_line_error(tienlen_bot("fork", "ftp://example.org/x.json", "--move", "1", "--bot", "greedy"))
    assert "only http:// and https:// URLs" in line


def test_a_bot_that_raises_at_the_fork_is_exit_1_with_the_fallback(arena_games, tmp_path) -> None:
    path, _, _ = arena_games[0]
    bot = tmp_path / "broken.py"
    bot.write_text("from bots_sdk.bot import Bot\n\nclass Broken(Bot):\n"
                   "    def play(self, view):\n        raise RuntimeError('oops')\n")
    out = tienlen_bot("fork", str(path), "--move", "1", "--bot", str(bot))
    assert out.returncode == 1 and "Traceback" not in out.stderr + out.stdout
    assert "play() raised RuntimeError: oops; the referee would play the fallback: leads 3S" in out.stdout


# ------------------------------------------------------------------ a game on the platform


@pytest.mark.django_db(transaction=True)
def test_a_game_url_on_the_platform_and_a_sealed_one(live_server, arena_games) -> None:
    """Through the platform's public replay download, as the user's URL leads to it."""
    from tests.web.factories import make_world
    from tournaments.models import Deal

    path, seats, replay = arena_games[0]
    world = make_world(replay=replay, tables=1, games_per_table=1, slug="fork-live")
    game = world.games[0]
    n = len(replay["moves"]) // 2
    seat = replay["moves"][n - 1]["seat"]
    for url in (f"{live_server.url}/games/{game.pk}/", f"{live_server.url}/api/v1/games/{game.pk}/"):
        doc = fork_json(url, "--move", str(n), "--bot", seats[seat], "--continue", "--bots", *seats)
        assert doc["game"] == f"{live_server.url}/games/{game.pk}/replay.json"
        assert doc["same"] is True and doc["continued"]["points"] == replay["result"]["points"]
    Deal.objects.filter(pk=game.deal_id).update(revealed_at=None)
    line = _one_line_error(tienlen_bot("fork", f"{live_server.url}/games/{game.pk}/", "--move", "1", "--bot", "greedy"),
                           code=3)
    assert "the platform refuses the replay" in line
    assert "withheld until this deal has been played at every table" in line
    line = _one_line_error(tienlen_bot("fork", f"{live_server.url}/games/999999/", "--move", "1", "--bot", "greedy"))
    assert line.endswith("no such game on the platform, or no stored replay (HTTP 404)")
