"""Steps per CPU-second of the PettingZoo environment (`bots_sdk.env`) with a random agent.

Each step is what a training loop does: `last()` (the observation and the 8192-id action
mask of the agent to act), a legal action drawn from the mask, `step()`. Next to it, the
same games through the engine alone (legal plays, random choice, play), so the
environment's own cost reads as a ratio. Per preset, 4 players.

    .venv/bin/python benchmarks/env_bench.py [--games 200]
    TIENLEN_ENGINE=python .venv/bin/python benchmarks/env_bench.py   # pure-Python engine
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bots_sdk.env import raw_env  # noqa: E402
from bots_sdk.rules import ENGINE_BUILD, PRESETS, Game  # noqa: E402


def env_steps(preset: str, games: int) -> tuple[float, int]:
    e = raw_env(preset=preset, players=4)
    e.reset(seed=0)
    rng = np.random.default_rng(0)
    steps = 0
    t = time.process_time()
    for _ in range(games):
        e.reset()
        for _agent in e.agent_iter():
            obs, _reward, terminated, truncated, _info = e.last()
            if terminated or truncated:
                e.step(None)
                continue
            e.step(int(rng.choice(np.flatnonzero(obs["action_mask"]))))
            steps += 1
    return steps / (time.process_time() - t), steps


def engine_moves(preset: str, games: int) -> float:
    rng = random.Random(0)
    moves = 0
    t = time.process_time()
    for i in range(games):
        game = Game.from_seed(f"envbench/{i}", 4, preset=preset)
        while not game.is_over:
            plays = game.legal_plays()
            k = rng.randrange(len(plays) + game.can_pass)
            game.pass_turn() if k == len(plays) else game.play(plays[k])
            moves += 1
    return moves / (time.process_time() - t)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=200)
    parser.add_argument("--presets", default=",".join(PRESETS))
    args = parser.parse_args()
    print(f"engine: {ENGINE_BUILD}; {args.games} games per preset, 4 players\n")
    print("| preset | env steps per CPU-s | engine moves per CPU-s | env / engine |")
    print("| --- | ---: | ---: | ---: |")
    for preset in args.presets.split(","):
        rate, _steps = env_steps(preset, args.games)
        base = engine_moves(preset, args.games)
        print(f"| {preset} | {rate:,.0f} | {base:,.0f} | {rate / base:.0%} |")


if __name__ == "__main__":
    main()
