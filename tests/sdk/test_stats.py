"""Arena statistics: intervals, paired comparisons and the games-to-separate estimate."""

from __future__ import annotations

import math
import random
import statistics

from hypothesis import given, settings
from hypothesis import strategies as st

from bots_sdk.stats import (
    GameRecord,
    estimate,
    format_report,
    games_to_separate,
    pairwise,
    summarize,
    t_quantile_975,
)


def test_estimate_matches_textbook_t_interval():
    xs = [1.0, 2.0, 3.0, 4.0, 5.0]
    e = estimate(xs)
    assert e.mean == 3.0
    assert math.isclose(e.sd, statistics.stdev(xs))
    assert math.isclose(e.half_width, 2.776 * statistics.stdev(xs) / math.sqrt(5))
    assert e.excludes_zero
    assert not estimate([-2.0, 0.0, 1.0, 3.0, 5.0]).excludes_zero


def test_t_quantile_tends_to_normal():
    assert t_quantile_975(1) == 12.706
    assert abs(t_quantile_975(10_000) - 1.96) < 0.001
    assert t_quantile_975(31) < t_quantile_975(30)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(-50, 50, allow_nan=False), min_size=2, max_size=40))
def test_interval_contains_the_mean_and_is_symmetric(xs):
    e = estimate(xs)
    assert e.low <= e.mean <= e.high
    assert math.isclose(e.mean - e.low, e.high - e.mean, abs_tol=1e-9)


def _records():
    # Two duplicate units of 2 games each; bot 0 always scores 1 point more than bot 1.
    return [
        GameRecord(unit=0, entrants=(0, 1), points=(2, -2), finishing_order=(0, 1)),
        GameRecord(unit=0, entrants=(1, 0), points=(1, -1), finishing_order=(0, 1)),
        GameRecord(unit=1, entrants=(0, 1), points=(-1, 1), finishing_order=(1, 0)),
        GameRecord(unit=1, entrants=(1, 0), points=(-2, 2), finishing_order=(1, 0)),
    ]


def test_summary_counts_places_and_points_per_unit():
    a, b = summarize(_records(), ["a", "b"])
    assert (a.games, b.games) == (4, 4)
    assert a.firsts == 2 and b.firsts == 2
    assert a.avg_place == 1.5
    # unit means: a = (2 - 1)/2 = 0.5 and (-1 + 2)/2 = 0.5
    assert a.points.mean == 0.5 and a.points.n == 2


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(-8, 8), st.integers(0, 3)), min_size=2, max_size=30))
def test_pairwise_difference_is_antisymmetric(games):
    records = [
        GameRecord(unit=i, entrants=(0, 1), points=(p, -p), finishing_order=(0, 1))
        for i, (p, _) in enumerate(games)
    ]
    (ab,) = pairwise(records, ["a", "b"])
    flipped = [
        GameRecord(unit=r.unit, entrants=(1, 0), points=r.points, finishing_order=(0, 1))
        for r in records
    ]
    (fl,) = pairwise(flipped, ["a", "b"])
    assert math.isclose(fl.diff.mean, -ab.diff.mean, abs_tol=1e-12)


def test_paired_differences_remove_the_deal_luck():
    # Deal luck swings both bots together; the paired difference is a constant 1.
    records = []
    for u, luck in enumerate([10, -7, 3, -12, 6, 0]):
        records.append(GameRecord(u, (0, 1), (luck + 1, luck), (0, 1)))
    (cmp_,) = pairwise(records, ["a", "b"])
    assert cmp_.diff.mean == 1 and cmp_.diff.sd == 0 and cmp_.diff.excludes_zero
    assert "a better than b" in cmp_.verdict


def test_games_to_separate():
    e = estimate([1.0, 3.0] * 10)  # mean 2, sd ~1.03
    need = games_to_separate(e, games_per_unit=4)
    assert math.isclose(need, 4 * (1.959964 * e.sd / 2) ** 2)
    assert games_to_separate(estimate([1.0, -1.0]), 1) == math.inf


def test_report_has_a_row_per_bot_and_the_pairwise_section():
    rows = summarize(_records(), ["alpha", "beta"])
    text = format_report(rows, pairwise(_records(), ["alpha", "beta"]), units=2, unit_name="duplicate sets")
    lines = text.splitlines()
    assert lines[0].split()[:4] == ["bot", "seat-games", "1st", "avg"]
    assert lines[0].split()[-2:] == ["strikes", "ms/move"]  # a referee's report: its strikes
    assert any(line.startswith("alpha") for line in lines)
    assert "alpha - beta" in text and "paired over 2 duplicate sets" in text


def test_sprt_decides_each_way_and_waits_for_evidence():
    from bots_sdk.stats import sprt

    rng = random.Random(7)
    better = [rng.gauss(1.0, 1.5) for _ in range(200)]
    same = [rng.gauss(0.0, 1.5) for _ in range(400)]
    assert sprt(better[:5], 0.5).decision is None  # too few units to judge
    assert sprt(better, 0.5).decision == "H1"
    assert sprt(same, 0.5).decision == "H0"
    r = sprt(better[:40], 0.5)
    assert r.lower < 0 < r.upper and math.isclose(r.upper, math.log(0.95 / 0.05))
