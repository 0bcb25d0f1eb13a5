"""Rules-engine throughput: complete random games and legal-move generations per second.

Every game goes through the public API only, one turn at a time: ``legal_plays()``, pick one
play uniformly or pass (when passing is allowed), apply it; every rule is enforced. The
machine is shared, so rates are per CPU-second of this process (``time.process_time``) as
well as per wall-second, next to a fixed pure-Python baseline loop measured in the same
run: compare ratios between runs, not raw numbers.

    .venv/bin/python benchmarks/engine_bench.py            # about 20 s
    .venv/bin/python benchmarks/engine_bench.py --games 500 --presets south
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bots_sdk.rules import PRESETS, Game

BASELINE_OPS = 2_000_000


def baseline_loop() -> tuple[float, float]:
    """A fixed pure-Python loop (an LCG): millions of iterations per CPU-second and wall-second."""
    c0, w0 = time.process_time(), time.perf_counter()
    x = 1
    for _ in range(BASELINE_OPS):
        x = (x * 1103515245 + 12345) & 0xFFFFFFFF
    c1, w1 = time.process_time(), time.perf_counter()
    return BASELINE_OPS / (c1 - c0) / 1e6, BASELINE_OPS / (w1 - w0) / 1e6


def random_games(preset: str, games: int, players: int, seed: int) -> dict[str, float]:
    rng = random.Random(seed)
    turns = 0
    c0, w0 = time.process_time(), time.perf_counter()
    for i in range(games):
        g = Game.from_seed(f"bench-{seed}-{i}", players, preset=preset)
        while not g.is_over:
            plays = g.legal_plays()
            k = rng.randrange(len(plays) + g.can_pass)
            if k == len(plays):
                g.pass_turn()
            else:
                g.play(plays[k])
            turns += 1
    c1, w1 = time.process_time(), time.perf_counter()
    return {"cpu": games / (c1 - c0), "wall": games / (w1 - w0), "turns": turns / games}


def generations(games: int, seed: int, repeat: int = 10) -> dict[str, float]:
    """legal_plays() on the positions of random south games, cache dropped each time."""
    rng = random.Random(seed)
    lazy_cpu = full_cpu = 0.0
    count = 0
    for i in range(games):
        g = Game.from_seed(f"gen-{seed}-{i}", 4)
        while not g.is_over:
            c0 = time.process_time()
            for _ in range(repeat):
                g._legal = None
                len(g.legal_plays())
            c1 = time.process_time()
            for _ in range(repeat):
                g._legal = None
                list(g.legal_plays())
            c2 = time.process_time()
            lazy_cpu += c1 - c0
            full_cpu += c2 - c1
            count += repeat
            g._legal = None
            plays = g.legal_plays()
            k = rng.randrange(len(plays) + g.can_pass)
            if k == len(plays):
                g.pass_turn()
            else:
                g.play(plays[k])
    return {"lazy": count / lazy_cpu, "full": count / full_cpu, "positions": count / repeat}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=3000, help="south 4-player games")
    parser.add_argument("--preset-games", type=int, default=500, help="games per other preset")
    parser.add_argument("--gen-games", type=int, default=200)
    parser.add_argument("--presets", default=",".join(PRESETS))
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()

    base_before = baseline_loop()
    chunks = [random_games("south", args.games // 5, 4, args.seed + k) for k in range(5)]
    base_after = baseline_loop()
    base_cpu = (base_before[0] + base_after[0]) / 2
    south = {key: sum(c[key] for c in chunks) / 5 for key in ("cpu", "wall", "turns")}
    best = max(chunks, key=lambda c: c["cpu"])
    rows = [("south, 4 players (mean of 5 runs)", south),
            ("south, 4 players (best of 5 runs)", best)]
    for preset in args.presets.split(","):
        if preset != "south":
            rows.append((f"{preset}, 4 players",
                         random_games(preset, args.preset_games, 4, args.seed)))
    rows.append(("south, 2 players", random_games("south", args.preset_games, 2, args.seed)))
    gen = generations(args.gen_games, args.seed)

    print(f"baseline loop: {base_cpu:.1f} M iterations per CPU-second "
          f"(before {base_before[0]:.1f}, after {base_after[0]:.1f}; "
          f"wall {base_before[1]:.1f}/{base_after[1]:.1f})")
    print()
    print("| random games (public API) | games/CPU-s | games/wall-s | turns/game "
          "| games per M baseline iterations |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for name, r in rows:
        print(f"| {name} | {r['cpu']:,.0f} | {r['wall']:,.0f} | {r['turns']:.1f} "
              f"| {r['cpu'] / base_cpu:,.0f} |")
    print()
    print("| legal-move generation (south positions) | per CPU-second | per M baseline |")
    print("| --- | ---: | ---: |")
    print(f"| legal_plays() + len() (lazy) | {gen['lazy']:,.0f} | {gen['lazy'] / base_cpu:,.0f} |")
    print(f"| list(legal_plays()) (every play built) | {gen['full']:,.0f} "
          f"| {gen['full'] / base_cpu:,.0f} |")
    print(f"\n({gen['positions']:.0f} positions; bar: 2,000 south 4-player games/s on one core; "
          f"timeit's rule applies: the best run is the least disturbed by other processes)")


if __name__ == "__main__":
    main()
