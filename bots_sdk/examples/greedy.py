"""Always the weakest legal play; passes only when it cannot play. The next baseline up
from random: it never wastes a turn, but spends its 2s and bombs on anything."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from bots_sdk.bot import Bot, Move, View
from bots_sdk.cards import Card


def _strength(play: Sequence[Card]) -> tuple[int, int]:
    # Lowest top card first; on a tie shed more cards.
    return (max(c.index for c in play), -len(play))


class GreedyBot(Bot):
    name = "greedy"
    version = "1.0.0"
    threaded = False  # answers in well under a millisecond: play on the event loop
    #: As a house bot at a table with a remote seat, every decision takes this long
    #: (referee_service/house.py, "Pacing"; its own work: under 1 ms).
    house_pace_ms: ClassVar[float] = 2.0

    def play(self, view: View) -> Move:
        plays = view.plays
        if not plays:
            return None
        return min(plays, key=_strength)
