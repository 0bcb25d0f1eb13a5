"""Luck-adjusted scores and standings: points minus what the same cards usually score.

For a seat of a game the luck estimate is the mean of every other result with the same
cards: the points of the same seat at the other tables of its deal group (field
duplicates: one deal played at several tables, each bot once) and the house-bot
baseline of that deal and seat (tournaments.scoring.baseline), when they exist. The
adjusted score is the points minus that mean; with neither, the estimate is 0 (a seat's
expected points on an unknown deal) and the adjusted score is the points.

Why this estimator (benchmarks/deal_formats_bench.py, recorded in benchmarks/README.md):
in an 8-bot round robin it separates heuristic from greedy with about half the games raw
points need, as the old seat rotation did, while no bot ever sees a deal twice. The
baseline alone (DIVAT/AIVAT's idea) depends only on the deal and the seat, so it is
unbiased whoever plays; the counterparts' points depend on who held the same cards, so
the schedule balances counterparts (every entrant meets every other as counterpart about
equally often) and what is left is a common scale factor, not a ranking bias.

Intervals: an entrant plays every deal at most once, so its adjusted scores on different
games are independent draws and the usual mean ± t·sd/√n holds per entrant.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

from bots_sdk.stats import t_quantile_975


@dataclass(frozen=True)
class GameRow:
    """One recorded game as the scoring needs it."""

    deal: Hashable  # the deal key, e.g. (deal group, deal index); games of one deal share it
    entrants: Sequence[int]  # entrant per seat
    points: Sequence[int]
    baseline: Sequence[float] | None = None  # expected points per seat, None if not known


def adjusted_scores(games: Sequence[GameRow]) -> list[list[float]]:
    """Each game's adjusted score per seat (same order as `games`).

    One pass: the points of every game of a deal summed per seat, so a game's counterparts
    are that sum less its own points (points are integers: the sums are exact, and adding
    the baseline rounds once, as a compensated sum of the same values would). Comparing
    every game with every other game of its deal was quadratic in the games per deal."""
    totals: dict[tuple[Hashable, int], tuple[int, list[int]]] = {}
    for g in games:
        key = (g.deal, len(g.points))
        count, sums = totals.get(key, (0, [0] * len(g.points)))
        totals[key] = (count + 1, [t + int(p) for t, p in zip(sums, g.points, strict=True)])
    out = []
    for i, g in enumerate(games):
        if g.baseline is not None and len(g.baseline) != len(g.points):
            raise ValueError(f"game {i}: {len(g.baseline)} baseline seats for {len(g.points)} points")
        count, sums = totals[(g.deal, len(g.points))]
        others = count - 1
        row = []
        for s, p in enumerate(g.points):
            total = float(sums[s] - int(p))
            n = others
            if g.baseline is not None:
                total += float(g.baseline[s])
                n += 1
            row.append(p - (total / n if n else 0.0))
        out.append(row)
    return out


@dataclass(frozen=True)
class AdjustedRow:
    entrant: int
    games: int
    points_mean: float
    points_ci: float  # half-width of the 95% interval
    adjusted_mean: float
    adjusted_ci: float
    compared: int  # games whose luck estimate had counterparts or a baseline


def _mean_ci(values: list[float]) -> tuple[float, float]:
    n = len(values)
    if n == 0:
        return 0.0, math.inf
    mean = math.fsum(values) / n
    if n == 1:
        return mean, math.inf
    var = math.fsum((v - mean) ** 2 for v in values) / (n - 1)
    return mean, t_quantile_975(n - 1) * math.sqrt(var / n)


def adjusted_standings(games: Sequence[GameRow]) -> list[AdjustedRow]:
    """Per entrant: raw and luck-adjusted points per game with 95% intervals, best
    adjusted first."""
    scores = adjusted_scores(games)
    by_deal: dict[Hashable, int] = defaultdict(int)
    for g in games:
        by_deal[g.deal] += 1
    raw: dict[int, list[float]] = defaultdict(list)
    adjusted: dict[int, list[float]] = defaultdict(list)
    compared: dict[int, int] = defaultdict(int)
    for g, row in zip(games, scores, strict=True):
        informed = g.baseline is not None or by_deal[g.deal] > 1
        for e, p, a in zip(g.entrants, g.points, row, strict=True):
            raw[e].append(float(p))
            adjusted[e].append(a)
            compared[e] += informed
    rows = []
    for e in raw:
        pm, pci = _mean_ci(raw[e])
        am, aci = _mean_ci(adjusted[e])
        rows.append(AdjustedRow(e, len(raw[e]), pm, pci, am, aci, compared[e]))
    rows.sort(key=lambda r: (-r.adjusted_mean, -r.points_mean, r.entrant))
    return rows
