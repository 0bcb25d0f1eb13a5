"""docs/rules.md §5 and §6.5: chops in play, chop chains, when they are settled, the went-out
exception, and how the presets change what a same-type higher bomb is worth."""

from __future__ import annotations

import pytest

from tests.engine.conftest import C, assert_points, combo_set, make_game, owed, run


def test_single_chop_paid_when_the_round_ends() -> None:
    g = make_game("3S 2H 5S", "4S 9S 9C 9D 9H 6S")
    run(g, "A 3S; B 4S; A 2H; B 9S 9C 9D 9H; A pass; B 6S")
    assert g.finishing_order == [1, 0]
    assert_points(g, [-4, 4])  # chop 2 (red 2) + places 2


def test_chain_settled_when_the_game_ends_first() -> None:
    g = make_game("3S 2H 5S", "4S 9S 9C 9D 9H")
    run(g, "A 3S; B 4S; A 2H; B 9S 9C 9D 9H")
    assert g.is_over
    assert_points(g, [-4, 4])


def test_pair_of_twos_counts_as_the_sum_of_its_cards() -> None:
    g = make_game("2S 2H 3S", "4S 4C 4D 4H 7S")
    run(g, "A 2S 2H; B 4S 4C 4D 4H; A pass; B 7S")
    assert_points(g, [-(1 + 2) - 2, 5])


def test_three_chop_chain_last_chopped_pays_everything() -> None:
    g = make_game(
        "2S 3S",
        "5S 5C 6D 6H 7S 7C 4S",
        "AS AC AD AH 5D",
        "8S 8C 9S 9C 10S 10C JS JC 3C",
    )
    run(g, "A 2S; B 5S 5C 6D 6H 7S 7C; C AS AC AD AH; D 8S 8C 9S 9C 10S 10C JS JC")
    run(g, "A pass; B pass; C pass")
    assert g.to_move == 3
    run(g, "D 3C; A pass; B 4S; C 5D")
    assert g.finishing_order == [3, 1, 2, 0]
    assert owed(g)[(2, 3)] == 1 + 2 + 3
    assert (1, 3) not in owed(g) and (0, 3) in owed(g)
    assert_points(g, [-2, 1, -6 - 1, 6 + 2])


def test_bombs_chop_only_in_turn_and_under_the_pass_lock() -> None:
    g = make_game("2H 3S KH", "4S 9S 9C 9D 9H", "5S KD", "6S QD")
    run(g, "A 3S; B pass; C 5S; D 6S; A 2H")
    # B passed this round: it is locked out and cannot chop the 2 (south).
    assert g.to_move == 2
    run(g, "C pass; D pass")
    assert g.to_move == 0


def test_a_bomb_cannot_be_played_on_a_plain_card() -> None:
    g = make_game("KH 3S", "9S 9C 9D 9H 4S", "5S", "6S")
    run(g, "A KH")
    assert frozenset(C("9S 9C 9D 9H")) not in combo_set(g.legal_plays())
    with pytest.raises(ValueError):
        g.play(C("9S 9C 9D 9H"))


def _went_out_game(preset: str):
    g = make_game("3S 2H", "4S 9S 9C 9D 9H KD", "5S QD", "6S JD", preset=preset)
    run(g, "A 3S; B 4S; C 5S; D 6S; A 2H")
    assert g.finishing_order == [0]
    run(g, "B 9S 9C 9D 9H; C pass; D pass")
    run(g, "B KD; C pass; D pass; C QD")
    assert g.finishing_order == [0, 1, 2, 3]
    return g


def test_went_out_exception_chop_of_a_last_play_is_not_paid() -> None:
    g = _went_out_game("south")
    assert (0, 1) not in owed(g)
    assert_points(g, [2, 1, -1, -2])


def test_hue_pays_the_chop_of_a_last_play() -> None:
    g = _went_out_game("hue")
    assert owed(g)[(0, 1)] == 2
    assert_points(g, [0, 3, -1, -2])


def test_danang_keeps_the_went_out_exception() -> None:
    g = make_game("3S 2H", "4S 9S 9C 9D 9H KD", "5S QD", "6S JD", preset="danang")
    run(g, "A 3S; B 4S; C 5S; D 6S; A 2H; B 9S 9C 9D 9H; C pass; D pass")
    run(g, "B KD; C pass; D pass; C QD")
    assert (0, 1) not in owed(g)


def test_chop_of_a_chopper_who_did_not_go_out_is_paid_even_if_the_first_went_out() -> None:
    g = make_game(
        "3S 2H",
        "4S 9S 9C 9D 9H 10D",
        "5S 3C 3D 4C 4D 5C 5D 6C 6D KD",
        "6S JD QH",
    )
    run(g, "A 3S; B 4S; C 5S; D 6S; A 2H")
    run(g, "B 9S 9C 9D 9H; C 3C 3D 4C 4D 5C 5D 6C 6D; D pass; B pass")
    assert g.to_move == 2
    run(g, "C KD; D pass; B pass")
    # C went out 2nd with KD; the lead passes to D.
    run(g, "D JD; B pass; D QH")
    assert g.finishing_order == [0, 2, 3, 1]
    assert owed(g)[(1, 2)] == 2 + 3  # B pays C: the 2H and B's four of a kind
    assert (0, 1) not in owed(g)


@pytest.mark.parametrize(
    ("preset", "chop_points"),
    [("south", 2), ("hue", 0), ("danang", 0)],
)
def test_higher_three_pair_sequence_is_a_chop_only_in_south(preset, chop_points) -> None:
    g = make_game("3S 3C 4S 4C 5S 5C 9H", "6S 6C 7S 7C 8S 8C KH", preset=preset)
    if preset != "south":
        # hue and danang: B is first offered to steal the lead with its three-pair sequence
        assert g.to_move == 1 and g.offer
        run(g, "B pass")
        assert g.to_move == 0 and not g.can_pass
    run(g, "A 3S 3C 4S 4C 5S 5C; B 6S 6C 7S 7C 8S 8C; A pass; B KH")
    assert_points(g, [-2 - chop_points, 2 + chop_points])


@pytest.mark.parametrize(
    ("preset", "chop_points"),
    [("south", 3), ("hue", 3), ("danang", 0), ("north", 3)],
)
def test_higher_four_of_a_kind(preset, chop_points) -> None:
    g = make_game("7S 7C 7D 7H 9H", "KS KC KD KH 3H", preset=preset)
    run(g, "A 7S 7C 7D 7H; B KS KC KD KH; A pass; B 3H")
    assert_points(g, [-2 - chop_points, 2 + chop_points])
