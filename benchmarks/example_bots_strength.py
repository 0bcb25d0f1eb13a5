"""How strong are the example bots, and what does duplicate dealing buy?

    .venv/bin/python benchmarks/example_bots_strength.py --games 2000 --jobs 2

1. Strength: 4-player `south` arena matches with duplicate deals, two bots in alternating
   seats (A B A B): heuristic vs greedy and greedy vs random. Each prints the points per
   game difference with its 95% interval (paired per duplicate set).
2. Variance: heuristic vs greedy with the same total number of games, once with duplicate
   sets and once with independent random deals, for two seatings (H G H G, whose distinct
   rotations make 2-game sets, and H G G G, 4-game sets). From each run's per-unit spread
   and mean difference, the games needed for the 95% interval to exclude zero:
   n = games per unit x (1.96 sd / mean)^2. Their ratio is what duplicate dealing buys.
"""

from __future__ import annotations

import argparse
import time

from bots_sdk.arena import ArenaConfig, Lineup, run_arena
from bots_sdk.stats import games_to_separate, pairwise


def match_lineup(specs: list[str], games: int, duplicate: bool, jobs: int, seed: str):
    """Play the lineup; return the result and the comparison of its first two bots."""
    lineup = Lineup.build(specs, 4)
    cfg = ArenaConfig(lineup=lineup, games=games, duplicate=duplicate, jobs=jobs, seed=seed)
    result = run_arena(cfg)
    cmp_ = pairwise(result.records, list(lineup.names))[0]
    return result, cmp_


def match(a: str, b: str, games: int, duplicate: bool, jobs: int, seed: str):
    return match_lineup([a, b], games, duplicate, jobs, seed)


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

    print(f"\nduplicate vs independent deals: heuristic vs greedy, {args.games} games each\n")
    print(
        f"{'seats':<10} {'deals':<12} {'units':>6} {'games/unit':>10} {'mean diff':>10} "
        f"{'sd/unit':>8} {'95% half-width':>15} {'games to separate':>18}"
    )
    ratios = {}
    for seats in (["heuristic", "greedy"], ["heuristic", "greedy", "greedy", "greedy"]):
        label = "H G H G" if len(seats) == 2 else "H G G G"
        need = {}
        for duplicate in (True, False):
            result, c = match_lineup(seats, args.games, duplicate, args.jobs, args.seed + "-var")
            per_unit = len(result.records) / c.diff.n
            need[duplicate] = games_to_separate(c.diff, per_unit)
            print(
                f"{label:<10} {'duplicate' if duplicate else 'independent':<12} {c.diff.n:>6} "
                f"{per_unit:>10.0f} {c.diff.mean:>+10.3f} {c.diff.sd:>8.3f} "
                f"{c.diff.half_width:>15.3f} {need[duplicate]:>18.1f}"
            )
        ratios[label] = need[False] / need[True]
    for label, ratio in ratios.items():
        print(f"ratio for {label} (independent / duplicate games needed): {ratio:.1f}x")
    print(f"total time {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
