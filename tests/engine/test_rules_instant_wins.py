"""docs/rules.md §7 (instant wins, tới trắng) and the instant-win differences of the presets."""

from __future__ import annotations

import pytest

from bots_sdk.rules import Game
from tests.engine.conftest import C, assert_points, full_deal, owed

DRAGON = "3S 4C 5D 6H 7S 8C 9D 10H JS QC KD AH 2S"
FIVE_PAIRS = "5S 5C 6S 6C 7D 7H 8S 8D 9C 9H JS QD 2C"
SIX_PAIRS = "3D 3H 5S 5C 7D 7H 9S 9C JD JH KS KC AD"
SIX_PAIRS_WITH_QUAD = "8S 8C 8D 8H 4S 4C 6D 6H 10S 10C QD QH 2S"
FOUR_TWOS = "2S 2C 2D 2H 3C 4D 7S 8C 10D JC QS KH AS"
TWELVE_BLACK = "3S 3C 4S 5S 5C 6S 7S 7C 8S 9S 9C 10S 2D"
TWELVE_RED = "3D 3H 4D 5D 5H 6D 7D 7H 8D 9D 9H 10D 2S"
FOUR_THREES = "3S 3C 3D 3H 5C 6D 8S 9H 10C JD QS KH AC"
THREE_PAIRS_FROM_3S = "3S 3C 4D 4H 5S 5C 7D 8S 9H JC QD KS 2H"
FOUR_TRIPLES = "4S 4C 4D 6S 6C 6D 9S 9D 9H QC QD QH 2C"
TWO_QUADS = "5S 5C 5D 5H 10S 10C 10D 10H 3C 7D 9H JC KD"
FOUR_TRIPLES_WITH_QUAD = "4S 4C 4D 4H 6S 6C 6D 9S 9D 9H QC QD QH"


def _game(hand: str, seat: int = 1, players: int = 4, **kwargs) -> Game:
    hands = full_deal({seat: hand}, players=players)
    return Game(hands, **kwargs)


def _assert_instant_win(g: Game, winner: int) -> None:
    n = g.players
    assert g.is_over
    assert g.instant_winner == winner
    order = [(winner + i) % n for i in range(n)]
    assert g.finishing_order == order
    assert sorted(g.tied) == sorted(order[1:])  # the others share last place
    assert g.to_move is None
    for seat in range(n):
        if seat != winner:
            assert owed(g)[(seat, winner)] == 4
    expected = [-4] * n
    expected[winner] = 4 * (n - 1)
    assert_points(g, expected)
    assert g.next_starting is True


@pytest.mark.parametrize(
    "hand",
    [DRAGON, FIVE_PAIRS, SIX_PAIRS, SIX_PAIRS_WITH_QUAD, FOUR_TWOS, TWELVE_BLACK, TWELVE_RED],
    ids=["dragon", "five_pairs", "six_pairs", "six_pairs_quad", "four_twos", "black", "red"],
)
@pytest.mark.parametrize("players", [2, 3, 4])
def test_instant_wins_of_a_non_starting_game(hand: str, players: int) -> None:
    g = _game(hand, seat=1, players=players, starting=False, leader=0)
    _assert_instant_win(g, 1)


@pytest.mark.parametrize("hand", [FOUR_THREES, THREE_PAIRS_FROM_3S], ids=["four_3s", "334455"])
def test_instant_wins_of_a_starting_game(hand: str) -> None:
    g = _game(hand, seat=2, starting=True)
    _assert_instant_win(g, 2)


@pytest.mark.parametrize("hand", [DRAGON, SIX_PAIRS, FOUR_TWOS, TWELVE_BLACK])
def test_general_list_does_not_win_a_starting_game(hand: str) -> None:
    # The 3S-holder leads; make sure that is not the seat holding the special hand
    # unless the hand itself has the 3S.
    g = _game(hand, seat=1, starting=True)
    assert not g.is_over and g.instant_winner is None
    assert g.to_move is not None


