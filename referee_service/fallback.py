"""The move the referee makes for a seat that did not answer properly.

Documented for bot authors (docs/protocol.md): pass where allowed, else the weakest legal
play. It is the SDK's `safe_move`, so a bot's own safety net and the referee agree.
"""

from __future__ import annotations

from bots_sdk.bot import safe_move
from bots_sdk.cards import Card
from bots_sdk.rules import GameState


def fallback_move(game: GameState) -> tuple[Card, ...] | None:
    """None for a pass, else the weakest legal play of the player to move."""
    return safe_move(game.can_pass, game.legal_plays())
