"""docs/rules.md §9 `hue`: 3♣ opens, stealing the lead, split bombs, the blind three, stuck 3♠
(the chop table and the went-out exception are in test_rules_beats / test_rules_chops)."""

from __future__ import annotations

import pytest

from tests.engine.conftest import C, assert_points, make_game, owed, run


def test_starting_game_is_opened_by_3c() -> None:
    g = make_game("3S 9D", "5H 3C 4C", "6S 7D", preset="hue", starting=True)
    assert g.to_move == 1
    plays = list(g.legal_plays())
    assert plays and all(C("3C")[0] in p for p in plays)
    with pytest.raises(ValueError):
        g.play(C("4C"))


def test_weakest_dealt_card_opens_when_3c_is_undealt() -> None:
    g = make_game("4S 9D", "5H 3S", "6S 7D", preset="hue", starting=True)
    assert g.to_move == 1
    assert all(C("3S")[0] in p for p in g.legal_plays())


def test_stealing_the_lead_with_answers() -> None:
    g = make_game(
        "JS JC QS QC KS KC 3D",
        "4S 4C 5S 5C 6S 6C 3H",
        "7D 8D",
        "8S 8C 9S 9C 10S 10C 3C",
        preset="hue",
    )
    # The leader A is not offered first; B (after the leader) is.
    assert g.to_move == 1 and g.offer == "steal_lead"
    run(g, "B 4S 4C 5S 5C 6S 6C")
    # C holds no three-pair sequence and is skipped; D answers higher.
    assert g.to_move == 3 and g.offer
    run(g, "D 8S 8C 9S 9C 10S 10C")
    # From D round: A (the leader) may answer too.
    assert g.to_move == 0 and g.offer
    run(g, "A JS JC QS QC KS KC")
    # Nobody can answer A: A, the last stealer, leads round 1 freely.
    assert g.to_move == 0 and not g.offer
    assert not g.can_pass
    assert g.view(0).table is None
    run(g, "A 3D; B 3H")


def test_declined_steal_leaves_the_leader_to_lead() -> None:
    g = make_game("3D 9H", "4S 4C 5S 5C 6S 6C KH", preset="hue")
    assert g.to_move == 1 and g.offer
    run(g, "B pass")
    assert g.to_move == 0 and not g.offer and not g.can_pass


def test_no_steal_in_south() -> None:
    g = make_game("3D 9H", "4S 4C 5S 5C 6S 6C KH", preset="south")
    assert g.to_move == 0 and not g.offer


def test_no_steal_in_a_starting_game() -> None:
    g = make_game("3C 9H", "4S 4C 5S 5C 6S 6C KH", preset="hue", starting=True)
    assert g.to_move == 0 and not g.offer


def test_a_steal_counts_as_playing_and_pays_nothing() -> None:
    g = make_game("9H", "4S 4C 5S 5C 6S 6C 3H KH", preset="hue")
    run(g, "B 4S 4C 5S 5C 6S 6C")
    assert g.to_move == 1 and not g.offer
    run(g, "B 3H; A 9H")
    assert g.is_over
    assert g.frozen == []  # B stole: it has played
    assert_points(g, [2, -2])


def test_split_four_threes_3s_alone_is_a_four_of_a_kind() -> None:
    g = make_game("3S 3C 3D 3H 8S", "4C 4D 4H 2H 9S", preset="hue", starting=True)
    run(g, "A 3C 3D 3H; B 4C 4D 4H; A pass; B 2H")
    assert frozenset(C("3S")) in {frozenset(p) for p in g.legal_plays()}
    run(g, "A 3S")  # chops the 2H as four 3s
    run(g, "B pass; A 8S")
    assert g.finishing_order == [0, 1]
    assert owed(g)[(1, 0)] == 2 + 2  # chop of a red 2 + places
    assert_points(g, [4, -4])


def test_split_four_threes_stuck_3s_is_paid_as_four_of_a_kind() -> None:
    g = make_game("3C 3D 3H 3S", "4C 5C", preset="hue", starting=True)
    run(g, "A 3C; B 4C; A pass; B 5C")
    assert g.finishing_order == [1, 0]
    assert_points(g, [-(2 + 3), 2 + 3])


def test_split_four_threes_does_not_apply_when_3s_was_played_first() -> None:
    g = make_game("3S 3C 3D 3H 8S", "4C 4D 4H 2H 9S", preset="hue", starting=True)
    run(g, "A 3S 3C 3D; B 4C 4D 4H; A pass; B 2H")
    # the lone 3H is just a single: it cannot chop
    assert frozenset(C("3H")) not in {frozenset(p) for p in g.legal_plays()}


def test_split_pair_sequence_two_sixes_are_the_four_pair_sequence() -> None:
    g = make_game(
        "3C 3D 4S 4C 5S 5C 6S 6C 9H",
        "7S 7C 8S 8C 9S 9C 2H 2D",
        preset="hue",
        starting=True,
    )
    run(g, "A 3C 3D 4S 4C 5S 5C; B 7S 7C 8S 8C 9S 9C; A pass; B 2H")
    assert frozenset(C("6S 6C")) in {frozenset(p) for p in g.legal_plays()}
    run(g, "A 6S 6C; B pass; A 9H")
    assert g.finishing_order == [0, 1]
    # chop of the 2H (2) + places (2) + B's stuck 2D (2)
    assert_points(g, [6, -6])


def test_blind_three_first_ends_the_game() -> None:
    g = make_game("3S 8S KS", "4S 9H 2H", "5S 10H 2D", preset="hue")
    run(g, "A 8S; B 9H; C 10H; A KS; B pass; C pass; A 3S")
    assert g.is_over
    assert g.finishing_order == [0, 1, 2]
    # exactly 2 each, no stuck penalties for the 2s
    assert_points(g, [4, -2, -2])


