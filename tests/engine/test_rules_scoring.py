"""docs/rules.md §6.1 (places), §6.2 (frozen, cóng), §6.3 (đền bài) and §6.4 (stuck cards with
the best disjoint decomposition), played out on hand-crafted endgames."""

from __future__ import annotations

import pytest

from tests.engine.conftest import assert_points, make_game, owed, run


def _last_holds(stuck: str, players: int, preset: str = "south"):
    """Everybody plays once, then all but the last seat go out; the last keeps `stuck`."""
    if players == 4:
        g = make_game("3S 5S", "3C 5C", "3D 5D", "4S " + stuck, preset=preset)
        run(g, "A 3S; B 3C; C 3D; D 4S; A 5S; B 5C; C 5D")
    elif players == 3:
        g = make_game("3S 5S", "3C 5C", "4S " + stuck, preset=preset)
        run(g, "A 3S; B 3C; C 4S; A 5S; B 5C")
    else:
        g = make_game("3S 5S", "4S " + stuck, preset=preset)
        run(g, "A 3S; B 4S; A 5S")
    assert g.is_over
    assert g.finishing_order == list(range(players))
    assert g.frozen == []
    return g


STUCK_VALUES = [
    ("KH", 0),
    ("2S", 1),
    ("2C", 1),
    ("2D", 2),
    ("2H", 2),
    ("JS JC QS QC KS KC", 2),
    ("9S 9C 9D 9H", 3),
    ("6S 6C 7S 7C 8S 8C 9S 9C", 4),
    ("10S 10C JS JC QS QC KS KC AS AC", 4),  # a five-pair sequence is one 4+ bomb
    ("2S 2C 2D 2H", 6),  # four 2s counted as 2s (6) beats four of a kind (3)
    ("2H 9S 9C 9D 9H", 5),
    ("10S 10C JS JC QS QC 2D 2H", 6),
    # best disjoint decomposition, not the single biggest bomb first:
    ("JS JC JD JH QS QC KS KC AS AC", 5),  # quad J (3) + QQKKAA (2) beats JJQQKKAA (4)
    ("10S 10C 10D 10H JS JC QS QC KS KC", 5),  # quad 10 + JJQQKK
    ("7S 7C 7D 7H 8S 8C 8D 8H 9S 9C", 6),  # two quads (6) beat 778899 + leftovers
]


@pytest.mark.parametrize(("stuck", "value"), STUCK_VALUES)
def test_stuck_cards_four_players_paid_to_third(stuck: str, value: int) -> None:
    g = _last_holds(stuck, 4)
    paid = owed(g)
    assert paid[(3, 0)] == 2
    assert paid.get((3, 2), 0) == value
    assert paid[(2, 1)] == 1
    assert_points(g, [2, 1, value - 1, -2 - value])


@pytest.mark.parametrize(("stuck", "value"), STUCK_VALUES[:8])
def test_stuck_cards_three_players_paid_to_second(stuck: str, value: int) -> None:
    g = _last_holds(stuck, 3)
    assert_points(g, [2, value, -2 - value])


@pytest.mark.parametrize(("stuck", "value"), STUCK_VALUES[:8])
def test_stuck_cards_two_players_paid_to_the_winner(stuck: str, value: int) -> None:
    g = _last_holds(stuck, 2)
    assert_points(g, [2 + value, -2 - value])


def test_three_players_one_frozen_ends_the_game_and_second_pays_nothing() -> None:
    g = make_game("3S 5S", "4S 9H", "6C 7C")
    run(g, "A 3S; B 4S; C pass; A 5S")
    assert g.is_over
    assert g.frozen == [2]
    assert g.finishing_order == [0, 1, 2]
    assert_points(g, [4, 0, -4])


def test_two_players_the_other_frozen() -> None:
    g = make_game("3S 4S", "9H 9D 2D")
    run(g, "A 3S; B pass; A 4S")
    assert g.frozen == [1]
    assert_points(g, [4 + 2, -4 - 2])  # frozen pays its stuck cards to the winner too
    assert g.next_leader == 0


