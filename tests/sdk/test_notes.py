"""Move notes in the SDK (docs/bot-guide.md, "Notes"): `view.note()` during `play`, sent
with the answer to the referee, kept in the local arena's replays (each bot's own only in
what its hooks get) and printed by `tienlen-bot replay`."""

from __future__ import annotations

import json

import pytest

from bots_sdk import Bot
from bots_sdk.arena import ArenaConfig, Lineup, run_arena
from bots_sdk.bot import View
from bots_sdk.rules import Game, replay_game
from bots_sdk.rules.notes import MAX_NOTE_BYTES

from .helpers import play_table
from .test_cli import tienlen_bot
from .test_client import connected, finish

pytestmark = pytest.mark.timeout(120)

NOTING_BOT = """
from bots_sdk import Bot

class Noting(Bot):
    seen_notes = []

    def play(self, view):
        plays = view.legal_plays()
        view.note(f"{NAME} move {len(view.history)}: {len(plays)} plays\\x1b[2J")
        return plays[0] if plays else view.pass_turn()

    def on_game_end(self, result):
        moves = result.replay["moves"]
        Noting.seen_notes.append(sorted({m["seat"] for m in moves if "note" in m}))
        assert all(m["note"].startswith(NAME) for m in moves if "note" in m)
"""


def test_a_note_is_a_short_string_checked_at_once() -> None:
    view = View(Game.from_seed("n", 4).view(0))
    assert view.noted is None
    view.note("first")
    view.note("ắ" * (MAX_NOTE_BYTES // 3))  # 255 bytes: fits; replaces the first
    assert view.noted == "ắ" * (MAX_NOTE_BYTES // 3)
    with pytest.raises(ValueError, match=f"note is 258 bytes of UTF-8; at most {MAX_NOTE_BYTES} are kept"):
        view.note("ắ" * 86)
    with pytest.raises(ValueError, match="takes a string, not int"):
        view.note(42)  # type: ignore[arg-type]
    assert view == View(Game.from_seed("n", 4).view(0))  # a note is not part of the view


def test_the_arena_keeps_notes_in_replays_and_prints_them(bot_file, tmp_path) -> None:
    mine = bot_file(NOTING_BOT.replace("NAME", "'mine'"), "mine.py")
    replays = tmp_path / "replays"
    result = run_arena(ArenaConfig(lineup=Lineup.build([str(mine), "greedy"], 2), players=2,
                                   games=2, seed="notes", replays_dir=replays))
    assert len(result.records) == 2
    files = sorted(replays.glob("game-*.json"))
    assert len(files) == 2
    index = json.loads((replays / "index.json").read_text())
    for f in files:
        doc = json.loads(f.read_text())
        replay_game(doc)
        entry = next(g for g in index["games"] if g["file"] == f.name)
        my_seat = entry["seats"].index("Noting")
        assert {m["seat"] for m in doc["moves"] if "note" in m} == {my_seat}
        assert all("note" in m for m in doc["moves"] if m["seat"] == my_seat)
    shown = tienlen_bot("replay", str(files[0]))
    assert shown.returncode == 0, shown.stderr
    assert 'note: mine move 0: ' in shown.stdout or "note: mine move 1: " in shown.stdout
    assert "\x1b" not in shown.stdout and "\\u001b[2J" in shown.stdout  # escaped, not obeyed


def test_a_bot_sees_only_its_own_notes_in_the_arena(bot_file) -> None:
    a = bot_file(NOTING_BOT.replace("NAME", "'a'"), "a.py")
    b = bot_file(NOTING_BOT.replace("NAME", "'b'").replace("Noting", "Other"), "b.py")
    result = run_arena(ArenaConfig(lineup=Lineup.build([str(a), str(b)], 2), players=2,
                                   games=2, seed="own"))
    assert len(result.records) == 2  # the hooks' asserts held (an error would be reported)
    assert not result.errors, result.errors


class Explaining(Bot):
    """Notes every move; one note too long (a ValueError in play: the fallback is sent)."""

    def __init__(self) -> None:
        self.n = 0

    def play(self, view):
        self.n += 1
        if self.n == 2:
            view.note("x" * (MAX_NOTE_BYTES + 1))
        view.note(f"sdk note {self.n}")
        plays = view.legal_plays()
        return plays[0] if plays else view.pass_turn()


async def test_the_client_sends_the_note_with_the_answer(referee) -> None:
    client, task = await connected(Explaining, referee)
    events = await play_table(referee, "notes", games=1)
    await finish(client, task)
    (record,) = [e.game for e in events if e.WhichOneof("event") == "game"]
    replay = json.loads(record.replay_json)
    seat = list(record.seat_participants).index(0)
    mine = [m for m in replay["moves"] if m["seat"] == seat]
    assert mine and [m.get("note") for m in mine][:3] == ["sdk note 1", None, "sdk note 3"]
    assert all("note" not in m for m in replay["moves"] if m["seat"] != seat)
    assert client.stats.fallbacks == 1 and client.stats.rejected == 0