def test_blind_three_in_south_is_an_ordinary_out() -> None:
    g = make_game("3S 8S KS", "4S 9H 2H", "5S 10H 2D", preset="south")
    run(g, "A 8S; B 9H; C 10H; A KS; B pass; C pass; A 3S")
    assert not g.is_over
    assert g.to_move == 1


def test_blind_three_second_ends_the_game() -> None:
    g = make_game("4S KS", "5S AS 3S", "6S 9C 2H", "7S 8D QH", preset="hue")
    run(g, "A 4S; B 5S; C 6S; D 7S; A KS; B AS; C pass; D pass")
    assert g.to_move == 1
    run(g, "B 3S")
    assert g.is_over
    assert g.finishing_order[:2] == [0, 1]
    assert sorted(g.finishing_order[2:]) == [2, 3]
    # each player still holding cards pays the 1st 2 points, and nothing else
    assert_points(g, [4, 0, -2, -2])


def test_stuck_3s_is_worth_two() -> None:
    g = make_game("4S 6S", "5S 3S", preset="hue")
    run(g, "A 4S; B 5S; A 6S")
    assert_points(g, [4, -4])
    g = make_game("4S 6S", "5S 3S", preset="south")
    run(g, "A 4S; B 5S; A 6S")
    assert_points(g, [2, -2])


def test_frozen_player_pays_stuck_3s_too() -> None:
    g = make_game("4S", "3S 9H", preset="hue")
    run(g, "A 4S")
    assert g.frozen == [1]
    assert_points(g, [6, -6])


def test_an_empowered_3s_going_out_first_is_a_blind_three() -> None:
    g = make_game("3C 3D 3H 3S KS", "4C 4D 4H 5S", "6C 6D 6H 7S 8D", preset="hue", starting=True)
    run(g, "A 3C 3D 3H; B 4C 4D 4H; C 6C 6D 6H; A pass; B pass")
    run(g, "C 7S; A KS; B pass; C pass; A 3S")
    assert g.is_over
    assert g.finishing_order[0] == 0
    assert_points(g, [4, -2, -2])


def test_blind_three_with_two_frozen_players_den_bai_pays_it_all() -> None:
    g = make_game("3S KS", "2H 5C", "4D 6D", preset="hue")
    run(g, "A KS; B pass; C pass; A 3S")
    assert g.is_over
    assert g.frozen == [1, 2]
    # frozen amounts: B 4 + 2 (red 2), C 4; B passed holding 2H: B pays the table
    assert_points(g, [10, -10, 0])
    assert g.next_leader == 1


def test_a_steal_that_empties_a_hand_takes_first_place() -> None:
    g = make_game(
        "9S 10S",
        "4S 4C 5S 5C 6S 6C KH",
        "7S 7C 8S 8C 9C 9D",
        "3D JD",
        preset="hue",
    )
    run(g, "B 4S 4C 5S 5C 6S 6C")
    assert g.to_move == 2 and g.offer
    run(g, "C 7S 7C 8S 8C 9C 9D")
    # C is out 1st; A and D never played: two of four frozen, the game ends at once and
    # B (who stole, so it played) is 2nd and pays C the thua nhi point.
    assert g.is_over
    assert g.finishing_order[:2] == [2, 1]
    assert sorted(g.frozen) == [0, 3]
    assert_points(g, [-4, -1, 9, -4])


def test_a_decliner_may_answer_a_later_steal() -> None:
    g = make_game(
        "3D 4D",
        "9S 9C 10S 10C JS JC KH",
        "4S 4C 5S 5C 6S 6C QH",
        "8H 9H",
        preset="hue",
    )
    assert g.to_move == 1 and g.offer
    run(g, "B pass")  # B declines first
    assert g.to_move == 2 and g.offer
    run(g, "C 4S 4C 5S 5C 6S 6C")
    # From C: D holds nothing, A holds nothing, B (an earlier decliner) may answer higher
    assert g.to_move == 1 and g.offer
    run(g, "B 9S 9C 10S 10C JS JC")
    # nobody answers B: B leads round 1
    assert g.to_move == 1 and not g.offer and not g.can_pass


def test_blind_three_second_after_a_frozen_player() -> None:
    g = make_game("4S KS", "5S AS 3S", "6S 9C 2H", "7D 8D", preset="hue")
    run(g, "A 4S; B 5S; C 6S; D pass; A KS")
    assert g.frozen == [3]
    run(g, "B AS; C pass; B 3S")
    assert g.is_over
    # C, still holding cards, pays A 2 (no stuck 2H); D paid its frozen 4; B gets nothing
    assert_points(g, [6, 0, -2, -4])


@pytest.mark.parametrize(
    ("stuck", "value"),
    [
        ("3S 3C 3D 4S 4C 5S 5C", 2 + 2),  # 3C3D-4-5 sequence, and the 3S on its own
        ("3S 3C 3D 3H", 3),  # four 3s (3) beat the 3S alone (2)
        ("3S 2H", 2 + 2),
    ],
)
def test_stuck_3s_is_counted_once_in_the_best_decomposition(stuck: str, value: int) -> None:
    g = make_game("6H 8H", "7H " + stuck, preset="hue")
    if g.offer:  # a three-pair sequence in B's hand: decline to steal the lead
        run(g, "B pass")
    run(g, "A 6H; B 7H; A 8H")
    assert_points(g, [2 + value, -2 - value])
