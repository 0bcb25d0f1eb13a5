"""Engine unit tests for the Southern game: rounds, scoring, errors (docs/rules.md §4-§7, the worked examples of §13)."""

from __future__ import annotations

import pytest

from bots_sdk.rules import Game, IllegalMove
from tests.engine.conftest import C, make_game, owed, run


def test_example_6_pass_lock_and_skips() -> None:
    g = make_game("5S 9C 3H KH", "4S 6S", "7D 8D QD", "3C 4C JD")
    run(g, "A 5S; B pass; C 7D; D pass; A 9C")
    assert g.to_move == 2  # B is skipped: locked out
    run(g, "C pass")
    assert g.to_move == 0 and not g.can_pass  # D skipped; A leads the next round
    assert [m for m in g.history if m.get("pass")] == [
        {"seat": 1, "pass": True}, {"seat": 3, "pass": True}, {"seat": 2, "pass": True}]


def test_example_7_huong_sai() -> None:
    g = make_game("3S 10S KH", "6S JS", "8S 4H 5H", "9S 4D 5D")
    run(g, "A 3S; B 6S; C 8S; D 9S; A 10S; B JS; C pass; D pass; A pass")
    assert g.finishing_order == [1]
    assert g.to_move == 2 and not g.can_pass


def test_example_8_chop_chain_last_chopped_pays() -> None:
    g = make_game("2H 3S 4S", "5S 5C 6D 6H 7S 7C 3C", "9S 9C 9D 9H 3D", "JS QS 3H")
    run(g, "A 2H; B 5S 5C 6D 6H 7S 7C; C 9S 9C 9D 9H; D pass; A pass")
    assert g.payments == []  # settled when the round ends
    run(g, "B pass")
    assert g.payments == [{"from": 1, "to": 2, "points": 4, "reason": "chop"}]
    assert g.to_move == 2


def test_example_11_higher_three_pairs_chop() -> None:
    g = make_game("2S 3S 4S", "5S 5C 6D 6H 7S 7C 3C", "8S 8C 9D 9H 10S 10C 3D", "JS QS 3H")
    run(g, "A 2S; B 5S 5C 6D 6H 7S 7C; C 8S 8C 9D 9H 10S 10C; D pass; A pass; B pass")
    assert owed(g) == {(1, 2): 3}


def test_example_9_finishing_payments_and_stuck_cards() -> None:
    g = make_game("3S 8S", "4S 9S", "5S 10S", "6S 2H 7S 7C 7D 7H")
    run(g, "A 3S; B 4S; C 5S; D 6S; A 8S; B 9S; C 10S")
    assert g.is_over and g.finishing_order == [0, 1, 2, 3]
    assert owed(g) == {(3, 0): 2, (2, 1): 1, (3, 2): 5}
    assert g.points == [2, 1, 4, -7]
    assert g.next_leader == 0 and not g.next_starting


def test_example_10_frozen_player_pays_four_plus_stuck() -> None:
    g = make_game("3S 9S", "4S 5S", "6S 7S", "2S 2H")
    run(g, "A 3S; B 4S; C 6S; D pass; A 9S")
    assert g.frozen == [3]
    run(g, "B pass; C pass; B 5S")
    assert g.finishing_order == [0, 1, 2, 3]
    assert g.points == [7, 1, -1, -7]


def test_two_frozen_second_pays_thua_nhi() -> None:
    g = make_game("3S 9S", "4H 5S", "3C 4C", "3D 4D")
    run(g, "A 3S; B 4H; C pass; D pass; A 9S")
    assert g.is_over and g.frozen == [2, 3]
    assert g.finishing_order == [0, 1, 2, 3]
    assert g.points == [9, -1, -4, -4]
    assert g.den_bai is None and g.next_leader == 0


def test_den_bai_player_pays_everything_and_leads_next() -> None:
    g = make_game("3S 9S", "4H 5S", "3C 4C", "3D 5D")
    run(g, "A 3S; B 4H; C pass; D pass; A 9S")  # D passed holding 5D
    assert g.den_bai == 3
    assert g.points == [9, 0, 0, -9]
    assert g.next_leader == 3


def test_instant_win_six_pairs_in_a_non_starting_game() -> None:
    hands = ["3S 3C 5S 5C 7S 7C 9S 9C JS JC KS KC 2S",
             "4S 4C 6S 6D 8S 8D 10S 10D QS QD AS AD 2C",
             "3D 4D 5D 6C 7D 8C 9D 10C JD QC KD AC 2D",
             "3H 4H 5H 6H 7H 8H 9H 10H JH QH KH AH 2H"]
    # seats 0, 1 have six pairs and seat 3 a dragon (and 12 red): the leader's side wins
    g = Game([C(h) for h in hands], starting=False, leader=1)
    assert g.is_over and g.instant_winner == 1
    assert g.points == [-4, 12, -4, -4]
    assert g.finishing_order == [1, 2, 3, 0] and set(g.tied) == {0, 2, 3}
    assert g.next_starting and g.next_leader is None


