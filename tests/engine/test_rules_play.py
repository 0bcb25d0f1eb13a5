"""docs/rules.md §4: who leads, rounds, the pass lock and skips, hưởng sái, finishing, and what
an illegal move does (a clear error and no change)."""

from __future__ import annotations

import pytest

from bots_sdk.rules import Game
from tests.engine.conftest import C, assert_points, combo_set, make_game, run


def _contains(card: str, plays) -> bool:
    c = C(card)[0]
    return all(c in play for play in plays)


def test_starting_game_3s_holder_must_include_it() -> None:
    g = make_game("4C 5C", "9D 3S 4S 5S", "6D 7D", "8H 9H", starting=True)
    assert g.to_move == 1
    assert _contains("3S", g.legal_plays())
    assert frozenset(C("3S 4S 5S")) in combo_set(g.legal_plays())
    with pytest.raises(ValueError, match=r"\S"):
        g.play(C("9D"))
    assert g.to_move == 1


@pytest.mark.parametrize(
    ("hands", "leader", "card"),
    [
        (["5S 9D", "3C 4D"], 1, "3C"),  # 2 players, 3S undealt: 3C is the weakest dealt
        (["6S 9D", "5H 7C", "4D 8S"], 2, "4D"),  # 3 players: 4D is the weakest dealt
    ],
)
def test_weakest_dealt_card_leads_when_3s_is_undealt(hands, leader, card) -> None:
    g = make_game(*hands, starting=True)
    assert g.to_move == leader
    assert _contains(card, g.legal_plays())
    other = next(c for c in g.hands[leader] if c != C(card)[0])
    with pytest.raises(ValueError):
        g.play([other])


def test_3s_leads_with_three_players_when_dealt() -> None:
    g = make_game("6S 9D", "5H 7C", "3S 8S", starting=True)
    assert g.to_move == 2


def test_non_starting_game_leader_plays_anything_and_cannot_pass() -> None:
    g = make_game("3S 9D", "5H 7C", "4S 8S", leader=1)
    assert g.to_move == 1
    assert not g.can_pass
    assert combo_set(g.legal_plays()) == {frozenset(C("5H")), frozenset(C("7C"))}
    with pytest.raises(ValueError, match=r"\S"):
        g.pass_turn()
    assert g.to_move == 1
    g.play(C("7C"))
    assert g.to_move == 2 and g.can_pass


def test_a_follower_must_beat_with_the_same_kind() -> None:
    g = make_game("9S 9C 3D", "10S 10D JS QS KS", "4S 4C", "5S 5C")
    run(g, "A 9S 9C")
    assert combo_set(g.legal_plays()) == {frozenset(C("10S 10D"))}
    for bad in ("JS", "JS QS KS", "10S"):
        with pytest.raises(ValueError):
            g.play(C(bad))


@pytest.mark.parametrize(
    ("cards", "why"),
    [
        ("2H", "not in hand"),
        ("3S 4S", "not a combination"),
        ("3S", "does not beat"),
        ("7S 7S", "named twice"),
    ],
)
def test_an_illegal_move_raises_with_a_reason_and_changes_nothing(cards, why) -> None:
    g = make_game("5S 6S", "3S 4S 7S 9H", "8S 10S", "JS QS")
    run(g, "A 5S")
    before = (g.to_move, [list(h) for h in g.hands], list(g.history), g.view(1).to_dict())
    with pytest.raises(ValueError) as exc:
        g.play(C(cards))
    assert str(exc.value).strip(), why
    after = (g.to_move, [list(h) for h in g.hands], list(g.history), g.view(1).to_dict())
    assert after == before
    g.play(C("7S"))  # the game goes on normally
    assert g.to_move == 2


def test_no_move_after_the_game_is_over() -> None:
    g = make_game("3S", "4S")
    run(g, "A 3S")
    assert g.is_over and g.to_move is None
    with pytest.raises(ValueError):
        g.pass_turn()
    with pytest.raises(ValueError):
        g.play(C("4S"))


