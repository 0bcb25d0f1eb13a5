"""Order-independent strength from all of a tournament's games (Plackett-Luce via choix).

Each finishing order is split into successive "top-1" choices (the winner among everyone,
then the runner-up among the rest, ...; a tied tail is left unordered), fitted by choix's
iterative Luce spectral ranking with a small regulariser (`REGULARISATION` pseudo-
comparisons between every pair) so a bot that never wins or never loses still has a
finite strength. Strengths are shown on the Elo scale (1500 + 400·θ/ln 10).

Identification: adding the same constant to every θ changes no probability, so only
differences are estimated. Strengths are reported relative to the field's mean (sum to
zero) and the 95% intervals are for exactly that quantity: the covariance is the
pseudo-inverse of the observed Fisher information (plus the regulariser's, which is
shift-invariant too) on the subspace of centred strengths. Half-widths therefore shrink
like 1/√games; an earlier version inverted `info + 0.01·I`, which gave the unidentified
common shift a variance of ~100/n nats² and every bot a ±1,100-1,700 Elo interval
whatever the number of games.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import numpy as np

ELO_PER_NAT = 400.0 / math.log(10.0)
REGULARISATION = 0.01
Z95 = 1.959964


@dataclass(frozen=True)
class Strength:
    rating: float
    low: float
    high: float


def _choices(order: Sequence[int], tied_from: int | None) -> list[tuple[int, list[int]]]:
    stop = len(order) - 1 if tied_from is None else min(tied_from, len(order) - 1)
    return [(order[i], list(order[i + 1 :])) for i in range(stop)]


def plackett_luce_information(theta: np.ndarray, data: Sequence[tuple[int, Sequence[int]]]) -> np.ndarray:
    """Observed Fisher information of top-1 choices at `theta` (zero along all-ones).

    Each choice of a winner among the set S adds diag(p) - p pᵀ on S, p the choice
    probabilities; vectorised per choice-set size.
    """
    n = len(theta)
    info = np.zeros((n, n))
    by_size: dict[int, list[list[int]]] = {}
    for winner, losers in data:
        by_size.setdefault(len(losers) + 1, []).append([winner, *losers])
    for rows in by_size.values():
        idx = np.asarray(rows)
        weights = np.exp(theta[idx] - theta[idx].max(axis=1, keepdims=True))
        p = weights / weights.sum(axis=1, keepdims=True)
        np.add.at(info, (idx, idx), p)
        np.add.at(info, (idx[:, :, None], idx[:, None, :]), -(p[:, :, None] * p[:, None, :]))
    return info


def centred_covariance(info: np.ndarray) -> np.ndarray:
    """Covariance of the centred strengths θ - mean(θ) from an information matrix whose
    null space is the common shift (all-ones): its Moore-Penrose inverse, computed as
    inv(info + J/n) - J/n (J the all-ones matrix), which is exact and well conditioned
    when the comparisons connect every player."""
    n = info.shape[0]
    shift = np.full((n, n), 1.0 / n)
    return np.linalg.inv(info + shift) - shift


def plackett_luce_fit(
    games: Sequence[Sequence[Hashable]], tied_tails: Sequence[int | None] | None = None
) -> dict[Hashable, Strength]:
    """Fit strengths; `games` are finishing orders (best first) of hashable player keys.

    `tied_tails[g]`, when not None, is the position from which game g's order is a tie.
    Each strength is relative to the mean of everyone in `games` (1500 = the field's
    average), with a 95% interval for that relative strength.
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
    # Imported here, not with the module: choix pulls in scipy.stats, ~80 % of what a tables
    # worker imported to start (7.5 of 9.2 s under load), and no table task fits strengths.
    # A worker restarted after a crash plays nothing until it is up (benchmarks/README.md,
    # "Recovery").
    import choix

    theta = np.asarray(choix.ilsr_top1(n, data, alpha=REGULARISATION, tol=1e-6), dtype=float)
    theta -= theta.mean()
    # The regulariser, read as REGULARISATION comparisons between every pair: the Laplacian
    # of the complete graph. It keeps a never-beaten bot's interval finite and, like the
    # data, says nothing about the common shift.
    prior = REGULARISATION * (n * np.eye(n) - np.ones((n, n)))
    cov = centred_covariance(plackett_luce_information(theta, data) + prior)
    result = {}
    for key, i in index.items():
        centre = 1500.0 + ELO_PER_NAT * float(theta[i])
        half = Z95 * ELO_PER_NAT * math.sqrt(max(float(cov[i, i]), 0.0))
        result[key] = Strength(centre, centre - half, centre + half)
    return result
