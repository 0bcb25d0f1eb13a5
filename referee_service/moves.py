"""One move of a remote seat: its id, the waiter for its answers, the check of an answer
against the engine, and the timing recorded for it (every seat's, house seats' included).
"""

from __future__ import annotations

import asyncio
import secrets
from collections import deque
from dataclasses import dataclass
from typing import Any

from bots_sdk.cards import DECK
from bots_sdk.protocol.tienlen.v1 import bot_gateway_pb2 as gw
from bots_sdk.rules import Game, IllegalMove
from bots_sdk.rules.notes import note_too_long
from referee_service import wire

__all__ = ["DISCONNECTED", "FORFEITED", "MOVE_ID_OFFSETS", "MOVE_ID_SPACING", "STRIKE_NAMES",
           "MoveTiming", "PendingMove", "apply_answer", "new_move_id_base", "note_error"]

DISCONNECTED = object()  # put in a pending move's queue when the stream drops
FORFEITED = object()  # ... when the seat forfeits while its move is pending

STRIKE_NAMES = {
    gw.STRIKE_REASON_TIMEOUT: "timeout",
    gw.STRIKE_REASON_ILLEGAL_MOVES: "illegal_moves",
    gw.STRIKE_REASON_DISCONNECTED: "disconnected",
}


#: Move ids of one seat in one run are its offset plus 1, 2, 3, ...: offsets are random
#: multiples of 2^25 (more requests than a seat can be sent in MAX_GAMES games) below
#: 2^53 (exact as a JavaScript number), so two runs' ids are disjoint unless they drew
#: the same offset.
MOVE_ID_SPACING = 1 << 25
MOVE_ID_OFFSETS = 1 << 28


def new_move_id_base(taken: set[int]) -> int:
    """A random move-id offset for a seat of a new run of a table, none of the ones in
    `taken` (which it joins): the offsets earlier runs of the same table drew on this
    referee, so a late answer meant for one of them never matches this run's requests
    (and across referee processes two runs share an offset with probability 2^-28)."""
    while True:
        base = secrets.randbelow(MOVE_ID_OFFSETS) * MOVE_ID_SPACING
        if base not in taken:
            taken.add(base)
            return base



class PendingMove:
    """The move a seat is being asked for, and the answers that arrived for it.

    A hand-rolled waiter instead of asyncio.Queue + wait_for: wait_for starts a task per
    call, which on the per-move path cost as much as the gRPC round trip."""

    __slots__ = ("move_id", "game_index", "seat", "deadline", "attempts_left", "_answers",
                 "_waiter")

    def __init__(self, move_id: int, game_index: int, seat: int, deadline: float = 0.0,
                 attempts_left: int = 0) -> None:
        self.move_id = move_id
        self.game_index = game_index
        self.seat = seat
        # what a rejection of a misaddressed answer tells the bot about this request
        self.deadline = deadline  # event-loop time
        self.attempts_left = attempts_left
        self._answers: deque[Any] = deque()
        self._waiter: asyncio.Future[None] | None = None

    def put(self, item: Any) -> None:
        self._answers.append(item)
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def get(self, timeout: float) -> Any:
        """The next answer; TimeoutError after `timeout` seconds without one."""
        if not self._answers:
            loop = asyncio.get_running_loop()
            waiter = self._waiter = loop.create_future()
            handle = loop.call_later(timeout, _expire, waiter)
            try:
                await waiter
            finally:
                handle.cancel()
                self._waiter = None
        return self._answers.popleft()


def _expire(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_exception(TimeoutError())


@dataclass(slots=True)
class MoveTiming:
    seat: int
    move_id: int | None
    elapsed_ms: float
    thinking_ms: float | None = None
    network_ms: float | None = None
    attempts: int = 1
    fallback: str | None = None
    house: bool = False
    played: list[int] | None = None  # card indices applied (None: a pass); not recorded
    # The bot's note on its accepted move: goes into the replay record (owner-only on the
    # platform), never into the timing log, which the game page shows to everyone.
    note: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "seat": self.seat,
            "move_id": self.move_id,
            "elapsed_ms": round(self.elapsed_ms, 3),
            "thinking_ms": None if self.thinking_ms is None else round(self.thinking_ms, 3),
            "network_ms": None if self.network_ms is None else round(self.network_ms, 3),
            "attempts": self.attempts,
            "fallback": self.fallback,
            "house": self.house,
        }


def note_error(move: gw.Move) -> tuple[gw.MoveErrorCode.ValueType, str] | None:
    """(NOTE_TOO_LONG, reason) when the Move's note is over bots_sdk.rules.notes.MAX_NOTE_BYTES. Checked before
    the move is applied: the answer is refused whole, so a note is never cut short."""
    reason = note_too_long(move.note) if move.note else None
    return None if reason is None else (gw.MOVE_ERROR_CODE_NOTE_TOO_LONG, reason)


def apply_answer(game: Game, move: gw.Move) -> tuple[gw.MoveErrorCode.ValueType, str] | None:
    """Apply a bot's answer to the game; return (MoveErrorCode, reason) if it is illegal.

    Everything a bot can put in a Move is checked here or by the engine, which leaves the
    game unchanged when it refuses a move."""
    cards = list(move.cards)
    try:
        if getattr(move, "pass"):
            if cards:
                return gw.MOVE_ERROR_CODE_PASS_WITH_CARDS, "a pass cannot carry cards"
            game.pass_turn()
            return None
        if not cards:
            return gw.MOVE_ERROR_CODE_EMPTY_PLAY, "no cards played; set pass = true to pass"
        if max(cards) > 51:
            unknown = next(c for c in cards if c > 51)
            return (gw.MOVE_ERROR_CODE_UNKNOWN_CARD,
                    f"unknown card {unknown} (cards are integers 0..51)")
        if len(set(cards)) != len(cards):
            twice = next(c for c in cards if cards.count(c) > 1)
            return (gw.MOVE_ERROR_CODE_DUPLICATE_CARD,
                    f"card {DECK[twice]} named twice")
        game.play([DECK[c] for c in cards])
        return None
    except IllegalMove as exc:
        code = wire.MOVE_ERROR_CODES.get(exc.code, gw.MOVE_ERROR_CODE_ILLEGAL_PLAY)
        return code, str(exc) or "illegal move"

