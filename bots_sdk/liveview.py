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

    `seat`, `can_pass` and `legal_plays` (what every bot reads) are captured when the view
    is made: they are cheap, and the engine's lazy `legal_plays` sequence is itself a
    snapshot. `players`, `preset`, `to_move` and `offer` are read from the game while the
    view is current; everything else comes from the full `SeatView`, built on first use."""

    __slots__ = ("_full", "_game", "can_pass", "legal_plays", "seat")

    def __init__(self, game: Any, seat: int | None = None) -> None:
        """`seat` defaults to the seat to move (the arena's case, kept on the fast path)."""
        self._game = game
        self._full: Any = None
        mover = game.to_move
        if seat is None or seat == mover:
            self.seat = mover
            self.can_pass = game.can_pass
            self.legal_plays = game.legal_plays()
        else:
            self.seat = seat
            self.can_pass = False
            self.legal_plays = ()
            self._snapshot()  # not the arena's case: keep it simple and exact

    def _live(self) -> Any:
        """The game, while this view is current (or None once the full view exists)."""
        if self._full is not None:
            return None
        if self._game is None:
            raise RuntimeError("this view expired when its move was played")
        return self._game

    @property
    def players(self) -> int:
        g = self._live()
        return g.players if g is not None else self._full.players

    @property
    def preset(self) -> str:
        g = self._live()
        return g.preset if g is not None else self._full.preset

    @property
    def to_move(self) -> int | None:
        g = self._live()
        return self.seat if g is not None else self._full.to_move

    @property
    def offer(self) -> str | None:
        g = self._live()
        return g.offer if g is not None else self._full.offer

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
