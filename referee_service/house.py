"""House bots: the SDK's example bots playing seats in-process.

They fill seats for testing and for tables short of entrants. They see exactly what a
remote bot sees (the engine's per-seat view, wrapped in the SDK's `View`).
"""

from __future__ import annotations

import inspect
from typing import Any


def house_bot_names() -> frozenset[str]:
    from bots_sdk.examples import EXAMPLES

    return frozenset(EXAMPLES)


class HouseBot:
    """One example bot instance for one participant of one table."""

    def __init__(self, policy: str, *, seed: str) -> None:
        from bots_sdk.examples import get

        cls = get(policy)
        params = inspect.signature(cls).parameters
        self.bot = cls(seed=seed) if "seed" in params else cls()
        self._game_index: int | None = None

    async def choose(self, game: Any, seat: int, table_id: str,
                     game_index: int) -> tuple[Any, ...] | None:
        """The bot's move as cards, or None for a pass (not yet checked for legality)."""
        from bots_sdk.bot import GameInfo, View, call_hook, normalize_move

        if game_index != self._game_index:
            self._game_index = game_index
            await call_hook(self.bot.on_game_start(GameInfo(
                table_id=table_id, game_index=game_index, seat=seat,
                hand=tuple(game.hands[seat]), starting=bool(getattr(game, "starting", True)),
                leader=getattr(game, "leader", None))))
        view = View(seat_view=game.view(seat), table_id=table_id, game_index=game_index)
        return normalize_move(await call_hook(self.bot.play(view)))
