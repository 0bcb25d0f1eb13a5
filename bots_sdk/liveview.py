"""A seat view for the local arena that is built only as far as the bot reads it.

`Game.view()` copies the whole public state (history included) on every move, which costs
several times the engine's own move; a random bot needs only the legal plays. This view
answers the cheap fields straight from the live game and builds the full `SeatView` on
first use of anything else. It stays a faithful snapshot: the arena calls `seal()` before
the game moves on, and if the bot kept a reference to the view (CPython reference counts
tell), the full snapshot is taken at that moment.
"""

from __future__ import annotations

import sys
from typing import Any

__all__ = ["LiveSeatView", "seal"]

_COUNTS_REFS = sys.implementation.name == "cpython"


class LiveSeatView:
    """Duck-types the engine's SeatView (same attribute names and `to_dict()`).

    The fields every bot reads (`seat`, `players`, `preset`, `to_move`, `can_pass`,
    `offer`, `legal_plays`) are captured when the view is made; they are cheap, and the
    engine's lazy `legal_plays` sequence is itself a snapshot. Everything else comes from
    the full `SeatView`, built on first use."""

    __slots__ = (
        "_full",
        "_game",
        "can_pass",
        "legal_plays",
        "offer",
        "players",
        "preset",
        "seat",
        "to_move",
    )

    def __init__(self, game: Any, seat: int) -> None:
        self._game = game
        self._full: Any = None
        self.seat = seat
        self.players = game.players
        self.preset = game.preset
        to_move = game.to_move
        self.to_move = to_move
        mine = to_move == seat
        self.can_pass = mine and game.can_pass
        self.offer = game.offer if mine else None
        self.legal_plays = game.legal_plays() if mine else ()

    @classmethod
    def for_mover(cls, game: Any) -> LiveSeatView:
        """The view of the seat to move (the arena's only case), built a little faster."""
        self = cls.__new__(cls)
        self._game = game
        self._full = None
        self.seat = self.to_move = game.to_move
        self.players = game.players
        self.preset = game.preset
        self.can_pass = game.can_pass
        self.offer = game.offer
        self.legal_plays = game.legal_plays()
        return self

    def _snapshot(self) -> Any:
        if self._full is None:
            if self._game is None:
                raise RuntimeError("this view expired when its move was played")
            self._full = self._game.view(self.seat)
        return self._full

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(self._snapshot(), name)

    def __repr__(self) -> str:
        return f"LiveSeatView(seat={self.seat}, full={self._full is not None})"


def seal(view: Any, live: LiveSeatView, view_refs: int, live_refs: int) -> None:
    """Call after the bot returned and before the game moves. `view_refs`/`live_refs` are
    the reference counts the caller itself holds (measured once, see `baseline_refs`); any
    more means the bot kept the view, so it gets its full snapshot now."""
    if not _COUNTS_REFS or sys.getrefcount(view) > view_refs or sys.getrefcount(live) > live_refs:
        live._snapshot()
    live._game = None
