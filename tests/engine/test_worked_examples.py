"""The worked examples of docs/rules.md §13, one test each, played on a real Game where they
describe play, so they check what a bot or spectator would actually see."""

from __future__ import annotations

import pytest

from bots_sdk.rules import IllegalMove, beats, classify
from tests.engine.conftest import C, assert_points, combo_set, make_game, owed, run


def test_example_01_three_of_spades_leads_the_starting_game() -> None:
    # 3S sits with seat 2, so the test also checks that the holder (not seat 0) leads.
    g = make_game(
        "4C 6C 8C 10C",
        "7D 8D 9D JD",
        "3S 3D 4H 5C 4S 9S",
        "QH KH AH 6H",
        starting=True,
    )
    assert g.to_move == 2
    assert not g.can_pass
    legal = combo_set(g.legal_plays())
    for opening in ("3S", "3S 3D", "3S 4H 5C"):
        assert frozenset(C(opening)) in legal
    assert frozenset(C("4S")) not in legal
    assert all(C("3S")[0] in play for play in legal)
    with pytest.raises(ValueError) as exc:
        g.play(C("4S"))
    assert str(exc.value)
    assert g.to_move == 2 and len(g.hands[2]) == 6
    g.play(C("3S 4H 5C"))
    assert g.to_move == 3


def test_example_02_single_two_of_diamonds_on_the_table() -> None:
    table = C("2D")
    assert beats(C("2H"), table)
    assert beats(C("5S 5C 6D 6H 7S 7C"), table)
    assert beats(C("9S 9C 9D 9H"), table)
    assert not beats(C("AH"), table)
    g = make_game("2D 3C", "2H AH 5S 5C 6D 6H 7S 7C 9S 9C 9D 9H", "3D 4D", "3H 4H")
    run(g, "A 2D")
    legal = combo_set(g.legal_plays())
    assert frozenset(C("2H")) in legal
    assert frozenset(C("5S 5C 6D 6H 7S 7C")) in legal
    assert frozenset(C("9S 9C 9D 9H")) in legal
    assert frozenset(C("AH")) not in legal


def test_example_03_pair_of_black_twos_on_the_table() -> None:
    table = C("2S 2C")
    assert beats(C("2D 2H"), table)
    assert beats(C("4S 4C 4D 4H"), table)
    assert not beats(C("5S 5C 6D 6H 7S 7C"), table)
    assert beats(C("3S 3C 4D 4H 5S 5C 6D 6H"), table)
    g = make_game("2S 2C 9H", "2D 2H 3S 3C 4D 4H 5S 5C 6D 6H", "7S 7C", "8S 8C")
    run(g, "A 2S 2C")
    legal = combo_set(g.legal_plays())
    assert frozenset(C("2D 2H")) in legal
    assert frozenset(C("3S 3C 4D 4H 5S 5C 6D 6H")) in legal
    assert frozenset(C("4D 4H 5S 5C 6D 6H")) not in legal
    with pytest.raises(ValueError):
        g.play(C("4D 4H 5S 5C 6D 6H"))


def test_example_04_three_pair_sequence_on_the_table() -> None:
    table = C("JS JC QS QC KS KD")
    assert classify(table).kind == "pair_sequence"
    assert not beats(C("3S 3C 4S 4C 5S 5D"), table)
    assert beats(C("JD JH QD QH KC KH"), table)
    assert beats(C("7S 7C 7D 7H"), table)


def test_example_05_straights() -> None:
    assert classify(C("QD KD AD")).kind == "straight"
    assert classify(C("KS AS 2S")) is None
    dragon = classify(C("3H 4H 5H 6H 7H 8H 9H 10H JH QH KH AH"))
    assert dragon.kind == "straight" and len(dragon.cards) == 12


def test_example_06_pass_locks_a_player_out_of_the_round() -> None:
    g = make_game("5S 9C 3C", "4S 6C", "7D 8H", "3D 4D")
    run(g, "A 5S; B pass; C 7D; D pass; A 9C")
    # B and D passed: both are skipped, so C moves right after A.
    assert g.to_move == 2
    assert 1 in g.view(2).locked_out and 3 in g.view(2).locked_out
    run(g, "C pass")
    # D is skipped too: the round ends and A leads a fresh one.
    assert g.to_move == 0
    assert not g.can_pass
    assert g.view(0).table is None


