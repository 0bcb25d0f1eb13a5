"""Rules-engine throughput: complete random games and legal-move generations per second.

Every game goes through the public API only, one turn at a time: ``legal_plays()``, pick one
play uniformly or pass (when passing is allowed), apply it; every rule is enforced. Rates
are per CPU-second of the measuring process (``time.process_time``) and per wall-second.

The machine is shared, so compare engines side by side in one run: ``--engine LABEL=PATH``
(repeatable) measures the engine of another checkout (e.g. a ``git worktree`` of the old
main) next to this one; ``LABEL=PATH:python`` forces the pure-Python build of a checkout
(``TIENLEN_ENGINE=python``). Each engine runs in its own process, the engines take turns
round after round (``--rounds``), and the best round of each is kept (timeit's rule: the
least disturbed run).

    .venv/bin/python benchmarks/engine_bench.py                  # this tree, about 20 s
    .venv/bin/python benchmarks/engine_bench.py --quick          # a few seconds
    git worktree add /tmp/before <old commit>
    .venv/bin/python benchmarks/engine_bench.py --engine before=/tmp/before \\
        --engine after=. --engine after-python=.:python
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
BASELINE_OPS = 2_000_000


def baseline_loop() -> float:
    """A fixed pure-Python loop (an LCG): millions of iterations per CPU-second."""
    c0 = time.process_time()
    x = 1
    for _ in range(BASELINE_OPS):
        x = (x * 1103515245 + 12345) & 0xFFFFFFFF
    return BASELINE_OPS / (time.process_time() - c0) / 1e6


# ---------------------------------------------------------------- run inside one engine


def random_games(game_cls: Any, preset: str, games: int, players: int, seed: int) -> dict[str, float]:
    rng = random.Random(seed)
    turns = 0
    c0, w0 = time.process_time(), time.perf_counter()
    for i in range(games):
        g = game_cls.from_seed(f"bench-{seed}-{i}", players, preset=preset)
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


def generations(game_cls: Any, games: int, seed: int) -> dict[str, float]:
    """The first ``legal_plays()`` of every position of random south games (that call
    generates; later calls return the same object), timed one call at a time: even
    positions with ``len()`` (lazy), odd ones with ``list()`` (every play built). The clock
    is this thread's CPU time (other processes' time is not counted, which matters on a
    shared machine); its own cost, measured the same way, is subtracted."""
    clock = time.thread_time
    calls = 20000
    t0 = clock()
    for _ in range(calls):
        a = clock()
        b = clock()
    overhead = (clock() - t0) / calls
    rng = random.Random(seed)
    spent = {"lazy": 0.0, "full": 0.0}
    count = {"lazy": 0, "full": 0}
    position = 0
    for i in range(games):
        g = game_cls.from_seed(f"gen-{seed}-{i}", 4)
        while not g.is_over:
            if position % 2 == 0:
                key = "lazy"
                a = clock()
                len(g.legal_plays())
                b = clock()
            else:
                key = "full"
                a = clock()
                list(g.legal_plays())
                b = clock()
            position += 1
            spent[key] += b - a - overhead
            count[key] += 1
            plays = g.legal_plays()
            k = rng.randrange(len(plays) + g.can_pass)
            if k == len(plays):
                g.pass_turn()
            else:
                g.play(plays[k])
    return {"lazy": count["lazy"] / spent["lazy"], "full": count["full"] / spent["full"],
            "positions": position}


def worker(config: dict[str, Any]) -> dict[str, Any]:
    import bots_sdk.rules as rules

    game_cls = rules.Game
    build = getattr(rules, "ENGINE_BUILD", "python")
    seed = config["seed"]
    out: dict[str, Any] = {"build": build, "file": rules.game.__file__, "rows": {}}
    south = [random_games(game_cls, "south", config["games"] // 5, 4, seed + k) for k in range(5)]
    out["rows"]["south"] = {
        "cpu": sum(c["cpu"] for c in south) / 5, "best": max(c["cpu"] for c in south),
        "wall": sum(c["wall"] for c in south) / 5, "turns": sum(c["turns"] for c in south) / 5}
    for preset in config["presets"]:
        if preset != "south":
            out["rows"][preset] = random_games(game_cls, preset, config["preset_games"], 4, seed)
    out["rows"]["south, 2 players"] = random_games(game_cls, "south", config["preset_games"], 2,
                                                   seed)
    out["gen"] = generations(game_cls, config["gen_games"], seed)
    out["baseline"] = baseline_loop()
    return out


# ---------------------------------------------------------------- the comparison


def run_engine(path: Path, python_only: bool, config: dict[str, Any]) -> dict[str, Any]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(path)  # before site-packages (and the editable install's finder)
    if python_only:
        env["TIENLEN_ENGINE"] = "python"
    done = subprocess.run([sys.executable, __file__, "--worker", json.dumps(config)], env=env,
                          cwd=path, capture_output=True, text=True, check=False)
    if done.returncode:
        raise SystemExit(f"engine at {path} failed:\n{done.stderr}")
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--games", type=int, default=3000, help="south 4-player games")
    parser.add_argument("--preset-games", type=int, default=500, help="games per other preset")
    parser.add_argument("--gen-games", type=int, default=200, help="games of positions")
    parser.add_argument("--presets", default="south,south_extended,hue,danang,north")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=1, help="rounds per engine (best kept)")
    parser.add_argument("--engine", action="append", default=[],
                        help="LABEL=PATH or LABEL=PATH:python (repeatable; default: this tree)")
    parser.add_argument("--quick", action="store_true", help="short run (about 5 s per engine)")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(worker(json.loads(args.worker))))
        return
    if args.quick:
        args.games, args.preset_games, args.gen_games = 1000, 200, 60
    config = {"games": args.games, "preset_games": args.preset_games,
              "gen_games": args.gen_games, "presets": args.presets.split(","), "seed": args.seed}
    engines: list[tuple[str, Path, bool]] = []
    for spec in args.engine or [f"this tree={ROOT}"]:
        label, _, where = spec.partition("=")
        python_only = where.endswith(":python")
        engines.append((label, Path(where.removesuffix(":python") or ".").resolve(), python_only))

    results: dict[str, list[dict[str, Any]]] = {label: [] for label, _p, _py in engines}
    for _round in range(args.rounds):
        for label, path, python_only in engines:
            results[label].append(run_engine(path, python_only, config))

    def best(label: str, row: str, key: str) -> float:
        return max(r["rows"][row][key] for r in results[label])

    labels = [label for label, _p, _py in engines]
    first = labels[0]
    print(f"engines ({args.rounds} round(s) each, best kept): "
          + "; ".join(f"{label} = {path}{' (pure Python)' if py else ''}, build "
                      f"{results[label][0]['build']}" for label, path, py in engines))
    print("baseline loop (M iterations per CPU-second, per round): "
          + "; ".join(f"{label} " + "/".join(f"{r['baseline']:.1f}" for r in results[label])
                      for label in labels))
    print()
    head = " | ".join(f"{label} games/CPU-s" for label in labels)
    ratio_head = "".join(f" | {label} / {first}" for label in labels[1:])
    print(f"| random 4-player games (public API) | turns/game | {head}{ratio_head} |")
    print("| --- | ---: |" + " ---: |" * (len(labels) + len(labels) - 1))
    row_names = ["south"] + [p for p in config["presets"] if p != "south"] + ["south, 2 players"]
    for row in row_names:
        name = f"{row} (mean of 5 runs)" if row == "south" else row
        turns = results[first][0]["rows"][row]["turns"]
        cells = [best(label, row, "cpu") for label in labels]
        ratios = "".join(f" | {c / cells[0]:.2f}×" for c in cells[1:])
        print(f"| {name} | {turns:.1f} | " + " | ".join(f"{c:,.0f}" for c in cells) + ratios + " |")
        if row == "south":
            cells = [best(label, row, "best") for label in labels]
            ratios = "".join(f" | {c / cells[0]:.2f}×" for c in cells[1:])
            print("| south (best of 5 runs) | | " + " | ".join(f"{c:,.0f}" for c in cells)
                  + ratios + " |")
    print()
    print(f"| legal-move generation (south positions) | {head.replace('games/CPU-s', 'per s')}"
          f"{ratio_head} |")
    print("| --- |" + " ---: |" * (len(labels) + len(labels) - 1))
    for key, name in (("lazy", "legal_plays() + len() (lazy)"),
                      ("full", "list(legal_plays()) (every play built)")):
        cells = [max(r["gen"][key] for r in results[label]) for label in labels]
        ratios = "".join(f" | {c / cells[0]:.2f}×" for c in cells[1:])
        print(f"| {name} | " + " | ".join(f"{c:,.0f}" for c in cells) + ratios + " |")
    positions = results[first][0]["gen"]["positions"]
    print(f"\n({positions} positions; games/s are per CPU-second of each engine's process; "
          f"bars: 3,000 on every preset and 5,000 on south)")


if __name__ == "__main__":
    main()
