"""Luck-adjusted scores and standings: points minus what the same cards usually score.

For a seat of a game the luck estimate is the mean of every other result with the same
cards: the points of the same seat at the other tables of its deal group (field
duplicates: one deal played at several tables, each bot once) and the house-bot
baseline of that deal and seat (tournaments.scoring.baseline), when they exist. With
neither, the estimate is 0 (a seat's expected points on an unknown deal) and the adjusted
score is the points.

Counterparts are corrected for their strength. A counterpart's points on the same cards
are the cards' worth plus what its own skill and its opponents' skills make of them:
compared with a strong counterpart (or one facing weak opponents) a bot looks weaker,
and no schedule gives every pair the same number of counterpart games (8 entrants in
2-table groups: 0-2 per pair; remote tables share deals only with tables of house bots,
tournaments.scheduling.deal_groups). Uncorrected, identical bots got significantly
different adjusted scores (+0.35 points a game, z 2.0). So each counterpart's
points are first reduced by its expected skill term at its table,

    π(o) = φ[its bot] - mean of φ over its opponents at that table   (zero-sum, as points)
    a(g, s) = points - mean({points_o - π(o) : counterparts o} ∪ {baseline})

with skills φ chosen so that every entrant's mean adjusted score equals the mean skill
term of its own games: a linear system (numpy least squares; only differences of φ
count, the minimum-norm solution centres them). Correcting for the counterpart's skill
alone left a bias of +0.10 points a game (z 4) between identical bots: a counterpart's
opponents are the rest of its table, which is the complement of the bot's own. Measured
before and after in benchmarks/README.md, "Counterparts"; the baseline depends only on
the deal and the seat and needs no correction.

Intervals (tournaments.scoring.intervals, the rule the standings use too): each entrant
plays every deal at most once, so its adjusted scores on different games are independent
draws; the standard error adds what the counterparts' θ estimates contribute
(Σ_f A[e][f]² se_f²).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import numpy as np

from tournaments.scoring.intervals import half_width, half_width_of_se


@dataclass(frozen=True)
class GameRow:
    """One recorded game as the scoring needs it."""

    deal: Hashable  # the deal key, e.g. (deal group, deal index); games of one deal share it
    entrants: Sequence[int]  # entrant per seat
    points: Sequence[int]
    baseline: Sequence[float] | None = None  # expected points per seat, None if not known


def _first_pass(games: Sequence[GameRow]) -> tuple[list[list[float]], list[list[list[tuple[int, float]]]]]:
    """Uncorrected adjusted scores, and for each game and seat its counterparts (the other
    games of its deal, same seat) with the weight each has in its luck estimate
    (1 / number of comparisons).

    One pass over the deals: the points of every game of a deal summed per seat, so a
    game's counterparts are that sum less its own points (points are integers: the sums
    are exact). Comparing every game with every other game of its deal was quadratic."""
    totals: dict[tuple[Hashable, int], tuple[list[int], list[int]]] = {}
    for i, g in enumerate(games):
        key = (g.deal, len(g.points))
        members, sums = totals.get(key, ([], [0] * len(g.points)))
        members.append(i)
        totals[key] = (members, [t + int(p) for t, p in zip(sums, g.points, strict=True)])
    scores: list[list[float]] = []
    weights: list[list[list[tuple[int, float]]]] = []
    for i, g in enumerate(games):
        if g.baseline is not None and len(g.baseline) != len(g.points):
            raise ValueError(f"game {i}: {len(g.baseline)} baseline seats for {len(g.points)} points")
        members, sums = totals[(g.deal, len(g.points))]
        others = len(members) - 1
        row, row_weights = [], []
        for s, p in enumerate(g.points):
            total = float(sums[s] - int(p))
            n = others
            if g.baseline is not None:
                total += float(g.baseline[s])
                n += 1
            row.append(p - (total / n if n else 0.0))
            row_weights.append([(j, 1.0 / n) for j in members if j != i] if n else [])
        scores.append(row)
        weights.append(row_weights)
    return scores, weights


def adjusted_scores(games: Sequence[GameRow], *, correct_counterparts: bool = True) -> list[list[float]]:
    """Each game's adjusted score per seat (same order as `games`): counterparts corrected
    for their strength (module docstring), or not (`correct_counterparts=False`: the
    estimator before the correction, kept to measure its bias)."""
    return _scored(games, correct_counterparts=correct_counterparts)[0]


def _scored(
    games: Sequence[GameRow], *, correct_counterparts: bool
) -> tuple[list[list[float]], dict[int, dict[int, float]]]:
    """Adjusted scores, and for each entrant the weight each entrant's skill estimate has
    in its mean adjusted score through its counterparts (empty without correction)."""
    scores, weights = _first_pass(games)
    if not correct_counterparts or not any(w for row in weights for w in row):
        return scores, {}
    entrants = sorted({e for g in games for e in g.entrants})
    index = {e: k for k, e in enumerate(entrants)}
    size = len(entrants)

    def skill_terms(j: int, s: int) -> list[tuple[int, float]]:
        """The expected skill part of seat s of game j, as coefficients on φ: its own
        skill less the mean of its opponents' at that table (zero-sum, like points)."""
        g = games[j]
        others = len(g.entrants) - 1
        return [(index[e], 1.0 if t == s else -1.0 / others) for t, e in enumerate(g.entrants)]

    played = np.zeros(size)
    constant = np.zeros(size)
    through = np.zeros((size, size))  # Σ over e's games of the counterparts' skill terms
    own = np.zeros((size, size))  # Σ over e's games of its own skill terms
    for gi, g in enumerate(games):
        for s, e in enumerate(g.entrants):
            k = index[e]
            played[k] += 1
            constant[k] += scores[gi][s]
            for col, coef in skill_terms(gi, s):
                own[k, col] += coef
            for j, w in weights[gi][s]:
                for col, coef in skill_terms(j, s):
                    through[k, col] += w * coef
    # The skills φ that the adjusted scores reproduce: for every entrant the mean adjusted
    # score equals the mean skill term of its games. Only differences of φ count (a
    # common shift cancels in every skill term): the minimum-norm solution centres them.
    phi = np.linalg.lstsq(through - own, -constant, rcond=None)[0]
    corrected = []
    for gi, g in enumerate(games):
        row = []
        for s in range(len(g.entrants)):
            shift = sum(w * sum(coef * float(phi[col]) for col, coef in skill_terms(j, s)) for j, w in weights[gi][s])
            row.append(scores[gi][s] + shift)
        corrected.append(row)
    influence_matrix = through / played[:, None]
    influence = {
        e: {f: float(influence_matrix[index[e], index[f]]) for f in entrants if influence_matrix[index[e], index[f]]}
        for e in entrants
    }
    return corrected, influence


