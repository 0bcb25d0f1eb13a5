"""Move notes: what a bot said about why it played a move (docs/replay-format.md, "Notes").

A note is the bot's private data. The record keeps it as an optional `note` key on the
move it explains; whoever hands a replay to someone else strips the notes of every seat
that someone may not read (`without_notes`). The bound is here so the referee, the local
arena and the SDK refuse the same notes.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

__all__ = ["MAX_NOTE_BYTES", "NOTE_KEY", "has_notes", "note_too_long", "with_notes", "without_notes"]

#: The longest note, in UTF-8 bytes (the wire's NOTE_TOO_LONG past it).
MAX_NOTE_BYTES = 256

#: The key of a move that holds its note.
NOTE_KEY = "note"


def note_too_long(note: str) -> str | None:
    """Why `note` is refused (over MAX_NOTE_BYTES of UTF-8), or None when it fits."""
    try:
        size = len(note.encode("utf-8"))
    except UnicodeEncodeError:
        return "note is not valid text (it has a lone surrogate)"
    if size > MAX_NOTE_BYTES:
        return f"note is {size} bytes of UTF-8; at most {MAX_NOTE_BYTES} are kept"
    return None


def with_notes(replay: dict[str, Any], notes: Sequence[str | None]) -> dict[str, Any]:
    """The replay with `notes[i]` on its move i (one per move, None or "" for none): the
    record keeps only the notes that were given, so a game without notes reads as before."""
    moves = replay["moves"]
    if len(notes) != len(moves):
        raise ValueError(f"{len(notes)} notes for {len(moves)} moves")
    replay["moves"] = [
        {**move, NOTE_KEY: note} if note else move for move, note in zip(moves, notes, strict=True)
    ]
    return replay


def has_notes(replay: dict[str, Any]) -> bool:
    """Does any move of the replay carry a note?"""
    return any(isinstance(m, dict) and NOTE_KEY in m for m in replay.get("moves") or ())


def without_notes(replay: dict[str, Any], keep_seats: Collection[int] = ()) -> dict[str, Any]:
    """A copy of the replay without the notes of any seat outside `keep_seats` (the
    replay itself is left as it is): what may be shown to someone who owns those seats
    only (none: the public)."""
    out = dict(replay)
    out["moves"] = [
        {k: v for k, v in move.items() if k != NOTE_KEY}
        if isinstance(move, dict) and NOTE_KEY in move and move.get("seat") not in keep_seats
        else move
        for move in replay.get("moves") or ()
    ]
    return out
