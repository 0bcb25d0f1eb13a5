"""Multiplayer Elo by pairwise decomposition.

A game of n players counts as n(n-1)/2 two-player matches, each won by the better-placed
player (a shared place is half a win). Every change is computed from the ratings before the
game, and the loops run in seat order, so the same games in the same order give bit-for-bit
the same floats: `recompute_ratings` relies on that.
"""

from __future__ import annotations

from collections.abc import Sequence

ELO_SCALE = 400.0


def elo_expected(rating: float, opponent: float) -> float:
    """Expected score of `rating` against `opponent` (standard logistic, scale 400)."""
    return 1.0 / (1.0 + 10.0 ** ((opponent - rating) / ELO_SCALE))


def elo_deltas(ratings: Sequence[float], places: Sequence[int], k_factor: float) -> list[float]:
    """Rating changes for one game; `places` are 1-based, equal places are a shared place."""
    n = len(ratings)
    if n != len(places):
        raise ValueError("ratings and places must have the same length")
    if n < 2:
        raise ValueError("a rated game needs at least two players")
    scale = k_factor / (n - 1)
    deltas = []
    for i in range(n):
        total = 0.0
        for j in range(n):
            if i == j:
                continue
            if places[i] < places[j]:
                actual = 1.0
            elif places[i] > places[j]:
                actual = 0.0
            else:
                actual = 0.5
            total += actual - elo_expected(ratings[i], ratings[j])
        deltas.append(scale * total)
    return deltas


def season_regressed(rating: float, fraction: float, *, mean: float) -> float:
    """A rating moved `fraction` of the way back to `mean` at a ladder's new season
    (0: carried over unchanged, 1: everyone starts again at the mean). One formula for the
    season's end and for `recompute_ratings`, so both give the same float."""
    return mean + (rating - mean) * (1.0 - fraction)
