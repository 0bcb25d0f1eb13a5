"""Engine unit tests for the regional presets (docs/rules.md §9): one option set each."""

from __future__ import annotations

import pytest

from bots_sdk.rules import PRESETS, Game, IllegalMove, Options, beats, classify
from tests.engine.conftest import C, make_game, owed, run

PS3 = "5S 5C 6D 6H 7S 7C"
QUAD = "9S 9C 9D 9H"
PS4 = "3S 3C 4D 4H 5S 5C 6D 6H"


def test_presets_are_option_values_of_one_rule_set() -> None:
    assert set(PRESETS) == {"south", "south_extended", "hue", "danang", "north"}
    for name, opts in PRESETS.items():
        assert isinstance(opts, Options)
        assert Options.from_dict(opts.to_dict()) == opts, name
    with pytest.raises(ValueError, match="unknown option 'colour'"):
        Options.from_dict({"colour": 1})
    with pytest.raises(ValueError, match="freeze_mode"):
        Options.from_dict({"freeze_mode": "sometimes"})


@pytest.mark.parametrize(("change", "message"), [
    ({"den_bai": "yes"}, "option den_bai must be true or false, got 'yes'"),
    ({"den_bai": 1}, "option den_bai must be true or false, got 1"),
    ({"frozen_points": 4.0}, "option frozen_points must be an integer, got 4.0"),
    ({"frozen_points": True}, "option frozen_points must be an integer, got True"),
    ({"chops": "2>quad"}, "option chops must be a list of strings, got '2>quad'"),
    ({"chops": [1]}, "option chops must be a list of strings, got \\[1\\]"),
    ({"freeze_mode": None}, "option freeze_mode must be a string, got None"),
    ({"chops": ["2>nuke"]}, "option chops: bad entry '2>nuke'"),
])
def test_a_bad_option_value_is_a_value_error_naming_it(change: dict, message: str) -> None:
    """Options come from JSON (replays, an organiser's options): the same clear error with
    the compiled engine as with the Python one, never a TypeError."""
    with pytest.raises(ValueError, match=message):
        Options.from_dict(change)
    with pytest.raises(ValueError, match=message):
        Game.from_seed("options", 4, options=change)


def test_options_read_from_json_lists_equal_the_preset() -> None:
    for opts in PRESETS.values():
        again = Options.from_dict({k: list(v) if isinstance(v, tuple) else v
                                   for k, v in opts.to_dict().items()})
        assert again == opts and hash(again) == hash(opts)


@pytest.mark.parametrize(
    ("preset", "play", "table", "expected"),
    [
        ("hue", PS3, "2D", False),  # a three-pair sequence never chops in Huế
        ("hue", QUAD, "2D", True),
        ("hue", QUAD, "2S 2C", False),
        ("hue", "6S 6C 7D 7H 8S 8C", PS3, True),  # a normal beat, not a chop
        ("danang", QUAD, "2S 2C", False),
        ("danang", PS4, "2S 2C", True),
        ("danang", PS4, "2D", False),
        ("danang", "10S 10C 10D 10H", QUAD, True),
        ("danang", "10S 10C 10D 10H", PS3, False),
        ("north", "5D", "4S", False),
        ("north", "5S", "4S", True),
        ("north", "2H", "2D", False),
        ("north", QUAD, "2D", True),
        ("north", QUAD, "2S 2C", True),
        ("north", "6S 6D", "5C 5H", True),
        ("north", "6S 6C", "5D 5H", False),
        ("north", "6S 6C 6D", "5S 5C 5H", True),
        ("north", "6S 6D 6H", "5S 5C 5H", False),
        ("south", PS3, "2D", True),
        ("south", PS3, "2S 2C", False),
    ],
)
def test_chop_tables_and_like_beats_like(preset, play, table, expected) -> None:
    assert beats(C(play), C(table), preset) is expected


def test_north_has_no_pair_sequences_and_only_suited_straights() -> None:
    assert classify(C(PS3), "north") is None
    assert classify(C("3S 4S 5D"), "north") is None
    assert classify(C("3S 4S 5S"), "north").kind == "straight"


def test_hue_starting_game_is_led_with_3c() -> None:
    g = Game([C("3S 5S"), C("3C 4S"), C("6S 7S")], preset="hue", starting=True)
    assert g.to_move == 1
    assert all(C("3C")[0] in p for p in g.legal_plays())
    with pytest.raises(IllegalMove, match="must contain 3C"):
        g.play("4S")


