"""What reading a replay costs: the one reader (`bots_sdk.rules.replay_read`) against a bare
`json.loads`, and the full re-simulation (`replay_game`), per replay.

Every page, API answer and tool reads replays through `replay_read` (the one replay reader), which
parses and checks the shape; this says what the check adds to the parse. Replays are real
records of random 4-player south games (about 4 KB of JSON each), read from text and from
the platform's stored form (zlib).

    .venv/bin/python benchmarks/replay_read_bench.py            # 300 replays, best of 5
    .venv/bin/python benchmarks/replay_read_bench.py --quick
"""

from __future__ import annotations

import argparse
import json
import random
import time
import zlib
from collections.abc import Callable
from typing import Any

from bots_sdk.rules import ENGINE_BUILD, Game, replay_game, replay_read


def random_replays(count: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    out = []
    for i in range(count):
        game = Game.from_seed(f"bench-{seed}-{i}", 4)
        while not game.is_over:
            plays = game.legal_plays()
            k = rng.randrange(len(plays) + (1 if game.can_pass else 0))
            if k == len(plays):
                game.pass_turn()
            else:
                game.play(plays[k])
        out.append(json.dumps(game.replay(), separators=(",", ":")))
    return out


def per_item_us(fn: Callable[[Any], object], items: list[Any], repeat: int) -> float:
    """Best of `repeat` passes over the items (the least disturbed), µs per item."""
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        for item in items:
            fn(item)
        best = min(best, time.perf_counter() - start)
    return best / len(items) * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replays", type=int, default=300)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="60 replays, best of 3")
    args = parser.parse_args()
    if args.quick:
        args.replays, args.repeat = 60, 3
    texts = random_replays(args.replays, seed=1)
    blobs = [zlib.compress(t.encode(), 6) for t in texts]
    size = sum(map(len, texts)) / len(texts)
    parse = per_item_us(json.loads, texts, args.repeat)
    rows = [
        ("json.loads (parse only)", parse),
        ("replay_read (parse + shape check)", per_item_us(replay_read, texts, args.repeat)),
        ("zlib + json.loads (a stored replay)", per_item_us(lambda b: json.loads(zlib.decompress(b)), blobs, args.repeat)),
        ("zlib + replay_read (Replay.read)", per_item_us(lambda b: replay_read(zlib.decompress(b)), blobs, args.repeat)),
        ("replay_game (read + re-simulate + check)", per_item_us(replay_game, texts, args.repeat)),
    ]
    print(f"{args.replays} replays of random 4-player south games, {size:,.0f} B of JSON each; "
          f"engine build {ENGINE_BUILD}; best of {args.repeat} passes\n")
    print("| reading one replay | µs | × json.loads |")
    print("| --- | ---: | ---: |")
    for name, us in rows:
        print(f"| {name} | {us:,.1f} | {us / parse:.2f} |")


if __name__ == "__main__":
    main()