def test_three_players_both_frozen_each_pays_own_amount() -> None:
    g = make_game("3S 3C 4S", "5D 9H", "6D 7C 2H")
    run(g, "A 3S 3C; B pass; C pass; A 4S")
    assert g.frozen == [1, 2]
    assert g.finishing_order == [0, 1, 2]
    assert_points(g, [10, -4, -6])
    assert g.next_leader == 0


def test_three_players_both_frozen_den_bai() -> None:
    # B passed on 3S holding 2H: B pays the table (its own 4 + 2 and C's 4).
    g = make_game("3S 4S", "2H 6C", "5D 7D")
    run(g, "A 3S; B pass; C pass; A 4S")
    assert g.frozen == [1, 2]
    assert_points(g, [10, -10, 0])
    assert g.next_leader == 1


def test_four_players_two_frozen_second_pays_thua_nhi() -> None:
    # D's four 3s hold no pair that beats 6S 6C, so D passed without a legal play.
    g = make_game("5S 5C 9S 9C KH", "6S 6C 8C", "4D 8H", "3S 3C 3D 3H")
    run(g, "A 5S 5C; B 6S 6C; C pass; D pass; A 9S 9C; B pass; A KH")
    assert g.is_over
    assert g.frozen == [2, 3]
    assert g.finishing_order == [0, 1, 2, 3]
    assert owed(g)[(1, 0)] == 1
    assert_points(g, [12, -1, -4, -7])
    assert g.next_leader == 0


def test_four_players_two_frozen_den_bai_by_a_frozen_player() -> None:
    g = make_game("3S 2S 7H", "9S 6C", "10S 5C", "2H 4D")
    run(g, "A 3S; B 9S; C pass; D pass; A 2S; B pass; A 7H")
    assert g.frozen == [2, 3]
    # C is the first after A (B passed only without a legal play) who passed holding one.
    assert_points(g, [1 + 4 + 4 + 2, 0, -11, 0])
    assert g.next_leader == 2
    assert g.next_starting is False


def test_four_players_two_frozen_den_bai_by_the_runner_up() -> None:
    g = make_game("3S 4S 2S", "9S 6C", "10S 5C", "2H 4D")
    run(g, "A 3S; B pass; C pass; D pass; A 4S; B 9S; C pass; D pass; A 2S")
    assert g.frozen == [2, 3]
    assert_points(g, [11, -11, 0, 0])
    assert g.next_leader == 1


def test_four_players_all_frozen_den_bai() -> None:
    g = make_game("5S 6S", "3C 4C", "3D 4D", "3H 2H")
    run(g, "A 5S; B pass; C pass; D pass; A 6S")
    assert g.frozen == [1, 2, 3]
    assert g.finishing_order == [0, 1, 2, 3]
    assert_points(g, [14, 0, 0, -14])
    assert g.next_leader == 3


def test_four_players_all_frozen_each_pays() -> None:
    g = make_game("9S 10S", "5C 6C", "5D 6D", "3S 3C 3D 3H")
    run(g, "A 9S; B pass; C pass; D pass; A 10S")
    assert g.frozen == [1, 2, 3]
    assert_points(g, [15, -4, -4, -7])
    assert g.next_leader == 0


def test_a_player_left_holding_cards_above_a_frozen_last_pays_no_stuck_cards() -> None:
    # Reading (docs/rules.md §12): §6.4 charges stuck cards to the last player only; here
    # the frozen D is last, and B ends 3rd holding a red 2.
    g = make_game("3S 7S KS", "4S 9H 10H 2D", "6S 8C JC", "2H 5C")
    run(g, "A 3S; B 4S; C 6S; D pass; A 7S; B pass; C pass; A KS")
    run(g, "B pass; C pass; B 9H; C JC; B pass; C 8C")
    assert g.finishing_order == [0, 2, 1, 3]
    assert_points(g, [6, -1, 1, -6])