def test_hue_steal_the_lead_with_a_three_pair_sequence() -> None:
    g = make_game("3S 4D 9H", "5S 6S", "4S 4C 5C 5D 6C 6D KD", "7S 8S JD", preset="hue")
    assert g.to_move == 2 and g.offer == "steal_lead"  # B holds none: skipped
    assert [sorted(p) for p in g.legal_plays()] == [C("4S 4C 5C 5D 6C 6D")]
    with pytest.raises(IllegalMove) as err:
        g.play("KD")
    assert err.value.code == "not_offered"
    g.play(C("4S 4C 5C 5D 6C 6D"))
    assert g.to_move == 2 and g.offer is None and not g.can_pass  # C leads round 1 freely
    assert g.payments == []


def test_hue_declined_steal_leaves_the_lead_and_is_not_public() -> None:
    g = make_game("3S 4D 9H", "5S 6S", "4S 4C 5C 5D 6C 6D KD", "7S 8S JD", preset="hue")
    g.pass_turn()
    assert g.to_move == 0 and g.offer is None and not g.can_pass
    assert g.history == [{"seat": 2, "pass": True, "offer": "steal_lead"}]
    assert g.view(1).history == ()


def test_an_offer_is_visible_only_to_the_offered_seat() -> None:
    g = make_game("3S 4D 9H", "5S 6S", "4S 4C 5C 5D 6C 6D KD", "7S 8S JD", preset="hue")
    assert g.view(2).to_move == 2 and g.view(2).offer == "steal_lead"
    assert g.view(2).legal_plays
    for seat in (0, 1, 3):  # only the offered seat knows it is being offered anything
        view = g.view(seat)
        assert view.to_move is None and view.offer is None and view.plays == ()
    assert g.locked_out == ()


def test_hue_blind_three_ends_the_game() -> None:
    g = make_game("3S 9S 2S", "4S 10S", "5S JS", "6S QS", preset="hue")
    run(g, "A 9S; B 10S; C JS; D QS; A 2S; B pass; C pass; D pass; A 3S")
    assert g.is_over and g.end_reason == "blind_three"
    assert g.points == [6, -2, -2, -2]
    assert set(g.tied) == {1, 2, 3}


def test_hue_split_four_threes_make_3s_alone_a_bomb() -> None:
    g = Game([C("3S 3C 3D 3H 7S"), C("2D 8S 9S"), C("4S 10S"), C("5S JS")],
             preset="hue", starting=True)
    run(g, "A 3C; B 2D; C pass; D pass")
    plays = [sorted(p) for p in g.legal_plays()]
    assert C("3S") in plays
    g.play("3S")
    assert g.table.kind == "four_of_a_kind"
    run(g, "B pass")
    assert owed(g) == {(1, 0): 2}  # the chopped 2D is paid by B


def test_hue_stuck_three_of_spades_costs_two() -> None:
    g = make_game("3H 8S", "4S 9S", "5S 10S", "3S 6S 7C", preset="hue")
    run(g, "A 3H; B 4S; C 5S; D 6S; A 8S; B 9S; C 10S")
    assert g.is_over and g.finishing_order == [0, 1, 2, 3]
    assert owed(g)[(3, 2)] == 2


def test_danang_four_pair_bonus_and_single_frozen() -> None:
    g = make_game("3S 3C 4S 4C 5S 5C 6S 6C 9D", "7S 8S", preset="danang")
    run(g, "A 3S 3C 4S 4C 5S 5C 6S 6C; B pass; A 9D")
    assert g.frozen == [1]
    assert g.points == [8, -8]


def test_danang_two_unplayed_means_nobody_is_frozen() -> None:
    g = make_game("3S 9S", "4S 5S", "3C 4C", "3D 4D", preset="danang")
    run(g, "A 3S; B 4S; C pass; D pass; A 9S")
    assert not g.is_over and g.frozen == []


def test_danang_out_of_turn_chop_of_a_pair_of_twos() -> None:
    g = make_game("2S 2C 8D", "9S 10S", PS4 + " KD", "JS QS", preset="danang")
    assert g.offer == "steal_lead" and g.to_move == 2  # C's pairs could steal the lead
    run(g, "C pass; A 2S 2C")
    assert g.to_move == 2 and g.offer == "out_of_turn_chop"
    g.play(C(PS4))
    assert g.to_move == 3 and g.offer is None
    run(g, "D pass; A pass; B pass")
    assert owed(g) == {(0, 2): 2}
    assert g.to_move == 2


