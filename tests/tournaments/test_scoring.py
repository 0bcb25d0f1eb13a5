"""Luck-adjusted scoring: the baseline is a property of the deal and seat only, adjusted
scores compare results with the same cards, and adjusted standings separate a stronger
bot from a weaker one with fewer games than raw points on the same games."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tournaments.scheduling.round_robin import round_robin_schedule
from tournaments.scoring.adjusted import GameRow, adjusted_scores, adjusted_standings
from tournaments.scoring.baseline import deal_baseline, house_bot_class, luck_adjusted, play_deal


def test_the_baseline_is_a_deterministic_zero_sum_property_of_the_deal() -> None:
    first = deal_baseline("deal-1", 4)
    assert deal_baseline("deal-1", 4) == first  # house bots are deterministic
    assert sum(first) == pytest.approx(0.0)
    assert deal_baseline("deal-2", 4) != first
    assert len(deal_baseline("deal-1", 3)) == 3
    # It is the mean of one all-greedy and one all-heuristic game of the deal.
    greedy = play_deal("deal-1", [house_bot_class("greedy")() for _ in range(4)])
    heuristic = play_deal("deal-1", [house_bot_class("heuristic")() for _ in range(4)])
    assert first == [(g + h) / 2 for g, h in zip(greedy, heuristic, strict=True)]


def test_bad_baseline_inputs_are_clear_errors() -> None:
    with pytest.raises(ValueError, match="unknown baseline bot 'nope'"):
        deal_baseline("d", 4, bots=("nope",))
    with pytest.raises(ValueError, match="at least one"):
        deal_baseline("d", 4, bots=())
    with pytest.raises(ValueError, match="2 to 4 players"):
        deal_baseline("d", 5)
    with pytest.raises(ValueError, match="3 points for 4 baseline seats"):
        luck_adjusted([1, 0, -1], [0.0, 0.0, 0.0, 0.0])
    with pytest.raises(ValueError, match="baseline seats"):
        adjusted_scores([GameRow(deal=1, entrants=[0, 1], points=[1, -1], baseline=[0.5])])


def test_adjusted_score_is_points_minus_the_mean_of_everyone_else_with_the_same_cards() -> None:
    games = [
        GameRow(deal=("g", 0), entrants=[0, 1, 2, 3], points=[6, -2, -2, -2], baseline=[3.0, -1.0, -1.0, -1.0]),
        GameRow(deal=("g", 0), entrants=[4, 5, 6, 7], points=[0, 2, -1, -1], baseline=[3.0, -1.0, -1.0, -1.0]),
        GameRow(deal=("h", 0), entrants=[0, 4, 1, 5], points=[2, -2, 1, -1]),  # alone, no baseline
    ]
    scores = adjusted_scores(games, correct_counterparts=False)
    # Seat 0 of deal (g, 0): entrant 0 scored 6; the counterpart 0 and the baseline 3.
    assert scores[0][0] == 6 - (0 + 3) / 2
    assert scores[1][0] == 0 - (6 + 3) / 2
    assert scores[1][1] == 2 - (-2 + -1) / 2
    assert scores[2] == [2.0, -2.0, 1.0, -1.0]  # nothing to compare with: the points


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(min_value=-6, max_value=6), min_size=4, max_size=4), st.floats(-5, 5))
def test_a_seat_that_scores_what_the_same_cards_score_elsewhere_is_adjusted_to_zero(points, shift) -> None:
    points = [p - round(sum(points) / 4) for p in points]
    base = [p + shift for p in points]
    games = [
        GameRow(deal=7, entrants=[0, 1, 2, 3], points=points, baseline=base),
        GameRow(deal=7, entrants=[4, 5, 6, 7], points=points, baseline=base),
    ]
    for row in adjusted_scores(games, correct_counterparts=False):
        assert row == pytest.approx([-shift / 2] * 4)
    # Corrected for the counterparts' strength: with the same cards everywhere scoring the
    # same, nobody is better than anybody, and the baseline's own points are what it says.
    same = [GameRow(deal=7, entrants=g.entrants, points=g.points, baseline=[float(p) for p in points]) for g in games]
    for row in adjusted_scores(same):
        assert row == pytest.approx([0.0] * 4, abs=1e-9)


def simulated_round_robin(rng: random.Random, skill: list[float], field: bool) -> list[GameRow]:
    """A synthetic 8-entrant round robin: points = hand luck (shared by a deal's seat across
    tables) + skill + noise, zero-sum per game; the baseline sees the luck with noise."""
    schedule = round_robin_schedule(len(skill), 4, field=field, isolated=[True] * len(skill))
    run = rng.getrandbits(64) if field else 0  # one simulation's deals (id(rng) changed between runs)
    rows = []
    for t_no, table in enumerate(schedule.tables):
        for i in range(4):
            deal = (table.deal_group, i) if field else (t_no, i)
            luck_rng = random.Random(f"{rng.random()}" if not field else f"{run}/{deal}")
            luck = [luck_rng.gauss(0, 2.0) for _ in range(4)]
            raw = [luck[s] + skill[e] + rng.gauss(0, 1.0) for s, e in enumerate(table.seats)]
            mean = sum(raw) / 4
            points = [r - mean for r in raw]
            base_mean = sum(luck) / 4
            baseline = [x - base_mean + rng.gauss(0, 0.7) for x in luck]
            rows.append(GameRow(deal=deal, entrants=table.seats, points=points, baseline=baseline))
    return rows


def test_adjusted_standings_rank_like_raw_points_with_narrower_intervals() -> None:
    skill = [1.0, 1.0, 1.0, 0.0, 0.0, 0.0, -1.5, -1.5]
    rng = random.Random(11)
    rows = adjusted_standings(simulated_round_robin(rng, skill, field=True))
    assert {r.entrant for r in rows[:3]} == {0, 1, 2}
    assert {r.entrant for r in rows[-2:]} == {6, 7}
    assert all(r.games == 28 and r.compared == 28 for r in rows)
    assert sum(r.points_mean for r in rows) == pytest.approx(0.0, abs=1e-9)
    # The luck of the deal is gone from the adjusted scores: intervals shrink.
    ratios = [r.adjusted_ci / r.points_ci for r in rows]
    assert max(ratios) < 0.85 and sum(ratios) / len(ratios) < 0.7


def test_luck_adjustment_keeps_comparisons_unbiased() -> None:
    # Over many synthetic tournaments the adjusted difference between two entrants has the
    # same expectation as the raw one, up to the common scale of the comparison.
    skill = [1.0, 1.0, 1.0, 0.0, 0.0, 0.0, -1.5, -1.5]
    raw_d, adj_d = [], []
    rng = random.Random(5)
    for _ in range(60):
        rows = {r.entrant: r for r in adjusted_standings(simulated_round_robin(rng, skill, field=False))}
        raw_d.append(rows[0].points_mean - rows[3].points_mean)
        adj_d.append(rows[0].adjusted_mean - rows[3].adjusted_mean)
    # No counterparts in this format: the baseline alone, which is unbiased.
    assert sum(adj_d) / len(adj_d) == pytest.approx(sum(raw_d) / len(raw_d), abs=0.1)


def _adjusted_by_definition(games: list[GameRow]) -> list[list[float]]:
    """Every other game of the same deal and size, one by one, plus the baseline."""
    import math

    out = []
    for i, g in enumerate(games):
        others = [o for j, o in enumerate(games)
                  if j != i and o.deal == g.deal and len(o.points) == len(g.points)]
        row = []
        for s, p in enumerate(g.points):
            same = [float(o.points[s]) for o in others]
            if g.baseline is not None:
                same.append(float(g.baseline[s]))
            row.append(p - (math.fsum(same) / len(same) if same else 0.0))
        out.append(row)
    return out


_game_rows = st.integers(2, 4).flatmap(lambda n: st.builds(
    GameRow,
    deal=st.integers(0, 3),
    entrants=st.just(list(range(n))),
    points=st.lists(st.integers(-13, 13), min_size=n, max_size=n),
    baseline=st.none() | st.lists(st.floats(-5, 5, allow_nan=False), min_size=n, max_size=n),
))


@settings(max_examples=200)
@given(st.lists(_game_rows, max_size=25))
def test_adjusted_scores_equal_the_definition_to_the_last_bit(games) -> None:
    """The one-pass sums give exactly what comparing each game with every other gives."""
    assert adjusted_scores(games, correct_counterparts=False) == _adjusted_by_definition(games)


def test_corrected_counterparts_keep_field_comparisons_on_the_raw_scale() -> None:
    # With counterparts, the uncorrected score compares a bot with bots of their own skill
    # and stretches every difference; corrected, a difference has the raw one's expectation.
    skill = [1.0, 1.0, 1.0, 0.0, 0.0, 0.0, -1.5, -1.5]
    raw_d, adj_d, old_d = [], [], []
    rng = random.Random(9)
    for _ in range(60):
        games = simulated_round_robin(rng, skill, field=True)
        rows = {r.entrant: r for r in adjusted_standings(games)}
        old = {r.entrant: r for r in adjusted_standings(games, correct_counterparts=False)}
        raw_d.append(rows[0].points_mean - rows[3].points_mean)
        adj_d.append(rows[0].adjusted_mean - rows[3].adjusted_mean)
        old_d.append(old[0].adjusted_mean - old[3].adjusted_mean)
    mean = lambda v: sum(v) / len(v)  # noqa: E731
    # What raw points expect: a bot's points are 3/4 of its skill less its opponents' mean
    # (zero-sum at a table of 4), and each of 8 entrants meets the other 7 equally often.
    expected = 0.75 * (8 / 7) * (skill[0] - skill[3])
    assert mean(adj_d) == pytest.approx(expected, abs=0.06)
    assert mean(raw_d) == pytest.approx(expected, abs=0.25)  # the same, with the luck in it
    assert mean(old_d) - expected > 0.15  # the old estimator's stretch
