"""docs/rules.md §9 `south_extended`: free four-pair chops offered out of turn (the extra instant
wins are in test_rules_instant_wins.py)."""

from __future__ import annotations

import pytest

from bots_sdk.rules import classify
from tests.engine.conftest import C, assert_points, make_game, owed, run

HANDS = ("3S 2H 5H", "4S 9D", "6S 6C 7S 7C 8S 8C 9S 9C 3C", "5S KD")


def test_free_chop_is_offered_to_a_locked_out_player() -> None:
    g = make_game(*HANDS, preset="south_extended")
    run(g, "A 3S; B 4S; C pass; D 5S; A 2H")
    # B holds no four-pair sequence and is skipped; C is offered despite its pass.
    assert g.to_move == 2
    assert g.offer == "out_of_turn_chop"  # the offer names documented in docs/rules.md
    plays = list(g.legal_plays())
    assert plays and all(classify(p).kind == "pair_sequence" and len(p) >= 8 for p in plays)
    with pytest.raises(ValueError):
        g.play(C("3C"))
    run(g, "C 6S 6C 7S 7C 8S 8C 9S 9C")
    # play continues with the player after the chopper
    assert g.to_move == 3 and g.offer is None
    run(g, "D pass; A pass; B pass")
    # C's pass lock was not lifted, but C made the last play: C leads the next round.
    assert g.to_move == 2 and not g.can_pass
    run(g, "C 3C; D KD")
    # C went out 1st with 3C and D 2nd with KD
    assert g.finishing_order == [2, 3]


def test_south_does_not_offer_the_free_chop() -> None:
    g = make_game(*HANDS, preset="south")
    run(g, "A 3S; B 4S; C pass; D 5S; A 2H")
    assert g.to_move == 1  # B's normal turn; C stays locked out
    assert not g.offer


def test_declining_the_offer_is_not_a_pass() -> None:
    g = make_game(*HANDS, preset="south_extended")
    run(g, "A 2H")
    assert g.to_move == 2 and g.offer
    run(g, "C pass")  # decline
    assert g.to_move == 1 and not g.offer
    run(g, "B pass")
    # C's normal turn comes: it was not locked by declining and may chop now
    assert g.to_move == 2 and g.can_pass
    assert frozenset(C("6S 6C 7S 7C 8S 8C 9S 9C")) in {frozenset(p) for p in g.legal_plays()}
    run(g, "C 6S 6C 7S 7C 8S 8C 9S 9C; D pass; A pass")
    assert g.to_move == 2 and not g.can_pass  # B is locked out: the round ends, C leads


def test_free_chop_of_a_last_play_keeps_the_went_out_exception() -> None:
    g = make_game(
        "3S 2H",
        "4S 9D JD",
        "6S 6C 7S 7C 8S 8C 9S 9C 10C 3C",
        "5S KD QD",
        preset="south_extended",
    )
    run(g, "A 3S; B 4S; C 10C; D KD; A pass; B pass; C pass")
    run(g, "D 5S; A 2H")
    assert g.finishing_order == [0]
    # offered before B's normal turn
    assert g.to_move == 2 and g.offer
    run(g, "C 6S 6C 7S 7C 8S 8C 9S 9C; D pass; B pass")
    run(g, "C 3C; D QD")
    assert g.is_over
    assert g.finishing_order == [0, 2, 3, 1]
    assert (0, 2) not in owed(g)
    assert_points(g, [2, -2, 1, -1])


def test_free_four_pair_chop_is_an_option_by_the_name_rules_md_gives_it() -> None:
    # docs/rules.md §5 names the option `free_four_pair_chop` (off in `south`).
    g = make_game(*HANDS, preset="south", options={"free_four_pair_chop": True})
    run(g, "A 3S; B 4S; C pass; D 5S; A 2H")
    assert g.to_move == 2 and g.offer


def test_free_chop_of_a_three_pair_sequence_comes_before_the_next_players_turn() -> None:
    g = make_game(
        "3S 3C 4S 4C 5S 5C 9H",
        "10D JD",
        "6S 6C 7S 7C 8S 8C 9S 9C 3D",
        "10H QH",
        preset="south_extended",
    )
    run(g, "A 3S 3C 4S 4C 5S 5C")
    assert g.to_move == 2 and g.offer  # C, not B
    run(g, "C 6S 6C 7S 7C 8S 8C 9S 9C")
    assert g.to_move == 3
