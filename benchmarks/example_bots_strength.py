"""How strong are the example bots, and what does duplicate dealing buy?

    .venv/bin/python benchmarks/example_bots_strength.py --games 2000 --jobs 2

1. Strength: 4-player `south` arena matches with duplicate deals, two bots in alternating
   seats (A B A B): heuristic vs greedy and greedy vs random. Each prints the points per
   game difference with its 95% interval (paired per duplicate set).
2. Variance: heuristic vs greedy with the same total number of games, once with duplicate
   sets and once with independent random deals. From each run's per-unit spread and mean
   difference, the games needed for the 95% interval to exclude zero:
   n = games per unit x (1.96 sd / mean)^2. Their ratio is what duplicate dealing buys.
"""

from __future__ import annotations

import argparse
import time

from bots_sdk.arena import ArenaConfig, Lineup, run_arena
from bots_sdk.stats import games_to_separate, pairwise


def match(a: str, b: str, games: int, duplicate: bool, jobs: int, seed: str):
    cfg = ArenaConfig(
        lineup=Lineup.build([a, b], 4), games=games, duplicate=duplicate, jobs=jobs, seed=seed
    )
    result = run_arena(cfg)
    (cmp_,) = pairwise(result.records, [a, b])
    return result, cmp_


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--games", type=int, default=2000)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--seed", default="strength")
    args = ap.parse_args()
    started = time.perf_counter()

    print(f"strength: 4 players, south, duplicate deals, {args.games} games per match\n")
    print(f"{'match':<22} {'games':>6} {'sets':>5} {'points/game diff (95% CI)':>27}  verdict")
    for a, b in (("heuristic", "greedy"), ("greedy", "random"), ("heuristic", "random")):
        result, c = match(a, b, args.games, True, args.jobs, args.seed)
        print(
            f"{a + ' - ' + b:<22} {len(result.records):>6} {c.diff.n:>5} "
            f"{c.diff.mean:>+12.3f} [{c.diff.low:+.3f}, {c.diff.high:+.3f}]  {c.verdict}"
        )

    print(f"\nduplicate vs independent deals: heuristic - greedy, {args.games} games each\n")
    print(
        f"{'deals':<12} {'units':>6} {'games/unit':>10} {'mean diff':>10} {'sd/unit':>8} "
        f"{'95% half-width':>15} {'games to separate':>18}"
    )
    need = {}
    for duplicate in (True, False):
        result, c = match("heuristic", "greedy", args.games, duplicate, args.jobs, args.seed + "-var")
        per_unit = 4 if duplicate else 1
        need[duplicate] = games_to_separate(c.diff, per_unit)
        print(
            f"{'duplicate' if duplicate else 'independent':<12} {c.diff.n:>6} {per_unit:>10} "
            f"{c.diff.mean:>+10.3f} {c.diff.sd:>8.3f} {c.diff.half_width:>15.3f} {need[duplicate]:>18.0f}"
        )
    print(f"\nratio (independent / duplicate games needed): {need[False] / need[True]:.1f}x")
    print(f"total time {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
