"""The memorising bot: what it learns where deals repeat, and that it learns nothing where
they do not. Here its detector is checked in the local arena (trusted seat rotation, where
it must find the leak); tests/tournaments/test_fair_formats.py runs it through whole
platform tournaments."""

from __future__ import annotations

from bots_sdk.arena import ArenaConfig, Lineup, run_arena
from bots_sdk.rules.deal import deal
from tests.tournaments.memorising_bot import ARENA_MEMORY, Memory

SPEC = "tests.tournaments.memorising_bot:ArenaMemoriser"


def arena_predictions(duplicate: bool) -> tuple[Memory, ArenaConfig]:
    ARENA_MEMORY.games.clear()
    ARENA_MEMORY.predictions.clear()
    ARENA_MEMORY.games_started = 0
    config = ArenaConfig(
        lineup=Lineup.build([SPEC, "greedy", "greedy", "greedy"], 4), games=24, duplicate=duplicate, seed="memo"
    )
    run_arena(config)
    return ARENA_MEMORY, config


def test_with_seat_rotation_the_memoriser_predicts_opponent_cards_and_is_never_wrong() -> None:
    memory, config = arena_predictions(duplicate=True)
    assert memory.games_started == 24
    assert memory.predicted_cards >= 3 * 6 * 13  # 6 sets: rotations 2-4 of each recognised
    seeds = {f"arena-{t.index}": (t.seed, t.rotation) for t in config.tasks()}
    for p in memory.predictions:
        seed, rotation = seeds[p.table_id]
        hands = deal(seed, 4)
        opponents = {c.index for s, hand in enumerate(hands) if s != p.seat for c in hand}
        assert p.cards <= opponents  # every predicted card is really in an opponent's hand


def test_with_fresh_deals_the_memoriser_predicts_nothing() -> None:
    memory, _ = arena_predictions(duplicate=False)
    assert memory.games_started == 24 and memory.predicted_cards == 0