def test_danang_higher_quad_is_a_normal_beat_not_a_chop() -> None:
    g = make_game("2D 3S", "9S 9C 9D 9H 4S", "10S 10C 10D 10H 5S", "JS 6S", preset="danang")
    run(g, "A 2D; B 9S 9C 9D 9H; C 10S 10C 10D 10H; D pass; A pass; B pass")
    assert owed(g) == {(0, 1): 2}


def test_north_going_out_on_a_two_takes_the_bottom_place() -> None:
    g = make_game("3S 2S", "4S 9S", "5S 10S", preset="north")
    run(g, "A 3S; B 4S; C 5S; A 2S; B pass; C pass; B 9S")
    assert g.finishing_order == [1, 2, 0]
    assert g.points == [-2, 2, 0]


def test_north_den_ca_lang() -> None:
    g = make_game("3S 5S 9S", "4S 8S", "6S 7S", preset="north")
    run(g, "A 3S; B 4S; C 6S; A pass; B 8S")
    assert owed(g) == {(0, 1): 2, (0, 2): 2}
    run(g, "C pass; C 7S")
    assert g.is_over and g.points == [-6, 4, 2]


def test_south_extended_four_triples_instant_win() -> None:
    hands = ["3S 3C 3D 5S 5C 5D 7S 7C 7D 9S 9C 9D JS",
             "4S 4C 6S 6D 8S 8D 10S 10D QS QD AS 2C JC",
             "4D 6C 8C 10C JD QC KD AC 2D KS 3H 4H 5H",
             "6H 7H 8H 9H 10H JH QH KH AH 2H 2S KC AD"]
    assert Game([C(h) for h in hands], preset="south", starting=False).instant_winner is None
    g = Game([C(h) for h in hands], preset="south_extended", starting=False)
    assert g.instant_winner == 0 and g.instant_win_kind == "four_triples"


def test_hue_split_pair_sequence_makes_two_sixes_a_four_pair_bomb_once() -> None:
    g = Game([C("3C 3D 4S 4C 5S 5C 6S 6C 9H"), C("2D 8S"), C("7S 10S"), C("8D JD")],
             preset="hue", starting=True)
    run(g, "A 3C 3D 4S 4C 5S 5C; B pass; C pass; D pass; A 9H; B 2D; C pass; D pass")
    plays = [sorted(p) for p in g.legal_plays()]
    assert plays == [C("6S 6C")]  # the two 6s chop the 2 as a four-pair sequence
    g.play("6S 6C")
    assert g.table.kind == "pair_sequence" and g.table.size == 8
    assert [p for p in g.payments if p["reason"] == "chop"] == [
        {"from": 1, "to": 0, "points": 2, "reason": "chop"}]


def test_bit_parallel_instant_win_checks_agree_with_rank_counts() -> None:
    import random

    from bots_sdk.rules.scoring import _QUICK, _is_instant, _quick_instant, rank_counts

    rng = random.Random(0)
    for i in range(20000):
        if i % 2:
            ranks = rng.sample(range(13), rng.randrange(4, 8))
            cards = rng.sample([r * 4 + s for r in ranks for s in range(4)], 13)
        else:
            cards = rng.sample(range(52), 13)
        hand = sum(1 << c for c in cards)
        for name in _QUICK:
            assert _quick_instant(name, hand) == _is_instant(name, hand, rank_counts(hand))


def test_hue_blind_three_going_out_second_ends_the_game() -> None:
    g = make_game("4S 10S", "3S 5S", "6S 8C", "7S 9C", preset="hue")
    run(g, "A 4S; B 5S; C 6S; D 7S; A 10S; B pass; C pass; D pass")
    assert g.to_move == 1  # hưởng sái: B leads after A went out
    run(g, "B 3S")
    assert g.is_over and g.end_reason == "blind_three"
    assert g.finishing_order == [0, 1, 2, 3]
    assert owed(g) == {(2, 0): 2, (3, 0): 2}  # the 2nd gets nothing, no stuck, no 3rd->2nd


def test_north_places_after_going_out_on_a_two_and_a_frozen_player() -> None:
    g = make_game("3S 9S", "4S 10H", "3C 3D", "2S", preset="north", leader=3)
    run(g, "D 2S; A pass; B pass; C pass")
    assert g.to_move == 0 and g.frozen == []  # out on a 2: freezing not judged yet
    run(g, "A 3S; B 4S; C pass; A 9S")
    assert g.is_over and g.frozen == [2]
    assert g.finishing_order == [0, 1, 2, 3]  # D (out on a 2) last, C frozen just above
    # B, left holding cards in 2nd, pays no thua nhì: one frozen player never creates it
    assert owed(g) == {(2, 0): 4, (3, 0): 2}
