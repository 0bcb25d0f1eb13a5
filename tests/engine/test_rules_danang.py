"""docs/rules.md §9 `danang`: out-of-turn chops of a pair of 2s, the four-pair bonus, the
no-freeze rule, stealing the lead, blind three and stuck 3♠ (the chop table is in
test_rules_beats.py)."""

from __future__ import annotations

from bots_sdk.rules import classify
from tests.engine.conftest import assert_points, make_game, owed, run

PS4 = "3C 3D 4C 4D 5C 5D 6C 6D"


def _decline_steal(g, seat: int) -> None:
    """A four-pair sequence holds three-pair sequences: decline the offer to steal."""
    assert g.to_move == seat and g.offer
    g.pass_turn()
    assert g.to_move == 0 and not g.offer


def test_out_of_turn_chop_of_a_pair_of_twos_ignores_the_pass_lock() -> None:
    g = make_game("7S 7C 9H", "9S 9C 2S 2H KH", PS4 + " KD", "10S 10C JD", preset="danang")
    _decline_steal(g, 2)
    run(g, "A 7S 7C; B 9S 9C; C pass; D 10S 10C; A pass; B 2S 2H")
    assert g.to_move == 2 and g.offer == "out_of_turn_chop"
    plays = list(g.legal_plays())
    assert plays and all(classify(p).kind == "pair_sequence" for p in plays)
    run(g, "C " + PS4)
    assert g.to_move == 3 and not g.offer
    run(g, "D pass; B pass")  # A is locked out and skipped
    assert g.to_move == 2 and not g.can_pass
    run(g, "C KD")
    assert g.finishing_order == [2]


def test_out_of_turn_chop_is_offered_before_the_next_players_normal_turn() -> None:
    g = make_game("2S 2H 3S", "4S 9C", PS4 + " KD", "10S JD", preset="danang")
    _decline_steal(g, 2)
    run(g, "A 2S 2H")
    # B holds nothing: skipped; C is offered
    assert g.to_move == 2 and g.offer
    run(g, "C pass")  # declining is not a pass
    assert g.to_move == 1 and not g.offer
    run(g, "B pass")
    assert g.to_move == 2 and g.can_pass  # C's normal turn, still allowed to chop
    run(g, "C " + PS4 + "; D pass; A pass")
    assert g.to_move == 2


def test_no_out_of_turn_chop_after_a_single_two() -> None:
    g = make_game("2H 3S", "4S 9C", PS4 + " KD", "10S JD", preset="danang")
    _decline_steal(g, 2)
    run(g, "A 2H")
    assert g.to_move == 1 and not g.offer


def test_four_pair_bonus_paid_even_when_frozen() -> None:
    g = make_game("3S 4S", "5C 5D 6C 6D 7C 7D 8C 8D 9H", preset="danang")
    _decline_steal(g, 1)
    run(g, "A 3S; B pass; A 4S")
    assert g.frozen == [1]
    # B pays 4 (frozen) + 4 (stuck four-pair sequence); A pays B the bonus 4
    assert_points(g, [4, -4])
    assert owed(g)[(0, 1)] == 4


def test_four_pair_bonus_paid_by_every_other_player_to_the_last() -> None:
    g = make_game("3S 9S", "4S 10S", PS4 + " 5S", preset="danang")
    _decline_steal(g, 2)
    run(g, "A 3S; B 4S; C 5S; A 9S; B 10S")
    assert g.finishing_order == [0, 1, 2]
    assert owed(g)[(0, 2)] == 4 and owed(g)[(1, 2)] == 4
    # places: C pays A 2; C's stuck four-pair sequence (4) goes to B
    assert_points(g, [2 - 4, 4 - 4, -2 - 4 + 8])


def test_two_unplayed_players_means_nobody_is_frozen() -> None:
    g = make_game("3S 5S", "4S 9H KH", "6C 7C", "6D 8D", preset="danang")
    run(g, "A 3S; B 4S; C pass; D pass; A 5S")
    assert g.finishing_order == [0]
    assert g.frozen == []
    assert not g.is_over


def test_a_single_unplayed_player_is_frozen() -> None:
    g = make_game("3S 5S", "4S 9H", "6C 7C", preset="danang")
    run(g, "A 3S; B 4S; C pass; A 5S")
    assert g.is_over and g.frozen == [2]
    assert_points(g, [4, 0, -4])


def test_steal_the_lead_with_a_three_pair_sequence() -> None:
    g = make_game("3D 9H", "4S 4C 5S 5C 6S 6C KH", preset="danang")
    assert g.to_move == 1 and g.offer


def test_blind_three_and_stuck_3s() -> None:
    g = make_game("3S 8S KS", "4S 9H 2H", "5S 10H 2D", preset="danang")
    run(g, "A 8S; B 9H; C 10H; A KS; B pass; C pass; A 3S")
    assert g.is_over
    assert_points(g, [4, -2, -2])
    g = make_game("4S 6S", "5S 3S", preset="danang")
    run(g, "A 4S; B 5S; A 6S")
    assert_points(g, [4, -4])


def test_an_out_of_turn_chop_does_not_lift_the_choppers_pass_lock() -> None:
    g = make_game(
        "7S 7C 9H",
        "9S 9C 2S 2H 3H",
        PS4 + " 8D",
        "AS AC 10D 10H JD JH QD QH KD KH 9D",
        preset="danang",
    )
    # C and D both hold three-pair sequences: both decline to steal the lead
    assert g.to_move == 2 and g.offer
    run(g, "C pass")
    assert g.to_move == 3 and g.offer
    run(g, "D pass")
    assert g.to_move == 0 and not g.offer
    run(g, "A 7S 7C; B 9S 9C; C pass; D AS AC; A pass; B 2S 2H")
    assert g.to_move == 2 and g.offer  # C first, in turn order after B
    run(g, "C " + PS4)
    # D beats C's pair sequence normally; A is locked out; B passes; C is still locked out
    run(g, "D 10D 10H JD JH QD QH KD KH; B pass")
    assert g.to_move == 3 and not g.can_pass
