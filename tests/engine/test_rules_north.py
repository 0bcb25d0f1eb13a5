"""docs/rules.md §9 `north`: like beats like in play, no pair sequences, places when going out on
a 2 (cấm về heo), freezing and stuck cards, and đền cả làng (the beat tables themselves are
in test_rules_beats.py)."""

from __future__ import annotations

import pytest

from tests.engine.conftest import C, assert_points, combo_set, make_game, owed, run


def test_a_single_is_followed_only_in_its_suit() -> None:
    g = make_game("5S 9C", "7S 7H 2H 8C", "6D 9D", preset="north")
    run(g, "A 5S")
    assert combo_set(g.legal_plays()) == {frozenset(C("7S"))}
    with pytest.raises(ValueError):
        g.play(C("2H"))


def test_a_four_pair_sequence_is_not_a_combination() -> None:
    g = make_game("3S 3C 4S 4C 5S 5C 6S 6C 9H", "2S 8H", preset="north")
    assert frozenset(C("3S 3C 4S 4C 5S 5C 6S 6C")) not in combo_set(g.legal_plays())
    with pytest.raises(ValueError):
        g.play(C("3S 3C 4S 4C 5S 5C"))


def test_going_out_on_a_two_takes_the_lowest_place() -> None:
    g = make_game("3S 2S", "4S 6S", "5S 7S", preset="north")
    run(g, "A 3S; B 4S; C 5S; A 2S")
    assert not g.is_over
    run(g, "B pass; C pass; B 6S")
    assert g.is_over
    assert g.finishing_order == [1, 2, 0]
    assert_points(g, [-2, 2, 0])


def test_the_last_holder_can_take_first_place() -> None:
    g = make_game("3S 2S", "4S 2C", "5S 9D", preset="north")
    run(g, "A 3S; B 4S; C 5S; A 2S; B pass; C pass; B 2C")
    assert g.is_over
    assert g.finishing_order == [2, 1, 0]
    assert_points(g, [-2, 0, 2])


def test_freezing_is_judged_at_the_first_out_without_a_two() -> None:
    g = make_game("3S 2S", "4S 6S 8S", "5H 7S 9S", preset="north")
    run(g, "A 3S; B 4S; C pass; A 2S")
    assert g.frozen == []  # an out on a 2 does not judge freezing
    run(g, "B pass")  # C passed this round and is skipped; the lead goes to B
    run(g, "B 6S; C 7S; B 8S")
    assert g.frozen == []  # C played before B went out
    assert g.finishing_order == [1, 2, 0]


def test_frozen_player_takes_the_lowest_free_place_above_outs_on_a_two() -> None:
    g = make_game("3S 2S", "4S 6S", "5H 7H", preset="north")
    run(g, "A 3S; B 4S; C pass; A 2S; B pass; B 6S")
    assert g.is_over
    assert g.frozen == [2]
    assert g.finishing_order == [1, 2, 0]
    # A (last, on a 2) pays B 2; C's place payment is replaced by the frozen amount
    assert_points(g, [-2, 6, -4])


def test_frozen_players_pay_no_stuck_cards() -> None:
    g = make_game("3S 4S", "2H 9D", preset="north")
    run(g, "A 3S; B pass; A 4S")
    assert g.frozen == [1]
    assert_points(g, [4, -4])


def test_stuck_twos_count_but_pair_sequences_do_not() -> None:
    g = make_game("3S 5S", "4S 2H 7C 7D 8C 8D 9C 9D 10C 10D", preset="north")
    run(g, "A 3S; B 4S; A 5S")
    assert_points(g, [4, -4])


def test_den_ca_lang_passer_pays_every_other_player() -> None:
    g = make_game("3S 9S 5H", "4S KS 7H", "6S 10S", preset="north")
    run(g, "A 3S; B 4S; C 6S; A 9S; B pass; C 10S")
    assert g.finishing_order == [2]
    run(g, "A pass; A 5H")
    assert g.finishing_order == [2, 0, 1]
    # places: B pays C 2; B passed holding KS and C went out next: B pays A and C 2 each
    assert_points(g, [2, -6, 4])


def test_no_den_ca_lang_in_south() -> None:
    g = make_game("3S 9S 5H", "4S KS 7H", "6S 10S", preset="south")
    run(g, "A 3S; B 4S; C 6S; A 9S; B pass; C 10S; A pass; A 5H")
    assert_points(g, [0, -2, 2])


def test_no_den_ca_lang_when_the_passer_had_no_legal_play() -> None:
    g = make_game("3S 9S 5H", "4S 8S 7H", "6S 10S", preset="north")
    run(g, "A 3S; B 4S; C 6S; A 9S; B pass; C 10S; A pass; A 5H")
    assert_points(g, [0, -2, 2])


