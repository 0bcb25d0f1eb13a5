"""The referee's seat-view encoding per move request, alone: CPU microseconds to encode the
MoveRequest of the seat to move, after every move of recorded random 4-player games.

It is part of the referee's own work per move (referee_bench.py's (d) and (e)), measured
here without gRPC or other processes, so a change of a microsecond shows through the noise
of a shared machine. `--tree LABEL=PATH[:python]` (repeatable) measures another checkout
in its own process next to this one (a tree whose encoder still has `record()`, from before
the one-encoder change, is driven the way its referee drove it); the trees take
turns round after round (`--rounds`) and each keeps its best.

    .venv/bin/python benchmarks/view_encoder_bench.py                # this tree, ~10 s
    .venv/bin/python benchmarks/view_encoder_bench.py --tree before=/tmp/before \\
        --tree after=. --rounds 3
"""

from __future__ import annotations

import argparse
import random
import time
from pathlib import Path
from typing import Any

from trees import add_tree_argument, measure_in_tree, parse_trees

ROOT = Path(__file__).resolve().parents[1]


def measure(games: int, repeats: int) -> dict[str, Any]:
    """Runs inside the tree being measured (its packages first on sys.path)."""
    from bots_sdk.rules import ENGINE_BUILD, Game
    from referee_service.view_encoder import ViewEncoder

    scripts = []
    for i in range(games):
        rng = random.Random(i)
        game = Game.from_seed(f"encbench/{i}", 4)
        script = []
        while not game.is_over:
            plays = game.legal_plays()
            k = rng.randrange(len(plays) + game.can_pass)
            script.append(k)
            game.pass_turn() if k == len(plays) else game.play(plays[k])
        scripts.append(script)
    # Before the one-encoder change the table told its encoder each move (record); now it
    # reads the log.
    told = hasattr(ViewEncoder, "record")

    def one_run() -> float:
        spent = 0.0
        requests = 0
        clock = time.thread_time
        for i, script in enumerate(scripts):
            game = Game.from_seed(f"encbench/{i}", 4)
            encoder = ViewEncoder(game)
            for k in script:
                seat = game.to_move
                t = clock()
                encoder.move_request_bytes(table_id="table", game_index=0,
                                           move_id=requests + 1, seat=seat,
                                           time_left_ms=1000, time_bank_ms=0, attempt=1)
                spent += clock() - t
                requests += 1
                offer = game.offer
                plays = game.legal_plays()
                if k == len(plays):
                    game.pass_turn()
                    played = None
                else:
                    play = plays[k]
                    game.play(play)
                    played = [c.index for c in play]
                if told:
                    t = clock()
                    encoder.record(seat, played, offer)
                    spent += clock() - t
        return spent / requests * 1e6

    return {"engine": ENGINE_BUILD, "us": min(one_run() for _ in range(repeats)),
            "requests": sum(len(s) for s in scripts)}


def run_tree(path: Path, python_only: bool, games: int, repeats: int) -> dict[str, Any]:
    return measure_in_tree(path, python_only, "view_encoder_bench", f"measure({games}, {repeats})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=300, help="recorded games per run")
    parser.add_argument("--repeats", type=int, default=5, help="runs per round (best kept)")
    parser.add_argument("--rounds", type=int, default=1, help="rounds per tree (best kept)")
    add_tree_argument(parser)
    parser.add_argument("--quick", action="store_true", help="60 games, 3 runs")
    args = parser.parse_args()
    games, repeats = (60, 3) if args.quick else (args.games, args.repeats)
    trees = parse_trees(args.tree, ROOT, "referee_service/view_encoder.py")
    best: dict[str, dict[str, Any]] = {}
    for _ in range(args.rounds):
        for label, path, python_only in trees:
            r = run_tree(path, python_only, games, repeats)
            if label not in best or r["us"] < best[label]["us"]:
                best[label] = r
    first = next(iter(best.values()))["us"]
    print(f"{games} random 4-player south games, best of {repeats} runs x {args.rounds} "
          "round(s), CPU time of the encoding only\n")
    print("| tree | engine | move requests | µs per request | vs first |")
    print("| --- | --- | ---: | ---: | ---: |")
    for label, r in best.items():
        print(f"| {label} | {r['engine']} | {r['requests']} | {r['us']:.2f} | "
              f"{r['us'] / first:.2f} × |")


if __name__ == "__main__":
    main()
