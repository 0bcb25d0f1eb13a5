"""Luck-adjusted scoring: each seat's expected points on a deal, from a house-bot baseline.

The idea of DIVAT/AIVAT (poker research): a player's result on a deal minus what a fixed
reference strategy scores with the same cards is the player's skill plus noise, with much
of the luck of the deal taken out. The baseline here is a simulation: the deal played out
by house bots (by default one game of four `greedy` bots and one of four `heuristic`
bots, both deterministic, averaged). It depends only on the deal (seed, players, rules)
and the seat, never on who played it, so `points - baseline` has the same expectation
differences between entrants as raw points: comparisons stay unbiased, only their spread
shrinks (measured in benchmarks/deal_formats_bench.py).

Cost: about 1 ms (greedy) + 5 ms (heuristic) per deal on the development machine, too much
for the recording path (which records a game in a fraction of that), so the platform
computes baselines in a separate low-priority task once a deal is revealed; a baseline
also tells something about the hands, so it must never be published before its deal is.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from bots_sdk.bot import Bot, normalize_move, safe_move
from bots_sdk.examples import EXAMPLES
from bots_sdk.liveview import LiveView, seal

BASELINE_VERSION = "house-sim-v1: mean of greedy x4 and heuristic x4"
DEFAULT_BASELINE_BOTS: tuple[str, ...] = ("greedy", "heuristic")


@lru_cache(maxsize=8)
def house_bot_class(name: str) -> type[Bot]:
    """A house bot by its registry name (bots_sdk.examples.EXAMPLES)."""
    if name not in EXAMPLES:
        raise ValueError(f"unknown baseline bot {name!r}; choose from {', '.join(sorted(EXAMPLES))}")
    return EXAMPLES[name]


def play_deal(
    seed: str,
    bots: Sequence[Bot],
    *,
    preset: str = "south",
    options: dict[str, Any] | None = None,
    starting: bool = True,
) -> list[int]:
    """Play one game of the deal `seed` with `bots` (one per seat); the points per seat.

    A bot that raises or answers an illegal move is replaced for that move by the safe
    fallback (as the referee does), so a baseline never fails.
    """
    from bots_sdk.rules import Game, IllegalMove

    game = Game.from_seed(seed, len(bots), preset=preset, starting=starting, options=options or None)
    while not game.is_over:
        view = LiveView(game, "baseline")
        try:
            raw = bots[view.seat].play(view)
            cards = None if raw is None else normalize_move(raw)
        except (ValueError, TypeError):
            cards = safe_move(view.can_pass, view.legal_plays())
        seal(view, held=1)  # a bot that kept the view gets its snapshot before we move on
        try:
            if cards is None:
                game.pass_turn()
            else:
                game.play(list(cards))
        except IllegalMove:
            fallback = safe_move(view.can_pass, view.legal_plays())
            if fallback is None:
                game.pass_turn()
            else:
                game.play(list(fallback))
    return list(game.points)


def deal_baseline(
    seed: str,
    players: int,
    *,
    preset: str = "south",
    options: dict[str, Any] | None = None,
    bots: Sequence[str] = DEFAULT_BASELINE_BOTS,
) -> list[float]:
    """Expected points per seat on the deal: the mean over one game per house bot kind
    (all seats that kind). Zero-sum like the points."""
    if not bots:
        raise ValueError("a baseline needs at least one house bot kind")
    total = [0.0] * players
    for name in bots:
        cls = house_bot_class(name)
        points = play_deal(seed, [cls() for _ in range(players)], preset=preset, options=options)
        for s, p in enumerate(points):
            total[s] += p
    return [t / len(bots) for t in total]


def luck_adjusted(points: Sequence[int], baseline: Sequence[float]) -> list[float]:
    """Points minus the baseline, seat by seat."""
    if len(points) != len(baseline):
        raise ValueError(f"{len(points)} points for {len(baseline)} baseline seats")
    return [p - b for p, b in zip(points, baseline, strict=True)]
