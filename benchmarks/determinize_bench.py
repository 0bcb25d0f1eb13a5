"""How fast `bots_sdk.determinize` deals the hidden cards, per preset and phase of a game.

For positions taken from random games (the seat to move's view, 4 players unless noted),
per microsecond of CPU:

- `Determinizer(view)`: setting up for one view (once per move);
- `sample()`: one consistent deal (hands and undealt cards), every check included;
- `sample_game()`: one consistent deal replayed into a `Game` at the view's position,
  ready to simulate from;

next to one random playout from that position through the engine (what a search does with
each deal), so the cost of dealing reads as a share of a simulation. A fixed pure-Python
loop measured in the same run makes runs on a busy machine comparable. Bar (what a search bot needs):
hundreds of samples per move, i.e. a few hundred microseconds each at most.

    .venv/bin/python benchmarks/determinize_bench.py [--positions 30] [--samples 200]
    TIENLEN_ENGINE=python .venv/bin/python benchmarks/determinize_bench.py   # pure Python
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bots_sdk.determinize import Determinizer  # noqa: E402
from bots_sdk.rules import ENGINE_BUILD, PRESETS, Game  # noqa: E402

PHASES = (("opening (move 1-3)", 1, 3), ("middle (move 15-25)", 15, 25),
          ("end (move 40+)", 40, 999))


def baseline_loop() -> float:
    """Millions of iterations per CPU-second of a fixed pure-Python loop (an LCG)."""
    t = time.process_time()
    x = 1
    for _ in range(2_000_000):
        x = (x * 1103515245 + 12345) & 0x7FFFFFFF
    return 2.0 / (time.process_time() - t)


def positions(preset: str, players: int, lo: int, hi: int, count: int) -> list[Game]:
    """Games stopped at a random move in [lo, hi] (random play), the seat to move next."""
    out = []
    seed = 0
    while len(out) < count and seed < count * 50:
        seed += 1
        rng = random.Random(seed)
        game = Game.from_seed(f"detbench/{seed}", players, preset=preset,
                              starting=rng.random() < 0.5, leader=rng.randrange(players))
        stop = rng.randint(lo, hi)
        moves = 0
        while not game.is_over and moves < stop:
            plays = game.legal_plays()
            i = rng.randrange(len(plays) + game.can_pass)
            game.pass_turn() if i == len(plays) else game.play(plays[i])
            moves += 1
        if not game.is_over and moves >= lo:
            out.append(game)
    return out


def playout(game: Game, rng: random.Random) -> None:
    while not game.is_over:
        plays = game.legal_plays()
        i = rng.randrange(len(plays) + game.can_pass)
        game.pass_turn() if i == len(plays) else game.play(plays[i])


def measure(games: list[Game], samples: int) -> dict[str, float]:
    rng = random.Random(1)
    setup, deal, ready, sim = [], [], [], []
    for game in games:
        view = game.view(game.to_move)
        t = time.process_time()
        det = Determinizer(view)
        setup.append(time.process_time() - t)
        t = time.process_time()
        for _ in range(samples):
            det.sample(rng)
        deal.append((time.process_time() - t) / samples)
        t = time.process_time()
        made = [det.sample_game(rng) for _ in range(max(1, samples // 4))]
        ready.append((time.process_time() - t) / len(made))
        t = time.process_time()
        for g in made:
            playout(g, rng)
        sim.append((time.process_time() - t) / len(made))
    us = 1e6
    return {"setup": statistics.mean(setup) * us, "sample": statistics.mean(deal) * us,
            "game": statistics.mean(ready) * us, "playout": statistics.mean(sim) * us}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--positions", type=int, default=30, help="positions per row")
    parser.add_argument("--samples", type=int, default=200, help="deals per position")
    parser.add_argument("--presets", default=",".join(PRESETS))
    args = parser.parse_args()
    before = baseline_loop()
    rows = []
    for preset in args.presets.split(","):
        for label, lo, hi in PHASES:
            rows.append((preset, 4, label, measure(positions(preset, 4, lo, hi,
                                                             args.positions), args.samples)))
    for players in (2, 3):
        rows.append(("south", players, PHASES[1][0],
                     measure(positions("south", players, 15, 25, args.positions),
                             args.samples)))
    after = baseline_loop()
    print(f"engine: {ENGINE_BUILD}; baseline loop: {(before + after) / 2:.1f} M iterations "
          f"per CPU-second (before {before:.1f}, after {after:.1f})\n")
    print("| preset | players | position | set-up µs | sample() µs | sample_game() µs "
          "| random playout µs | sample()s per second |")
    print("| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: |")
    for preset, players, label, r in rows:
        print(f"| {preset} | {players} | {label} | {r['setup']:.0f} | {r['sample']:.0f} | "
              f"{r['game']:.0f} | {r['playout']:.0f} | {1e6 / r['sample']:,.0f} |")


if __name__ == "__main__":
    main()
