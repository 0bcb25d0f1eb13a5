"""A `View` for local simulations that is built only as far as the bot reads it.

`Game.view()` copies the whole public state (history included) on every move, which costs
several times the engine's own move; a random bot needs only the legal plays. A
`LiveView` is a real `View` (same class, same fields) whose fields are filled only as the
bot reads them: `seat`, `can_pass` and `plays` (what every bot reads) when it is made,
`to_move`, `offer`, `players` and `preset` from the live game on first use, and the rest
from `game.view(seat)` on first use of any of them. (The table fields other than
`table_id` keep their class defaults, which are the arena's: game 0, no clock, no score.) It stays a faithful snapshot: call `seal()` after the bot
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
_FROM_GAME = frozenset({"offer", "players", "preset"})


class LiveView(View):
    """The view of the seat to move of `game`, filled lazily (see the module docstring).

    Only the arena's code makes these (never handed a seat that is not to move)."""

    def __init__(self, game: Game, table_id: str = "local") -> None:
        self.renew(game, table_id)

    def renew(self, game: Game, table_id: str = "local") -> None:
        """Point this view at `game`'s current position (when nobody else holds it: the
        arena reuses one object per game instead of building one per move)."""
        values = self.__dict__
        if len(values) != 5:  # the bot read more than these five last time
            values.clear()
        values["seat"] = game.to_move
        values["can_pass"] = game.can_pass
        values["plays"] = game.legal_plays()
        values["table_id"] = table_id
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
            values = self.__dict__
            game = values.get("_game")
            if game is None:
                raise RuntimeError("this view expired when its move was played")
            if name == "to_move":
                value = values["seat"]  # a live view is always of the seat to move
            elif name in _FROM_GAME:
                value = getattr(game, name)
            else:
                self.snapshot()
                return values[name]
            values[name] = value
            return value
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
