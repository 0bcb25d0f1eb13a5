"""The search bot's work per move: deals it simulates within its budget, and what one costs.

For positions from random 4-player south games (the seat to move, mid-game), the
`search` example bot plays one move with its CPU budget (`--budget-ms`, 50 by default, as
a house bot), and the run reports the deals it simulated per searched move (each deal:
every candidate move played on that deal and finished with heuristic rollouts) and the
CPU microseconds per deal. Also measured per position: dealing and replaying a consistent
game (`Determinizer.sample_game`, what the bot did once per candidate before `Game.copy`)
next to `Game.copy()` of it (what it does now).

The machine is shared, so compare trees side by side in one run: `--tree LABEL=PATH`
(repeatable) runs another checkout (e.g. a `git worktree` of the old main) in its own
process next to this one, taking turns round after round (`--rounds`), the best round of
each kept; `LABEL=PATH:python` forces the pure-Python engine there.

    .venv/bin/python benchmarks/search_bench.py                 # this tree, about 30 s
    .venv/bin/python benchmarks/search_bench.py --quick
    git worktree add --detach /tmp/before <old commit>
    .venv/bin/python benchmarks/search_bench.py --tree before=/tmp/before:python \\
        --tree after=.:python --rounds 2
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from pathlib import Path
from typing import Any

from trees import add_tree_argument, measure_in_tree, parse_trees

ROOT = Path(__file__).resolve().parents[1]


def positions(count: int) -> list[tuple[str, int, list[int]]]:
    """(deal seed, moves to play, choices) of mid-game positions, replayable anywhere."""
    from bots_sdk.rules import Game

    out = []
    seed = 0
    while len(out) < count:
        seed += 1
        rng = random.Random(seed)
        stop = rng.randint(12, 30)
        game = Game.from_seed(f"searchbench/{seed}", 4)
        choices = []
        while not game.is_over and len(choices) < stop:
            plays = game.legal_plays()
            k = rng.randrange(len(plays) + game.can_pass)
            choices.append(k)
            game.pass_turn() if k == len(plays) else game.play(plays[k])
        if not game.is_over and len(game.legal_plays()) > 1:
            out.append((f"searchbench/{seed}", stop, choices))
    return out


def measure(count: int, budget_ms: float) -> dict[str, Any]:
    """Runs inside the tree being measured (its bots_sdk first on sys.path)."""
    from bots_sdk.bot import View
    from bots_sdk.determinize import Determinizer
    from bots_sdk.examples.search import SearchBot
    from bots_sdk.rules import ENGINE_BUILD, Game

    SearchBot.budget_ms = budget_ms
    deals, cpu_per_deal, replay_us, copy_us = [], [], [], []
    for seed, _stop, choices in positions(count):
        game = Game.from_seed(seed, 4)
        for k in choices:
            plays = game.legal_plays()
            game.pass_turn() if k == len(plays) else game.play(plays[k])
        view = View(game.view(game.to_move))
        bot = SearchBot(seed=seed)
        c0 = time.thread_time()
        bot.play(view)
        spent = time.thread_time() - c0
        if bot.stats["searched"]:
            deals.append(bot.stats["deals"])
            cpu_per_deal.append(spent / bot.stats["deals"] * 1e6)
        det = Determinizer(view)
        rng = random.Random(1)
        c0 = time.thread_time()
        made = [det.sample_game(rng) for _ in range(20)]
        replay_us.append((time.thread_time() - c0) / 20 * 1e6)
        if hasattr(made[0], "copy"):
            c0 = time.thread_time()
            for g in made:
                for _ in range(10):
                    g.copy()
            copy_us.append((time.thread_time() - c0) / 200 * 1e6)
    return {
        "engine": ENGINE_BUILD,
        "searched": len(deals),
        "deals": statistics.mean(deals) if deals else 0.0,
        "us_per_deal": statistics.mean(cpu_per_deal) if cpu_per_deal else 0.0,
        "sample_game_us": statistics.mean(replay_us),
        "copy_us": statistics.mean(copy_us) if copy_us else None,
    }


def run_tree(path: Path, python_only: bool, count: int, budget_ms: float) -> dict[str, Any]:
    return measure_in_tree(path, python_only, "search_bench", f"measure({count}, {budget_ms})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--positions", type=int, default=40, help="positions (moves searched)")
    parser.add_argument("--budget-ms", type=float, default=50.0, help="CPU ms per move")
    parser.add_argument("--rounds", type=int, default=1, help="rounds per tree (best kept)")
    add_tree_argument(parser)
    parser.add_argument("--quick", action="store_true", help="12 positions")
    args = parser.parse_args()
    count = 12 if args.quick else args.positions
    trees = parse_trees(args.tree, ROOT, "bots_sdk/examples/search.py")
    best: dict[str, dict[str, Any]] = {}
    for _ in range(args.rounds):
        for label, path, python_only in trees:
            r = run_tree(path, python_only, count, args.budget_ms)
            if label not in best or r["deals"] > best[label]["deals"]:
                best[label] = r
    print(f"{count} mid-game positions (4-player south), {args.budget_ms:g} ms of CPU per "
          f"move, best of {args.rounds} round(s)\n")
    print("| tree | engine | moves searched | deals per move | CPU µs per deal "
          "| sample_game() µs | copy() µs |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: |")
    for label, r in best.items():
        copy = "—" if r["copy_us"] is None else f"{r['copy_us']:.1f}"
        print(f"| {label} | {r['engine']} | {r['searched']} | {r['deals']:.0f} | "
              f"{r['us_per_deal']:.0f} | {r['sample_game_us']:.0f} | {copy} |")


if __name__ == "__main__":
    main()
