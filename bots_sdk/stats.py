"""Summaries of arena results: per-bot rows and pairwise comparisons with 95% intervals.

The sampling unit is a *deal unit*: a duplicate set (one deal played in every seat
rotation) or, without duplicate dealing, a single game. Every mean and interval is taken
over units, and a pairwise comparison uses the per-unit paired difference, which is what
removes the luck of the deal when the units are duplicate sets.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from bots_sdk.decimals import format_decimal

__all__ = [
    "BotSummary",
    "Estimate",
    "GameRecord",
    "PairComparison",
    "SprtResult",
    "estimate",
    "format_report",
    "games_to_separate",
    "paired_differences",
    "pairwise",
    "sprt",
    "summarize",
    "t_quantile_975",
]

# Two-sided 95% Student t quantiles for small samples (df 1..30); normal beyond.
_T975 = (
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
    2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
    2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
)  # fmt: skip


def t_quantile_975(df: int) -> float:
    if df < 1:
        return math.inf
    if df <= len(_T975):
        return _T975[df - 1]
    # Cornish-Fisher style correction towards 1.96 (within 0.001 for df > 30).
    z = 1.959964
    return z + (z**3 + z) / (4 * df)


@dataclass(frozen=True, slots=True)
class GameRecord:
    """One finished arena game, as the summaries need it."""

    unit: int  # deal unit: duplicate-set index, or the game index without duplicates
    entrants: tuple[int, ...]  # entrant index per seat
    points: tuple[int, ...]
    finishing_order: tuple[int, ...]
    strikes: tuple[int, ...] = ()  # the referee's: it moved for the seat (see BotSummary)
    think_s: tuple[float, ...] = ()
    moves: tuple[int, ...] = ()
    fallbacks: tuple[int, ...] = ()  # moves answered with the fallback move instead
    rejected: tuple[int, ...] = ()  # illegal answers (the referee's MoveRejected)


@dataclass(frozen=True, slots=True)
class Estimate:
    mean: float
    half_width: float  # of the 95% interval
    n: int
    sd: float

    @property
    def low(self) -> float:
        return self.mean - self.half_width

    @property
    def high(self) -> float:
        return self.mean + self.half_width

    @property
    def excludes_zero(self) -> bool:
        return self.n > 1 and (self.low > 0 or self.high < 0)

    def __str__(self) -> str:
        if self.n < 2:
            return format_decimal(self.mean, 2, sign=True)
        return f"{format_decimal(self.mean, 2, sign=True)} ± {format_decimal(self.half_width, 2)}"


def estimate(samples: Sequence[float]) -> Estimate:
    n = len(samples)
    if n == 0:
        return Estimate(0.0, math.inf, 0, 0.0)
    mean = math.fsum(samples) / n
    if n == 1:
        return Estimate(mean, math.inf, 1, 0.0)
    var = math.fsum((x - mean) ** 2 for x in samples) / (n - 1)
    sd = math.sqrt(var)
    return Estimate(mean, t_quantile_975(n - 1) * sd / math.sqrt(n), n, sd)


@dataclass(slots=True)
class BotSummary:
    """One bot's results, in the referee's words (docs/protocol.md):

    * `fallbacks`: moves answered with the fallback move (pass where allowed, else the
      weakest play) because `play()` raised or gave an illegal move. The SDK client does
      the same on the referee, before the referee has to: no strike.
    * `rejected`: illegal answers, each of which the referee answers with MoveRejected.
    * `strikes`: the referee moved for the seat itself (no legal answer in time, 3 illegal
      answers to one move, a disconnection). Only a referee counts them (the arena has no
      clock and runs bots the way the SDK client does, so it records none).
    """

    name: str
    games: int = 0  # seat-games: a bot in two seats of a table plays two per game
    firsts: int = 0
    place_sum: int = 0
    strikes: int = 0
    think_s: float = 0.0
    moves: int = 0
    points: Estimate = field(default_factory=lambda: estimate([]))
    fallbacks: int = 0
    rejected: int = 0

    @property
    def own_moves(self) -> int:
        """Legal moves the bot made itself."""
        return self.moves - self.fallbacks

    @property
    def first_rate(self) -> float:
        return self.firsts / self.games if self.games else 0.0

    @property
    def avg_place(self) -> float:
        return self.place_sum / self.games if self.games else 0.0

    @property
    def ms_per_move(self) -> float:
        return 1000 * self.think_s / self.moves if self.moves else 0.0


@dataclass(frozen=True, slots=True)
class PairComparison:
    a: str
    b: str
    diff: Estimate  # points per game of a minus b, per-unit paired

    @property
    def verdict(self) -> str:
        if not self.diff.excludes_zero:
            return "no significant difference"
        better, worse = (self.a, self.b) if self.diff.mean > 0 else (self.b, self.a)
        return f"{better} better than {worse} (95%)"


def _unit_means(records: Iterable[GameRecord], n_entrants: int) -> dict[int, list[float | None]]:
    sums: dict[int, list[float]] = defaultdict(lambda: [0.0] * n_entrants)
    counts: dict[int, list[int]] = defaultdict(lambda: [0] * n_entrants)
    for r in records:
        s, c = sums[r.unit], counts[r.unit]
        for seat, e in enumerate(r.entrants):
            s[e] += r.points[seat]
            c[e] += 1
    return {
        u: [s / c if c else None for s, c in zip(sums[u], counts[u], strict=True)] for u in sums
    }


def summarize(records: Sequence[GameRecord], names: Sequence[str]) -> list[BotSummary]:
    rows = [BotSummary(name) for name in names]
    for r in records:
        for seat, e in enumerate(r.entrants):
            row = rows[e]
            row.games += 1
            place = r.finishing_order.index(seat) + 1 if seat in r.finishing_order else len(r.entrants)
            row.place_sum += place
            if place == 1:
                row.firsts += 1
            if r.strikes:
                row.strikes += r.strikes[seat]
            if r.think_s:
                row.think_s += r.think_s[seat]
            if r.moves:
                row.moves += r.moves[seat]
            if r.fallbacks:
                row.fallbacks += r.fallbacks[seat]
            if r.rejected:
                row.rejected += r.rejected[seat]
    means = _unit_means(records, len(names))
    for e, row in enumerate(rows):
        row.points = estimate([x for m in means.values() if (x := m[e]) is not None])
    return rows


def pairwise(records: Sequence[GameRecord], names: Sequence[str]) -> list[PairComparison]:
    means = _unit_means(records, len(names))
    out = []
    for a in range(len(names)):
        for b in range(a + 1, len(names)):
            diffs = _differences(means, a, b)
            out.append(PairComparison(names[a], names[b], estimate(diffs)))
    return out


def games_to_separate(diff: Estimate, games_per_unit: int) -> float:
    """Games needed for the 95% interval of a paired difference to exclude zero, at the
    measured per-unit spread and effect: n units = (1.96 sd / mean)^2."""
    if diff.mean == 0 or diff.n < 2:
        return math.inf
    return games_per_unit * (1.959964 * diff.sd / abs(diff.mean)) ** 2


def format_report(
    rows: Sequence[BotSummary], pairs: Sequence[PairComparison], *, units: int, unit_name: str,
    counts: Sequence[str] = ("strikes",),
) -> str:
    """The end-of-arena text: one line per bot, then the pairwise comparisons. `counts`
    are the BotSummary counters shown ("strikes" on a referee; the arena shows
    "rejected" and "fallbacks")."""
    width = max([len(r.name) for r in rows] + [3])
    head = (
        f"{'bot':<{width}}  {'seat-games':>10}  {'1st':>6}  {'avg place':>9}  "
        f"{'points/game (95% CI)':>22}  " + "".join(f"{c:>9}  " for c in counts) + f"{'ms/move':>8}"
    )
    lines = [head, "-" * len(head)]
    for r in rows:
        lines.append(
            f"{r.name:<{width}}  {r.games:>10}  {format_decimal(100 * r.first_rate, 1):>5}%  "
            f"{format_decimal(r.avg_place, 2):>9}  {str(r.points):>22}  "
            + "".join(f"{getattr(r, c):>9}  " for c in counts)
            + f"{r.ms_per_move:>8.3f}"
        )
    if pairs:
        lines.append("")
        lines.append(f"pairwise (points/game difference, paired over {units} {unit_name}):")
        pw = max(len(p.a) + len(p.b) + 3 for p in pairs)
        for p in pairs:
            label = f"{p.a} - {p.b}"
            lines.append(f"  {label:<{pw}}  {str(p.diff):>14}   {p.verdict}")
    return "\n".join(lines)


@dataclass(frozen=True, slots=True)
class SprtResult:
    """A sequential probability ratio test on per-unit paired differences."""

    llr: float
    lower: float  # accept H0 at or below
    upper: float  # accept H1 at or above
    units: int
    decision: str | None  # "H1", "H0" or None (keep playing)


def sprt(
    diffs: Sequence[float], delta: float, *, alpha: float = 0.05, beta: float = 0.05,
    min_units: int = 30,
) -> SprtResult:
    """Is the mean paired difference `delta` (H1) rather than 0 (H0)?

    Wald's test with a normal model and the variance estimated from the sample: after each
    unit, LLR = (delta * sum(x) - n * delta^2 / 2) / var. It stops as soon as the evidence
    is enough either way (error rates `alpha`, `beta`), which on average takes far fewer
    games than a fixed-size test with the same errors. `delta` is the smallest difference
    worth detecting, in points per game. No decision before `min_units` units, so the
    variance estimate is worth something."""
    if delta <= 0:
        raise ValueError("the SPRT's delta must be positive (points per game)")
    upper = math.log((1 - beta) / alpha)
    lower = math.log(beta / (1 - alpha))
    n = len(diffs)
    if n < max(2, min_units):
        return SprtResult(0.0, lower, upper, n, None)
    e = estimate(diffs)
    var = max(e.sd**2, 1e-9)
    llr = (delta * math.fsum(diffs) - n * delta * delta / 2) / var
    decision = "H1" if llr >= upper else "H0" if llr <= lower else None
    return SprtResult(llr, lower, upper, n, decision)


def paired_differences(records: Sequence[GameRecord], a: int, b: int, n_entrants: int) -> list[float]:
    """Per-unit points-per-game difference of entrant `a` minus entrant `b`."""
    return _differences(_unit_means(records, n_entrants), a, b)


def _differences(means: dict[int, list[float | None]], a: int, b: int) -> list[float]:
    """Per unit, entrant `a`'s mean minus entrant `b`'s, where both played."""
    return [x - y for m in means.values() if (x := m[a]) is not None and (y := m[b]) is not None]