@pytest.mark.parametrize("hand", [FOUR_THREES, THREE_PAIRS_FROM_3S])
def test_starting_wins_do_not_count_in_other_games(hand: str) -> None:
    g = _game(hand, seat=1, starting=False, leader=0)
    assert not g.is_over and g.instant_winner is None
    assert g.to_move == 0


def test_a_three_pair_sequence_without_3s_is_not_a_starting_win() -> None:
    hands = full_deal({1: "3C 3D 4D 4H 5S 5C 7D 8S 9H JC QD KS 2H", 0: "3S"})
    g = Game(hands, starting=True)
    assert not g.is_over
    assert g.to_move == 0


def test_priority_goes_to_the_seat_nearest_the_leader() -> None:
    hands = full_deal({1: FOUR_TWOS, 3: SIX_PAIRS})
    _assert_instant_win(Game(hands, starting=False, leader=2), 3)
    _assert_instant_win(Game(hands, starting=False, leader=0), 1)
    _assert_instant_win(Game(hands, starting=False, leader=1), 1)
    _assert_instant_win(Game(hands, starting=False, leader=3), 3)


def test_instant_wins_are_only_checked_with_full_hands() -> None:
    g = Game([C(FOUR_TWOS)[:12], C("3S 4S"), C("5D 6D")], starting=False, leader=0)
    assert not g.is_over and g.to_move == 0


def _stuck_deal() -> list[list]:
    # Seat 1 holds two red 2s (4), seat 2 a black 2 and a three-pair sequence (1 + 2).
    return full_deal(
        {
            0: DRAGON,
            1: "2H 2D",
            2: "2C JC JD QS QD KS KC 3C 4D 5H 7C 8D 9H",
        }
    )


def test_stuck_cards_are_not_counted_on_an_instant_win_by_default() -> None:
    g = Game(_stuck_deal(), starting=False, leader=1)
    _assert_instant_win(g, 0)


def test_dem_heo_option_counts_stuck_cards_on_an_instant_win() -> None:
    g = Game(
        _stuck_deal(),
        starting=False,
        leader=1,
        options={"count_stuck_on_instant_win": True},
    )
    assert g.instant_winner == 0
    assert_points(g, [8 + 7 + 4, -8, -7, -4])


@pytest.mark.parametrize(
    "hand",
    [FOUR_TRIPLES, FOUR_TRIPLES_WITH_QUAD, TWO_QUADS],
    ids=["four_triples", "quad_as_a_triple", "two_quads"],
)
def test_south_extended_extra_instant_wins(hand: str) -> None:
    g = _game(hand, seat=2, preset="south_extended", starting=False, leader=0)
    _assert_instant_win(g, 2)
    plain = _game(hand, seat=2, preset="south", starting=False, leader=0)
    assert not plain.is_over


def test_south_extended_extra_wins_do_not_count_in_a_starting_game() -> None:
    g = _game(FOUR_TRIPLES, seat=2, preset="south_extended", starting=True)
    assert not g.is_over


def test_hue_has_no_starting_instant_wins_and_four_3s_lead_with_3c() -> None:
    g = _game(FOUR_THREES, seat=2, preset="hue", starting=True)
    assert not g.is_over
    assert g.to_move == 2
    assert all(C("3C")[0] in play for play in g.legal_plays())


def test_hue_keeps_the_general_instant_wins() -> None:
    _assert_instant_win(_game(DRAGON, seat=3, preset="hue", starting=False, leader=0), 3)


def test_north_has_no_pair_sequence_instant_win_but_keeps_the_others() -> None:
    assert not _game(FIVE_PAIRS, seat=1, preset="north", starting=False, leader=0).is_over
    _assert_instant_win(_game(DRAGON, seat=1, preset="north", starting=False, leader=0), 1)
    _assert_instant_win(_game(SIX_PAIRS, seat=1, preset="north", starting=False, leader=0), 1)


def test_danang_no_four_pair_bonus_after_an_instant_win() -> None:
    hands = full_deal({1: FOUR_TWOS, 2: "3S 3D 4C 4H 5S 5C 6D 6H 8S 9C JD QH KS"})
    g = Game(hands, preset="danang", starting=False, leader=0)
    _assert_instant_win(g, 1)
