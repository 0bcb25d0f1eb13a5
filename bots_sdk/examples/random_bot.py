"""Uniformly random among every legal move (pass included when allowed): the baseline."""

from __future__ import annotations

import random

from bots_sdk.bot import Bot, Move, View


class RandomBot(Bot):
    name = "random"
    version = "1.0.0"

    def __init__(self, seed: int | str | None = None) -> None:
        self.rng = random.Random(seed)

    def play(self, view: View) -> Move:
        plays = view.seat_view.legal_plays
        n = len(plays) + (1 if view.can_pass else 0)
        i = self.rng.randrange(n)
        if i == len(plays):
            return None
        return plays[i]
