"""A `View` for local simulations that is built only as far as the bot reads it.

`Game.view()` copies the whole public state (history included) on every move, which costs
several times the engine's own move; a random bot needs only the legal plays. A
`LiveView` is a real `View` (same class, same fields) whose cheap fields are taken from
the live game when it is made (`seat`, `to_move`, `can_pass`, `plays`, `offer`,
`players`, `preset`: what most bots read) and whose other fields are filled from
`game.view(seat)` on first use. It stays a faithful snapshot: call `seal()` after the bot
returned and before the game moves on; if the bot kept a reference to the view (CPython
reference counts tell), the full snapshot is taken at that moment.
"""

from __future__ import annotations

import sys
from typing import Any

from bots_sdk.bot import View
from bots_sdk.rules import Game
from bots_sdk.rules.view import FIELDS

__all__ = ["COUNTS_REFS", "LiveView", "seal"]

#: Whether reference counts can tell that a bot kept a view (CPython); elsewhere every
#: view is snapshotted.
COUNTS_REFS = sys.implementation.name == "cpython"
_LAZY = frozenset(FIELDS)


class LiveView(View):
    """The view of the seat to move of `game`, filled lazily (see the module docstring).

    Only the arena's code makes these (never handed a seat that is not to move)."""

    def __init__(self, game: Game, table_id: str = "local") -> None:
        self.renew(game, table_id)

    def renew(self, game: Game, table_id: str = "local") -> None:
        """Point this view at `game`'s current position (when nobody else holds it: the
        arena reuses one object per game instead of building one per move)."""
        values = self.__dict__
        values.clear()
        seat = game.to_move
        values["seat"] = values["to_move"] = seat
        values["can_pass"] = game.can_pass
        values["plays"] = game.legal_plays()
        values["offer"] = game.offer
        values["players"] = game.players
        values["preset"] = game.preset
        values["table_id"] = table_id
        values["game_index"] = 0
        values["time_left_ms"] = None
        values["table_score"] = 0
        values["_game"] = game

    def snapshot(self) -> None:
        """Fill every field now (from the game, while it is still at this position) and
        let go of the game."""
        values = self.__dict__
        game = values.pop("_game", None)
        if game is not None:
            full = game.view(values["seat"])
            for name in FIELDS:
                values.setdefault(name, getattr(full, name))

    def __getattr__(self, name: str) -> Any:
        # Called only for a field not filled yet (and for unknown names).
        if name in _LAZY:
            if "_game" not in self.__dict__:
                raise RuntimeError("this view expired when its move was played")
            self.snapshot()
            return self.__dict__[name]
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")


def seal(view: LiveView, held: int) -> None:
    """Call after the bot returned and before the game moves: `held` is how many
    references the caller itself holds to `view` (its variables); any more means the bot
    kept the view, so it gets its full snapshot now. The view then lets go of the game."""
    # + 2: this function's parameter and getrefcount's own argument
    if not COUNTS_REFS or sys.getrefcount(view) > held + 2:
        view.snapshot()
    else:
        view.__dict__.pop("_game", None)