def test_starting_game_instant_win_four_threes_only() -> None:
    hands = ["3S 3C 3D 3H 5S 6S 7S 9S JS KS AS 2S 4D",
             "4S 4C 5C 6C 7C 8C 9C 10C JC QC KC AC 2C",
             "4H 5D 6D 7D 8D 9D 10D JD QD KD AD 2D 5H",
             "6H 7H 8H 8S 9H 10H JH QH KH AH 2H 10S QS"]
    g = Game([C(h) for h in hands], starting=True)
    assert g.instant_winner == 0 and g.instant_win_kind == "four_threes"
    # the same hands in a non-starting game: seat 1 has 12 black cards
    g2 = Game([C(h) for h in hands], starting=False, leader=0)
    assert g2.instant_winner == 1


@pytest.mark.parametrize(
    ("script", "cards", "code", "text"),
    [
        ("", "4S", "must_contain_start_card", "the first play must contain 3S"),
        ("", "9S", "not_in_hand", "card 9S not in your hand"),
        ("", "3S 5D", "invalid_combination", "not a valid combination"),
        ("", "3S 3S", "duplicate_card", "3S is named twice"),
        ("", "ZZ", "unknown_card", "ZZ"),
        ("A 3S; B 6S; C 8S; D 10S", "4S", "does_not_beat", "4S does not beat 10S"),
    ],
)
def test_illegal_plays_say_why_and_change_nothing(script, cards, code, text) -> None:
    g = Game([C("3S 4S 5D"), C("3C 6S 7S"), C("8S 9D"), C("10S JD")], starting=True)
    run(g, script)
    before = (g.to_move, g.hands, g.history, g.legal_plays()[:])
    with pytest.raises(IllegalMove) as err:
        g.play(cards)
    assert err.value.code == code and text in str(err.value)
    assert isinstance(err.value, ValueError)
    assert (g.to_move, g.hands, g.history, g.legal_plays()[:]) == before


def test_leader_cannot_pass_and_wrong_seat_is_refused() -> None:
    g = Game([C("3S 4S"), C("5S 6S")], starting=True)
    with pytest.raises(IllegalMove, match="the leader cannot pass") as err:
        g.pass_turn()
    assert err.value.code == "cannot_pass"
    with pytest.raises(IllegalMove) as err:
        g.play("5S", seat=1)
    assert err.value.code == "not_your_turn"
    g.play("3S")
    g.pass_turn()
    g.play("4S")
    assert g.is_over
    with pytest.raises(IllegalMove) as err:
        g.play("5S")
    assert err.value.code == "game_over"


def test_locked_out_seat_is_told_so() -> None:
    g = make_game("5S 9C 3H", "4S 6S", "7D 8D", "3C 4C")
    run(g, "A 5S; B pass; C 7D")
    with pytest.raises(IllegalMove, match="you passed this round") as err:
        g.play("6S", seat=1)
    assert err.value.code == "locked_out"


def test_two_and_three_player_starting_game_led_by_weakest_dealt_card() -> None:
    g = Game([C("4C 9S"), C("4S 5S")], starting=True)
    assert g.to_move == 1
    assert [list(p) for p in g.legal_plays()] == [C("4S")]


def test_bad_hands_are_rejected_with_a_clear_error() -> None:
    with pytest.raises(ValueError, match="dealt to more than one seat"):
        Game([C("3S"), C("3S")])
    with pytest.raises(ValueError, match="2 to 4 players"):
        Game([C("3S")])
    with pytest.raises(ValueError, match="1 to 13"):
        Game([C("3S"), []])
    with pytest.raises(ValueError, match="unknown preset"):
        Game([C("3S"), C("4S")], preset="saigon")
    with pytest.raises(ValueError, match="unknown option 'nope'"):
        Game([C("3S"), C("4S")], options={"nope": 1})


@pytest.mark.parametrize("bad", [5, None, [None], "", [], ["3S", "7X"]])
def test_malformed_plays_are_illegal_moves_not_crashes(bad) -> None:
    g = Game.from_seed("malformed", 4)
    before = g.history
    with pytest.raises(IllegalMove):
        g.play(bad)
    with pytest.raises(IllegalMove) as err:
        g.pass_turn(seat="0")
    assert err.value.code == "not_your_turn"
    assert g.history == before


def test_malformed_replays_raise_value_errors() -> None:
    from bots_sdk.rules import replay_game

    record = Game.from_seed("malformed", 4).replay()
    for change in ({"hands": "x"}, {"players": 9}, {"moves": [5]}, {"moves": [{"seat": 0}]},
                   {"options": {"nope": 1}}, {"preset": "x"}, {"seed": "other"},
                   {"moves": [{"seat": "0", "pass": True}]}):
        with pytest.raises(ValueError):
            replay_game({**record, **change})


def test_table_key_names_the_play_to_beat_and_changes_with_it() -> None:
    game = Game.from_seed("table-key", 4)
    assert game.table_key is None and game.table is None
    play = game.legal_plays()[0]
    game.play(play)
    kind, mask = game.table_key
    assert mask == sum(c.bit for c in play) and mask == sum(c.bit for c in game.table.cards)
    while game.table is not None:  # everyone passes: a new round clears the table
        game.pass_turn()
    assert game.table_key is None