def test_pass_lock_lasts_until_the_round_ends() -> None:
    g = make_game("3S 5S 9S", "4S 6S 10S KH", "7C JC QC", "8D KD AD")
    run(g, "A 3S; B 4S; C pass; D 8D; A 9S; B 10S")
    # C passed earlier in this round and is skipped even though it could beat 10S now.
    assert g.to_move == 3
    run(g, "D pass; A pass")
    assert g.to_move == 1 and not g.can_pass  # B made the last play: new round
    run(g, "B 6S; C 7C")  # C may play again in the new round
    assert g.to_move == 3


def test_round_ends_when_every_other_player_still_in_has_passed() -> None:
    g = make_game("3S 4S", "5S 6S", "7S 8S")
    run(g, "A 3S; B pass; C pass")
    assert g.to_move == 0 and not g.can_pass
    history_passes = [m for m in g.history if m.get("pass")]
    assert len(history_passes) == 2  # skips are not recorded as passes


def test_huong_sai_lead_goes_to_the_next_holder_after_the_finisher() -> None:
    g = make_game("3S 8S KD", "4S 9S", "5S 10D", "6S 7S JD QD")
    run(g, "A 3S; B 4S; C 5S; D 6S; A 8S; B 9S; C 10D")
    # B went out 1st with 9S and C, beating it, went out 2nd with 10D.
    assert g.finishing_order[:2] == [1, 2]
    run(g, "D pass; A pass")
    # Nobody beat C's last card: the next seat after C holding cards is D.
    assert g.to_move == 3 and not g.can_pass


def test_huong_sai_passes_the_lead_over_an_empty_seat() -> None:
    g = make_game("3S 8S KD QH", "4S 9S JS", "5S 10C", "6S 7S JD 3D")
    run(g, "A 3S; B 4S; C 5S; D 6S; A 8S; B 9S; C 10C")
    assert g.finishing_order == [2]
    run(g, "D JD; A pass; B pass")
    assert g.to_move == 3  # C is out, D made the last play
    run(g, "D 7S; A pass; B JS")
    assert g.finishing_order == [2, 1]
    run(g, "D pass")  # A is locked out and skipped: the round ends
    # B went out and nobody beat it; C, next after B, is out: D leads.
    assert g.to_move == 3 and not g.can_pass
    assert g.view(3).table is None


def test_any_combination_may_be_the_last_play_bombs_and_twos_included() -> None:
    g = make_game("3S 2H", "4S 5S", "6S 6C 7S 7C 8S 8C 9D", "9S 10S")
    run(g, "A 3S; B 4S; C 9D; D 10S; A 2H")
    assert g.finishing_order == [0]
    run(g, "B pass; C 6S 6C 7S 7C 8S 8C")
    assert g.finishing_order == [0, 2]
    run(g, "D pass")  # B passed before and is skipped: the round ends
    # the chopper went out on the chop; the lead passes to D
    assert g.to_move == 3 and not g.can_pass


def test_the_game_ends_when_one_player_holds_cards() -> None:
    g = make_game("3S 5S", "4S KS", "6S")
    run(g, "A 3S; B 4S; C 6S")
    assert not g.is_over
    run(g, "A pass; B KS")
    assert g.is_over
    assert g.finishing_order == [2, 1, 0]
    assert_points(g, [-2, 0, 2])  # 3 players: last pays 1st 2 points


def test_two_players_last_pays_first_two_points() -> None:
    g = make_game("3S 5S", "4S")
    run(g, "A 3S; B 4S")
    assert g.finishing_order == [1, 0]
    assert_points(g, [-2, 2])


def test_from_seed_records_the_seed_and_uses_deal() -> None:
    from bots_sdk.rules import deal

    g = Game.from_seed("abc", 3, starting=True)
    assert g.seed == "abc"
    assert g.replay()["seed"] == "abc"
    assert [sorted(h) for h in g.replay()["hands"]] == [
        sorted(str(c) for c in h) for h in deal("abc", 3)
    ]


def test_huong_sai_skips_a_frozen_player() -> None:
    # Reading (docs/rules.md §12): a frozen player still holds cards but no longer plays,
    # so the lead passes over it.
    g = make_game("2H 3S", "4S 9S 9C 9D 9H", "5S KD", "6S QD")
    run(g, "A 3S; B pass; C 5S; D 6S; A 2H")
    assert g.finishing_order[0] == 0 and g.frozen == [1]
    assert g.to_move == 2  # B is frozen and takes no turn
    run(g, "C pass; D pass")
    assert g.to_move == 2 and not g.can_pass  # the lead skips B too


