"""The example bots play only legal moves, in every preset and table size, and the
heuristic bot's hand planning behaves as documented."""

from __future__ import annotations

import pytest

from bots_sdk.arena import ArenaConfig, Lineup, run_arena
from bots_sdk.bot import View
from bots_sdk.cards import parse_cards
from bots_sdk.examples import EXAMPLES
from bots_sdk.examples.heuristic import HeuristicBot, plan_cost, rank_counts
from bots_sdk.rules import PRESETS, Game


@pytest.mark.parametrize("preset", sorted(PRESETS))
@pytest.mark.parametrize("players", [2, 3, 4])
def test_examples_never_make_an_illegal_move(preset, players):
    specs = ["heuristic", "greedy", "random", "heuristic"][:players]
    result = run_arena(
        ArenaConfig(
            lineup=Lineup.build(specs, players), players=players, preset=preset, games=4, seed=preset
        )
    )
    assert result.errors == []
    assert all(sum(r.points) == 0 for r in result.records)


def test_registry_names_match_the_bots():
    assert sorted(EXAMPLES) == ["greedy", "heuristic", "random", "search"]
    assert all(cls.name == name for name, cls in EXAMPLES.items())


def test_plan_prefers_keeping_a_straight_and_pairs_whole():
    whole = plan_cost(tuple(rank_counts(parse_cards("3S 4D 5C 9S 9H"))))
    broken = plan_cost(tuple(rank_counts(parse_cards("3S 4D 9S 9H"))))  # 5C spent
    assert broken > whole  # spending the 5 leaves two lone low cards: a worse hand


def test_heuristic_follows_with_a_whole_group_not_by_breaking_a_pair():
    # Seat 0 leads 6S; seat 1 holds a pair of 7s and a lone 8: it answers with the 8.
    g = Game(
        [parse_cards("6S 3C"), parse_cards("7S 7H 8D 10C JD QS"), parse_cards("4S 5S")],
        starting=False,
        leader=0,
    )
    g.play(parse_cards("6S"))
    move = HeuristicBot().play(View(g.view(1)))
    assert [str(c) for c in move] == ["8D"]


def test_heuristic_keeps_its_bomb_for_a_two():
    # Four 9s in hand: on a single 2 it chops; on a single 5 it does not use the bomb.
    hand = parse_cards("9S 9C 9D 9H 4C 6D JS")
    for table, chops in (("2S", True), ("5S", False)):
        g = Game([parse_cards(f"{table} 3S"), hand, parse_cards("8S 8C")], starting=False, leader=0)
        g.play(parse_cards(table))
        move = HeuristicBot().play(View(g.view(1)))
        bomb_used = move is not None and len(move) == 4
        assert bomb_used is chops, (table, move)
