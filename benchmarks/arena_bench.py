"""Arena throughput, side by side with the bare engine loop, in one run.

    .venv/bin/python benchmarks/arena_bench.py [--games 400] [--blocks 20 --block-size 50]

Rows: the bare engine loop (each turn: legal_plays(), uniform pick among the plays and the
pass, apply), then `tienlen-bot arena` with random bots and with the example bots, with 1
and 2 worker processes. The bare loop seeds and draws like the arena's random bots, so
both play identical games. Bare and arena-random runs alternate in small blocks of the same
games; the bar uses this process's CPU time (median of the per-block ratios), which the
load of other processes on a shared machine does not inflate. The bar: arena (random,
1 job) >= 80% of the bare engine.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
import zlib

from bots_sdk.arena import ArenaConfig, Lineup, run_arena


def bare_engine(games: int, seed: str = "bench") -> float:
    """Games per second of the plain engine loop, no SDK in between. It seeds and draws
    exactly as the arena's random bots do, so both play the very same games move for move."""
    from bots_sdk.rules import Game

    rng = random
    started = time.perf_counter()
    for i in range(games):
        deal_seed = f"{seed}/game/{i}"
        rng.seed(zlib.crc32(deal_seed.encode()) * 8 + i % 4)
        g = Game.from_seed(deal_seed, 4, preset="south", starting=True)
        while not g.is_over:
            plays = g.legal_plays()
            n = len(plays) + (1 if g.can_pass else 0)
            k = rng.randrange(n)
            if k == len(plays):
                g.pass_turn()
            else:
                g.play(plays[k])
    return games / (time.perf_counter() - started)


def arena(specs: list[str], games: int, jobs: int, seed: str = "bench") -> float:
    cfg = ArenaConfig(lineup=Lineup.build(specs, 4), games=games, jobs=jobs, seed=seed)
    result = run_arena(cfg)
    assert len(result.records) == games and not result.errors
    return result.games_per_second


def paired_blocks(blocks: int, size: int) -> tuple[float, float, float, float]:
    """Bare engine and arena (random, 1 job) on the same games, alternating in small
    blocks. Returns wall-clock games/s of each, and the ratio arena/bare of CPU time
    (this process's `time.process_time`, which other processes' load does not inflate):
    the median of the per-block ratios and the ratio of the totals."""
    bare_wall = arena_wall = bare_cpu = arena_cpu = 0.0
    ratios = []
    for b in range(blocks):
        seed = f"bench{b}"
        c0, w0 = time.process_time(), time.perf_counter()
        bare_engine(size, seed)
        c1, w1 = time.process_time(), time.perf_counter()
        arena(["random"], size, 1, seed)
        c2, w2 = time.process_time(), time.perf_counter()
        bare_wall += w1 - w0
        arena_wall += w2 - w1
        bare_cpu += c1 - c0
        arena_cpu += c2 - c1
        ratios.append((c1 - c0) / (c2 - c1))
    total = blocks * size
    return total / bare_wall, total / arena_wall, statistics.median(ratios), bare_cpu / arena_cpu


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--games", type=int, default=400)
    ap.add_argument("--blocks", type=int, default=20, help="paired bare/arena blocks")
    ap.add_argument("--block-size", type=int, default=50, help="games per block")
    args = ap.parse_args()
    n = args.games

    bare, arena1, ratio, total_ratio = paired_blocks(args.blocks, args.block_size)
    rows = [
        ("bare engine loop (random play)", 1, bare),
        ("arena: 4 x random", 1, arena1),
        ("arena: 4 x random", 2, arena(["random"], n, 2)),
        ("arena: greedy vs random (2+2 seats)", 1, arena(["greedy", "random"], n, 1)),
        ("arena: heuristic, greedy, random, random", 1, arena(["heuristic", "greedy", "random", "random"], n // 2, 1)),
        ("arena: heuristic, greedy, random, random", 2, arena(["heuristic", "greedy", "random", "random"], n // 2, 2)),
        ("arena: 4 x heuristic", 1, arena(["heuristic"], n // 2, 1)),
        ("arena: 4 x heuristic", 2, arena(["heuristic"], n // 2, 2)),
    ]
    print(f"{'run':<44} {'jobs':>4} {'games/s':>9} {'vs bare':>8}")
    print("-" * 68)
    for name, jobs, rate in rows:
        print(f"{name:<44} {jobs:>4} {rate:>9.1f} {rate / bare:>7.0%}")
    ok = ratio >= 0.8
    print(
        f"\nbar: arena (random, 1 job) >= 80% of the bare engine on the same games, in CPU time: "
        f"median of {args.blocks} paired blocks {ratio:.0%}, totals {total_ratio:.0%} "
        f"(wall clock {arena1 / bare:.0%}) -> {'PASS' if ok else 'FAIL'}"
    )


if __name__ == "__main__":
    main()
