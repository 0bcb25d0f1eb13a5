"""The engine's read API: what the modules around a game (views, replay records, the
referee's encoder, the web's replay frames) may read from one, and the move record.

``Game`` implements ``GameState``; everything outside ``game.py`` is written against this
protocol, never against ``Game``'s private fields, so the turn logic can change its
internals (or be compiled) without breaking its readers, and nothing here imports
``game.py`` (no import cycle inside the engine).
"""

from __future__ import annotations

from typing import Any, NamedTuple, Protocol

from bots_sdk.cards import CARD_TEXT, Card

from .combos import Combination
from .moves import LegalPlays
from .options import Options


class MoveRecord(NamedTuple):
    """One move of a game's log: a play (``mask``: its cards as a 52-bit set, bit i for card
    index i) or a pass / declined offer (``mask`` None). ``offer`` names the offer the move
    answered (``"steal_lead"``, ``"out_of_turn_chop"``), None for an ordinary turn."""

    seat: int
    mask: int | None
    offer: str | None


def move_dict(move: tuple[int, int | None, str | None]) -> dict[str, Any]:
    """A move as in ``Game.history`` and the replay JSON: {"seat", "cards" | "pass", "offer"?}."""
    seat, mask, offer = move
    d: dict[str, Any] = {"seat": seat}
    if mask is None:
        d["pass"] = True
    else:
        cards = []
        while mask:
            low = mask & -mask
            cards.append(CARD_TEXT[low.bit_length() - 1])
            mask ^= low
        d["cards"] = cards
    if offer is not None:
        d["offer"] = offer
    return d


class GameState(Protocol):
    """The public, read-only surface of a game (see docs/engine.md)."""

    @property
    def players(self) -> int: ...
    @property
    def preset(self) -> str: ...
    @property
    def options(self) -> Options: ...
    @property
    def seed(self) -> str | None: ...
    @property
    def starting(self) -> bool: ...
    @property
    def leader(self) -> int: ...
    @property
    def to_move(self) -> int | None: ...
    @property
    def offer(self) -> str | None: ...
    @property
    def can_pass(self) -> bool: ...
    @property
    def is_over(self) -> bool: ...
    @property
    def hand_masks(self) -> tuple[int, ...]: ...
    @property
    def initial_masks(self) -> tuple[int, ...]: ...
    @property
    def hands(self) -> list[list[Card]]: ...
    @property
    def initial_hands(self) -> list[list[Card]]: ...
    @property
    def undealt(self) -> list[Card]: ...
    @property
    def card_counts(self) -> list[int]: ...
    @property
    def table(self) -> Combination | None: ...
    @property
    def table_seat(self) -> int | None: ...
    @property
    def locked_out(self) -> tuple[int, ...]: ...
    @property
    def finishing_order(self) -> list[int]: ...
    @property
    def places(self) -> list[int | None]: ...
    @property
    def tied(self) -> tuple[int, ...]: ...
    @property
    def frozen(self) -> list[int]: ...
    @property
    def points(self) -> list[int]: ...
    @property
    def payments(self) -> list[dict[str, Any]]: ...
    @property
    def instant_winner(self) -> int | None: ...
    @property
    def instant_win_kind(self) -> str | None: ...
    @property
    def den_bai(self) -> int | None: ...
    @property
    def end_reason(self) -> str | None: ...
    @property
    def next_leader(self) -> int | None: ...
    @property
    def next_starting(self) -> bool: ...
    @property
    def moves(self) -> tuple[MoveRecord, ...]: ...
    @property
    def history(self) -> list[dict[str, Any]]: ...
    @property
    def chops(self) -> tuple[int, ...]: ...
    def legal_plays(self) -> LegalPlays: ...