def test_example_07_lead_passes_on_when_the_last_play_went_out() -> None:
    g = make_game("3S 8S KD", "4S 9S", "5S 10D QD", "6S 7S JD")
    run(g, "A 3S; B 4S; C 5S; D 6S; A 8S; B 9S")
    assert g.finishing_order[:1] == [1]
    run(g, "C pass; D pass; A pass")
    assert g.to_move == 2  # huong sai: the next seat after B that still holds cards
    assert not g.can_pass
    assert g.view(2).table is None


def test_example_08_chop_chain_on_a_red_two() -> None:
    g = make_game(
        "2H 3S KS",
        "5S 5C 6D 6H 7S 7C 4S",
        "JS JC JD JH 8S 3C",
        "9S 10S QS",
    )
    run(g, "A 2H; B 5S 5C 6D 6H 7S 7C; C JS JC JD JH; D pass; A pass; B pass")
    assert g.to_move == 2  # the last chopper leads the next round
    run(g, "C 3C; D 9S; A KS; B pass; C pass; D pass")
    run(g, "A 3S; B 4S; C 8S")
    assert g.finishing_order == [0, 1, 2, 3]
    paid = owed(g)
    assert paid[(1, 2)] == 4  # B pays C: 2H (2) + three-pair sequence (2)
    assert (0, 1) not in paid and (0, 2) not in paid  # A, chopped first, pays nothing
    # Places: D pays A 2, C pays B 1.
    assert_points(g, [2, -4 + 1, 4 - 1, -2])


def test_example_09_four_player_settlement_with_stuck_cards() -> None:
    g = make_game("3S 9S", "4S 10S", "5S JS", "6S 2H 7S 7C 7D 7H")
    run(g, "A 3S; B 4S; C 5S; D 6S; A 9S; B 10S; C JS")
    assert g.finishing_order == [0, 1, 2, 3]
    paid = owed(g)
    assert paid[(3, 0)] == 2
    assert paid[(2, 1)] == 1
    assert paid[(3, 2)] == 5
    assert_points(g, [2, 1, 4, -7])


def test_example_10_a_player_who_never_played_is_frozen() -> None:
    g = make_game("3S 7S KS", "4S 9H 10H", "6S 8C JC", "2H 5C")
    run(g, "A 3S; B 4S; C 6S; D pass; A 7S; B pass; C pass; A KS")
    assert g.frozen == [3]
    # The two others play on for 2nd and 3rd; D takes no more turns.
    run(g, "B pass; C pass; B 9H; C JC; B pass; C 8C")
    assert g.finishing_order == [0, 2, 1, 3]
    paid = owed(g)
    assert paid[(3, 0)] == 4 + 2  # frozen (4) + stuck red 2 (2), to the winner
    assert paid[(1, 2)] == 1
    assert_points(g, [6, -1, 1, -6])


def test_example_11_chop_chain_on_a_black_two() -> None:
    g = make_game(
        "2S 3S KS",
        "5S 5C 6D 6H 7S 7C 4S",
        "8S 8C 9S 9C 10S 10C 3C JS",
        "9D 10D QS",
    )
    run(g, "A 2S; B 5S 5C 6D 6H 7S 7C; C 8S 8C 9S 9C 10S 10C; D pass; A pass; B pass")
    assert g.to_move == 2
    run(g, "C 3C; D 9D; A KS; B pass; C pass; D pass")
    run(g, "A 3S; B 4S; C JS")
    assert g.finishing_order == [0, 1, 2, 3]
    assert owed(g)[(1, 2)] == 3  # 2S (1) + three-pair sequence (2)
    assert_points(g, [2, -3 + 1, 3 - 1, -2])


def test_illegal_move_is_an_illegal_move_error() -> None:
    g = make_game("3S 4S", "5S 6S")
    with pytest.raises(IllegalMove):
        g.play(C("3S 4S"))
