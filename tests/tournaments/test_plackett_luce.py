"""Plackett-Luce strengths and their 95% intervals against data of known strength.

Orders are drawn from the Plackett-Luce model itself (sorting strength + Gumbel noise is
an exact sampler), so the truth is known: intervals must shrink like 1/√games and cover
the true relative strengths about 95% of the time (they once were ±1,100-1,700 Elo
whatever the number of games, so every "coverage" was trivially 100%).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from tournaments.ratings.plackett_luce import ELO_PER_NAT, plackett_luce_fit


def draw_orders(true: np.ndarray, games: int, seats: int, rng: np.random.Generator) -> list[list[int]]:
    """Finishing orders (best first) of `games` games among random `seats` of the players."""
    n = len(true)
    out = []
    for _ in range(games):
        players = rng.choice(n, seats, replace=False)
        noisy = true[players] + rng.gumbel(size=seats)
        out.append([int(p) for p in players[np.argsort(-noisy)]])
    return out


def half_widths(fit) -> list[float]:
    return [(s.high - s.low) / 2 for s in fit.values()]


def test_equal_bots_get_the_textbook_half_width_at_every_size() -> None:
    # Four equal bots, all at every table: the observed information of one game is
    # 3/16 + 2/9 + 1/4 per bot; relative to the field's mean the half-widths are 59, 19
    # and 6 Elo at 40, 400 and 4,000 games (an independent check of the formula).
    rng = np.random.default_rng(11)
    expected = {40: 59.0, 400: 18.7, 4000: 5.9}
    for games, width in expected.items():
        fit = plackett_luce_fit(draw_orders(np.zeros(4), games, 4, rng))
        assert half_widths(fit) == pytest.approx([width] * 4, rel=0.08), games


def test_half_width_shrinks_like_one_over_root_games() -> None:
    rng = np.random.default_rng(5)
    true = np.linspace(-1.0, 1.0, 8)
    widths = {}
    for games in (100, 400, 1600):
        widths[games] = np.mean(half_widths(plackett_luce_fit(draw_orders(true, games, 4, rng))))
    # Four times the games, half the width (within sampling noise of the fitted strengths).
    assert widths[100] / widths[400] == pytest.approx(2.0, rel=0.1)
    assert widths[400] / widths[1600] == pytest.approx(2.0, rel=0.1)
    assert widths[1600] < 20.0


@pytest.mark.parametrize(("games", "seats"), [(40, 4), (200, 4), (120, 3)])
def test_intervals_cover_the_true_strengths_95_percent_of_the_time(games: int, seats: int) -> None:
    """8 bots 60 Elo apart; each run fits fresh games. Coverage of the true strength
    relative to the field's mean (what the fit reports) must be at least 93%."""
    rng = np.random.default_rng(games * 10 + seats)
    true = np.array([(i - 3.5) * 60 / ELO_PER_NAT for i in range(8)])
    true -= true.mean()
    covered = total = 0
    for _ in range(150):
        fit = plackett_luce_fit(draw_orders(true, games, seats, rng))
        for player, strength in fit.items():
            truth = 1500.0 + ELO_PER_NAT * true[player]
            covered += strength.low <= truth <= strength.high
            total += 1
    assert total == 150 * 8
    coverage = covered / total
    # Not much above 95% either: an interval that is too wide is as wrong as one too narrow.
    assert 0.93 <= coverage <= 0.975, coverage


def test_an_unbeaten_bot_gets_a_finite_wide_interval_and_the_others_stay_tight() -> None:
    rng = np.random.default_rng(2)
    orders = draw_orders(np.zeros(7), 300, 3, rng)
    # Bot 7 plays 40 games and wins them all: the data put no upper bound on it.
    orders += [[7, *draw_orders(np.zeros(7), 1, 3, rng)[0]] for _ in range(40)]
    fit = plackett_luce_fit(orders)
    top = fit[7]
    assert math.isfinite(top.high) and top.low < top.rating < top.high
    assert top.low > max(s.high for p, s in fit.items() if p != 7) - 200
    assert all(0 < w < 150 for p, w in zip(fit, half_widths(fit), strict=True) if p != 7)
