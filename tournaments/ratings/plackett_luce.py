"""Order-independent strength from all of a tournament's games (Plackett-Luce via choix).

Each finishing order is split into successive "top-1" choices (the winner among everyone,
then the runner-up among the rest, ...; a tied tail is left unordered), fitted by choix's
iterative Luce spectral ranking with a small regulariser so a bot that never wins still has
a finite strength. Confidence intervals come from the observed Fisher information.
Strengths are shown on the Elo scale (1500 + 400·θ/ln 10) so both columns read alike.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import choix
import numpy as np

ELO_PER_NAT = 400.0 / math.log(10.0)
REGULARISATION = 0.01


@dataclass(frozen=True)
class Strength:
    rating: float
    low: float
    high: float


def _choices(order: Sequence[int], tied_from: int | None) -> list[tuple[int, list[int]]]:
    stop = len(order) - 1 if tied_from is None else min(tied_from, len(order) - 1)
    return [(order[i], list(order[i + 1 :])) for i in range(stop)]


def plackett_luce_fit(
    games: Sequence[Sequence[Hashable]], tied_tails: Sequence[int | None] | None = None
) -> dict[Hashable, Strength]:
    """Fit strengths; `games` are finishing orders (best first) of hashable player keys.

    `tied_tails[g]`, when not None, is the position from which game g's order is a tie.
    """
    keys = sorted({key for game in games for key in game}, key=str)
    if len(keys) < 2:
        return {key: Strength(1500.0, 1500.0, 1500.0) for key in keys}
    index = {key: i for i, key in enumerate(keys)}
    data: list[tuple[int, list[int]]] = []
    for g, game in enumerate(games):
        tied = tied_tails[g] if tied_tails is not None else None
        data.extend(_choices([index[key] for key in game], tied))
    n = len(keys)
    if not data:
        return {key: Strength(1500.0, 1500.0, 1500.0) for key in keys}
    theta = np.asarray(choix.ilsr_top1(n, data, alpha=REGULARISATION, tol=1e-6), dtype=float)
    theta -= theta.mean()
    info = REGULARISATION * np.eye(n)
    by_size: dict[int, list[list[int]]] = {}
    for winner, losers in data:
        by_size.setdefault(len(losers) + 1, []).append([winner, *losers])
    for rows in by_size.values():
        # Each choice adds diag(p) - p p^T on its members (vectorised per choice-set size).
        idx = np.asarray(rows)
        weights = np.exp(theta[idx] - theta[idx].max(axis=1, keepdims=True))
        p = weights / weights.sum(axis=1, keepdims=True)
        np.add.at(info, (idx, idx), p)
        np.add.at(info, (idx[:, :, None], idx[:, None, :]), -(p[:, :, None] * p[:, None, :]))
    cov = np.linalg.pinv(info)
    result = {}
    for key, i in index.items():
        centre = 1500.0 + ELO_PER_NAT * float(theta[i])
        half = 1.96 * ELO_PER_NAT * math.sqrt(max(float(cov[i, i]), 0.0))
        result[key] = Strength(centre, centre - half, centre + half)
    return result
