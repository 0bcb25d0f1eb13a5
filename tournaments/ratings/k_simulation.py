"""Choose the default Elo K by simulation: bots of known strength, 4-player games.

Bots do not learn between games, so the ideal rating is a fixed number and K only trades
speed of convergence against noise. The simulation draws finishing orders from a
Plackett-Luce model with known strengths (spread like a real field: 60 Elo between
neighbours), rates the same games with several K, and reports how well each final Elo
ranks the bots (Kendall tau against the truth), its error against the true ratings, and
how much the result depends on the order in which the same games were applied. The
Plackett-Luce fit over all games is shown for comparison.

    .venv/bin/python -m tournaments.ratings.k_simulation [--games 1000] [--runs 20]
"""

from __future__ import annotations

import argparse
import math
import random
import statistics

from scipy.stats import kendalltau

from tournaments.ratings.elo import elo_deltas
from tournaments.ratings.plackett_luce import plackett_luce_fit

TRUE_RATINGS = [1500 + 60 * (i - 3.5) for i in range(8)]


def sample_order(players: list[int], rng: random.Random) -> list[int]:
    """A finishing order from the Plackett-Luce model of the true ratings."""
    remaining = list(players)
    order = []
    while remaining:
        weights = [10 ** (TRUE_RATINGS[p] / 400) for p in remaining]
        pick = rng.choices(remaining, weights=weights)[0]
        order.append(pick)
        remaining.remove(pick)
    return order


def rate(games: list[list[int]], k: float) -> list[float]:
    ratings = [1500.0] * len(TRUE_RATINGS)
    for order in games:
        places = list(range(1, len(order) + 1))
        deltas = elo_deltas([ratings[p] for p in order], places, k)
        for p, d in zip(order, deltas, strict=True):
            ratings[p] += d
    return ratings


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--k", type=float, nargs="*", default=[4, 8, 12, 16, 24, 32])
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    rng = random.Random(args.seed)
    n = len(TRUE_RATINGS)
    results: dict[str, list[tuple[float, float, float]]] = {f"K={k:g}": [] for k in args.k}
    results["Plackett-Luce"] = []
    for _ in range(args.runs):
        games = [sample_order(rng.sample(range(n), 4), rng) for _ in range(args.games)]
        shuffled = games[:]
        rng.shuffle(shuffled)
        for k in args.k:
            a, b = rate(games, k), rate(shuffled, k)
            tau = kendalltau(a, TRUE_RATINGS).statistic
            centre = statistics.fmean(a)
            rmse = math.sqrt(statistics.fmean((x - centre - (t - 1500)) ** 2 for x, t in zip(a, TRUE_RATINGS, strict=True)))
            order_effect = statistics.fmean(abs(x - y) for x, y in zip(a, b, strict=True))
            results[f"K={k:g}"].append((tau, rmse, order_effect))
        fit = plackett_luce_fit(games)
        strengths = [fit[p].rating for p in range(n)]
        centre = statistics.fmean(strengths)
        rmse = math.sqrt(statistics.fmean((x - centre - (t - 1500)) ** 2 for x, t in zip(strengths, TRUE_RATINGS, strict=True)))
        results["Plackett-Luce"].append((kendalltau(strengths, TRUE_RATINGS).statistic, rmse, 0.0))
    print(f"{n} bots, true ratings 60 Elo apart, {args.games} four-player games, {args.runs} runs")
    print(f"{'method':<15}{'Kendall tau':>12}{'RMSE (Elo)':>12}{'order effect':>14}")
    for name, rows in results.items():
        tau = statistics.fmean(r[0] for r in rows)
        rmse = statistics.fmean(r[1] for r in rows)
        effect = statistics.fmean(r[2] for r in rows)
        print(f"{name:<15}{tau:>12.3f}{rmse:>12.1f}{effect:>14.1f}")


if __name__ == "__main__":
    main()