def test_views_show_only_what_the_seat_may_know() -> None:
    from bots_sdk.rules import SeatView

    g = make_game("3S 9D", "5H 7C", "4S 8S", leader=1)
    run(g, "B 7C")
    mine = g.view(2)
    other = g.view(0)
    assert list(mine.hand) == C("4S 8S") and list(other.hand) == C("3S 9D")
    assert mine.legal_plays() and not other.legal_plays()
    assert mine.can_pass and not other.can_pass
    assert mine.card_counts == (2, 1, 2)
    assert mine.table["seat"] == 1 and list(mine.table["cards"]) == C("7C")
    text = str(other.to_dict())
    for card in ("4S", "8S", "5H"):
        assert card not in text
    assert SeatView.from_dict(mine.to_dict()) == mine


def test_a_declined_offer_is_not_in_the_other_seats_views() -> None:
    g = make_game("3D 9H", "4S 4C 5S 5C 6S 6C KH", preset="hue")
    run(g, "B pass")  # declines the steal
    assert g.view(0).history == ()
    assert g.replay()["moves"]  # the replay keeps it, so re-simulation is exact


def test_a_position_game_replays_exactly() -> None:
    from bots_sdk.rules import replay_game

    g = make_game("3S 7S KS", "4S 9H 10H", "6S 8C JC", "2H 5C")
    run(g, "A 3S; B 4S; C 6S; D pass; A 7S; B pass; C pass; A KS")
    run(g, "B pass; C pass; B 9H; C JC; B pass; C 8C")
    again = replay_game(g.replay())
    assert again.points == g.points and again.payments == g.payments
    assert g.replay()["seed"] is None


@pytest.mark.parametrize(
    ("hands", "kwargs", "words"),
    [
        (["3S"], {}, "player"),
        (["3S", "4S", "5S", "6S", "7S"], {}, "player"),
        (["3S 4S", "4S 5S"], {}, "4S"),
        (["3S 3S", "5S"], {}, "3S"),
        (["3S", ""], {}, "card"),
        (["3S", "4S"], {"preset": "mars"}, "mars"),
        (["3S", "4S"], {"options": {"no_such": 1}}, "no_such"),
    ],
)
def test_a_bad_game_setup_is_a_clear_error(hands, kwargs, words) -> None:
    with pytest.raises(ValueError, match=words):
        Game([C(h) for h in hands], starting=True, **kwargs)


def _code_of(action) -> str:
    from bots_sdk.rules import IllegalMove

    with pytest.raises(IllegalMove) as exc:
        action()
    assert str(exc.value).strip()
    return exc.value.code


def test_illegal_moves_carry_the_documented_codes() -> None:
    g = make_game("3S 4S 9D", "5S 6S 7C 2H", "8S 10S", "JS QS", starting=True)
    assert _code_of(lambda: g.play(C("4S"))) == "must_contain_start_card"
    assert _code_of(lambda: g.pass_turn()) == "cannot_pass"
    assert _code_of(lambda: g.play(C("3S 4S"))) == "invalid_combination"
    assert _code_of(lambda: g.play(C("3S 3S"))) == "duplicate_card"
    assert _code_of(lambda: g.play(C("3S 2H"))) == "not_in_hand"
    assert _code_of(lambda: g.play("3S 1H")) == "unknown_card"
    assert _code_of(lambda: g.play(C("3S"), seat=1)) == "not_your_turn"
    run(g, "A 3S")
    assert _code_of(lambda: g.play(C("5S 6S 7C"))) == "does_not_beat"
    run(g, "B pass")
    run(g, "C 8S; D JS; A pass")
    assert _code_of(lambda: g.play(C("2H"), seat=1)) == "locked_out"
    run(g, "C pass")
    assert g.to_move == 3  # B and A are locked out and skipped: D leads
    g2 = make_game("3S", "4S 5S")
    run(g2, "A 3S")
    assert _code_of(lambda: g2.pass_turn()) == "game_over"
    g3 = make_game("9S 3C", "5S 6S")
    run(g3, "A 9S")
    assert _code_of(lambda: g3.play(C("5S"))) == "does_not_beat"