@dataclass(frozen=True)
class AdjustedRow:
    entrant: int
    games: int
    points_mean: float
    points_ci: float  # half-width of the 95% interval
    adjusted_mean: float
    adjusted_ci: float
    compared: int  # games whose luck estimate had counterparts or a baseline


def _mean_var(values: list[float]) -> tuple[float, float]:
    n = len(values)
    if n == 0:
        return 0.0, math.inf
    mean = math.fsum(values) / n
    if n == 1:
        return mean, math.inf
    return mean, math.fsum((v - mean) ** 2 for v in values) / (n - 1)


def adjusted_standings(games: Sequence[GameRow], *, correct_counterparts: bool = True) -> list[AdjustedRow]:
    """Per entrant: raw and luck-adjusted points per game with 95% intervals
    (tournaments.scoring.intervals), best adjusted first."""
    scores, influence = _scored(games, correct_counterparts=correct_counterparts)
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
    moments = {e: _mean_var(adjusted[e]) for e in raw}
    # Standard error of the mean: its own games, and the counterparts' θ it leans on.
    se2 = {e: moments[e][1] / len(adjusted[e]) for e in raw}
    rows = []
    for e in raw:
        pm, pvar = _mean_var(raw[e])
        n = len(raw[e])
        extra = sum(w * w * se2[f] for f, w in influence.get(e, {}).items() if f != e)
        se = math.sqrt(se2[e] + extra) if math.isfinite(se2[e] + extra) else math.inf
        rows.append(AdjustedRow(
            e, n, pm, half_width(pvar, n), moments[e][0], half_width_of_se(se, n), compared[e],
        ))
    rows.sort(key=lambda r: (-r.adjusted_mean, -r.points_mean, r.entrant))
    return rows
