"""Uniformly random among every legal move (pass included when allowed): the baseline."""

from __future__ import annotations

import random
from typing import Any, ClassVar

from bots_sdk.bot import Bot, Move, View


class RandomBot(Bot):
    name = "random"
    version = "1.0.0"
    threaded = False  # answers in well under a millisecond: play on the event loop
    #: As a house bot at a table with a remote seat, every decision takes this long
    #: (referee_service/house.py, "Pacing"; its own work: under 1 ms).
    house_pace_ms: ClassVar[float] = 2.0

    def __init__(self, seed: int | str | None = None) -> None:
        # Without a seed, share the `random` module (the arena seeds it per game); building
        # a Random() per table costs more than a whole random move.
        self.rng: Any = random if seed is None else random.Random(seed)

    def play(self, view: View) -> Move:
        plays = view.plays  # indexable: picking one never builds every play
        n = len(plays) + (1 if view.can_pass else 0)
        i = self.rng.randrange(n)
        if i == len(plays):
            return None
        return plays[i]