def test_den_ca_lang_when_the_next_player_goes_out_on_a_two() -> None:
    g = make_game("3S 9S 5H", "4S KS 7H", "6S 2S", preset="north")
    run(g, "A 3S; B 4S; C 6S; A 9S; B pass; C 2S")
    assert not g.is_over  # C went out on a 2: it takes the last place
    run(g, "A pass; A 5H")
    assert g.is_over
    assert g.finishing_order == [0, 1, 2]
    # places: C (last, out on a 2) pays A (1st) 2; B passed holding KS: B pays A and C 2
    assert_points(g, [4, -4, 0])


def test_den_ca_lang_two_players_on_top_of_freezing() -> None:
    g = make_game("3S 5S", "4S 9H", preset="north")
    run(g, "A 3S; B pass; A 5S")
    assert g.frozen == [1]
    # frozen 4 (no stuck cards in north) + đền cả làng 2: B passed holding 4S
    assert_points(g, [6, -6])


def test_no_den_ca_lang_when_someone_else_moves_first() -> None:
    # C holds nothing that beats 9S, so only B's pass can matter
    g = make_game("3S 9S 5H", "4S KS 7H", "6S 8S 3H", preset="north")
    run(g, "A 3S; B 4S; C 6S; A 9S; B pass; C pass; A 5H")
    assert g.finishing_order == [0]
    run(g, "B 7H; C pass; B KS")
    assert g.finishing_order == [0, 1, 2]
    # B passed holding KS, but C moved next and did not go out: no đền cả làng
    assert_points(g, [2, 0, -2])


# --- thua nhì (docs/rules.md §9 north): only where §6.2 creates it -----------


def test_issue_example_one_frozen_never_makes_the_second_pay_thua_nhi() -> None:
    # C goes out on 2S (last place), D goes out 1st with KH, B never played (frozen, 3rd):
    # A is left holding cards in 2nd place and pays only the chop of its 2D.
    g = make_game("4S 6C 2D 2H", "9S 10D KD 2C", "7S 7C 7D 7H 2S", "KH", preset="north")
    run(g, "A 2D; B pass; C 7S 7C 7D 7H; D pass; A pass; C 2S; D pass; A pass; B pass; D KH")
    assert g.is_over
    assert g.frozen == [1]
    assert g.finishing_order == [3, 0, 1, 2]
    assert "thua_nhi" not in {p["reason"] for p in g.payments}
    assert_points(g, [-2, -4, 0, 6])


def test_one_frozen_and_the_holder_left_in_second_after_an_out_on_a_two() -> None:
    # A goes out 1st, D never played (frozen, last); B goes out on 2S and takes 3rd, so C,
    # left holding cards, is 2nd: B pays C the 3rd->2nd point and nobody pays thua nhì.
    g = make_game("3S KS", "5S 2S", "6S 9H 10H", "7C 8C", preset="north")
    run(g, "A 3S; B 5S; C 6S; D pass; A KS")
    assert g.frozen == [3]
    run(g, "B 2S")
    assert g.is_over
    assert g.finishing_order == [0, 2, 1, 3]
    assert "thua_nhi" not in {p["reason"] for p in g.payments}
    assert_points(g, [4, -1, 1, -4])


def test_two_frozen_and_the_remaining_player_holding_cards_pays_thua_nhi() -> None:
    g = make_game("3S KS", "5S 9H", "7C 8C", "7D 8D", preset="north")
    run(g, "A 3S; B 5S; C pass; D pass; A KS")
    assert g.is_over
    assert g.frozen == [2, 3]
    assert g.finishing_order == [0, 1, 2, 3]
    assert owed(g)[(1, 0)] == 1
    assert_points(g, [9, -1, -4, -4])


def test_two_frozen_after_the_remaining_player_went_out_on_a_two_no_thua_nhi() -> None:
    # B went out on 2S (last place) before A chopped it with four 3s and went out 1st: C and
    # D never played (frozen, 2nd and 3rd) and nobody is left holding cards.
    g = make_game("3S 3C 3D 3H", "4S 2S", "7C 8C", "7D 8D", preset="north", leader=1)
    run(g, "B 4S; C pass; D pass; A pass; B 2S; C pass; D pass; A 3S 3C 3D 3H")
    assert g.is_over
    assert g.frozen == [2, 3]
    assert g.finishing_order == [0, 2, 3, 1]
    assert "thua_nhi" not in {p["reason"] for p in g.payments}
    # B (last, out on a 2) pays A 2; C and D pay the frozen 4 each; the chop of B's last
    # play is not paid (the went-out exception)
    assert_points(g, [10, -2, -4, -4])


def test_frozen_players_pay_no_stuck_cards_with_four_players() -> None:
    # C (frozen) holds 2H and four 4s, D (frozen) 2C; B, 2nd, holds 2D: only the frozen
    # amount and thua nhì are paid, never a stuck card.
    g = make_game("3S KS", "5S 10H 2D", "7C 8C 2H 4S 4C 4D 4H", "7D 8D 2C", preset="north")
    run(g, "A 3S; B 5S; C pass; D pass; A KS")
    assert g.frozen == [2, 3]
    assert {p["reason"] for p in g.payments} == {"frozen", "thua_nhi"}
    assert_points(g, [9, -1, -4, -4])
