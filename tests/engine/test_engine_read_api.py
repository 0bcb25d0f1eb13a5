"""The engine's read API and its one hiding function:
what settlement, replays, views, the referee's encoder and the web read from a game."""

from __future__ import annotations

import random

import pytest

from bots_sdk.cards import DECK, cards_of_mask, mask_of
from bots_sdk.rules import PRESETS, Game, MoveRecord, Visibility, seat_visibility
from tests.engine.conftest import C, make_game, run


def _random_game(preset: str, players: int, seed: int) -> tuple[Game, random.Random]:
    rng = random.Random(seed)
    g = Game.from_seed(f"read-api-{seed}", players, preset=preset, starting=seed % 2 == 0,
                       leader=0)
    return g, rng


def test_masks_moves_and_undealt_agree_with_the_card_views() -> None:
    g = Game.from_seed("read-api", 3)
    assert g.initial_masks == tuple(mask_of(h) for h in g.initial_hands)
    assert sorted(g.undealt + [c for h in g.initial_hands for c in h]) == list(DECK)
    rng = random.Random(5)
    while not g.is_over:
        plays = g.legal_plays()
        k = rng.randrange(len(plays) + g.can_pass)
        g.pass_turn() if k == len(plays) else g.play(plays[k])
        assert g.hand_masks == tuple(mask_of(h) for h in g.hands)
    assert len(g.moves) == len(g.history)
    for record, entry in zip(g.moves, g.history, strict=True):
        assert isinstance(record, MoveRecord) and record.seat == entry["seat"]
        if record.mask is None:
            assert entry["pass"] is True
        else:
            assert [str(c) for c in cards_of_mask(record.mask)] == entry["cards"]


def test_chops_name_the_plays_that_chopped() -> None:
    # docs/rules.md §13, example 8: A 2H, B chops with a three-pair sequence, C chops B with
    # four of a kind; nothing after that chops.
    g = make_game("2H 3S KS", "5S 5C 6D 6H 7S 7C 4S", "JS JC JD JH 8S 3C", "9S 10S QS")
    run(g, "A 2H")
    assert g.chops == ()
    run(g, "B 5S 5C 6D 6H 7S 7C; C JS JC JD JH; D pass; A pass; B pass")
    assert g.chops == (1, 2)
    run(g, "C 3C; D 9S; A KS; B pass; C pass; D pass; A 3S; B 4S; C 8S")
    assert g.is_over and g.chops == (1, 2)
    assert [g.history[i]["seat"] for i in g.chops] == [1, 2]


def test_an_offered_seat_alone_sees_the_offer_and_its_turn() -> None:
    g = make_game("3S 4D 9H", "5S 6S", "4S 4C 5C 5D 6C 6D KD", "7S 8S JD", preset="hue")
    mine = seat_visibility(g, 2)
    assert isinstance(mine, Visibility)
    assert (mine.mine, mine.to_move, mine.offer, mine.can_pass) == (True, 2, "steal_lead", True)
    assert mine.hand == mask_of(C("4S 4C 5C 5D 6C 6D KD"))
    for seat in (0, 1, 3):
        other = seat_visibility(g, seat)
        assert (other.mine, other.to_move, other.offer, other.can_pass) == (False, None, None,
                                                                            False)
        assert other.hand == g.hand_masks[seat]
    g.pass_turn()  # declines: the decline stays private
    assert g.moves == (MoveRecord(2, None, "steal_lead"),)
    assert all(seat_visibility(g, seat).moves == () for seat in range(4))
    run(g, "A 3S")
    assert seat_visibility(g, 1).moves == (MoveRecord(0, 1, None),)
    assert seat_visibility(g, 1, moves_from=1).moves == (MoveRecord(0, 1, None),)
    assert seat_visibility(g, 1, moves_from=2).moves == ()


@pytest.mark.parametrize("seat", [-1, 4, "0", None])
def test_a_bad_seat_is_refused(seat: object) -> None:
    g = Game.from_seed("x", 4)
    with pytest.raises(ValueError, match="no seat"):
        seat_visibility(g, seat)  # type: ignore[arg-type]


@pytest.mark.parametrize("preset", list(PRESETS))
def test_every_seat_view_is_built_from_the_hiding_function(preset: str) -> None:
    for seed in range(6):
        g, rng = _random_game(preset, 2 + seed % 3, seed)
        while True:
            for seat in range(g.players):
                vis = seat_visibility(g, seat)
                view = g.view(seat)
                assert view.hand == tuple(cards_of_mask(vis.hand))
                assert (view.to_move, view.offer, view.can_pass) == (vis.to_move, vis.offer,
                                                                     vis.can_pass)
                assert len(view.history) == len(vis.moves)
                assert bool(view.plays) == (vis.mine and len(g.legal_plays()) > 0)
            if g.is_over:
                break
            plays = g.legal_plays()
            k = rng.randrange(len(plays) + g.can_pass)
            g.pass_turn() if k == len(plays) else g.play(plays[k])


def test_an_encoder_reads_each_new_move_of_the_log_once() -> None:
    """``moves_since`` / ``move_count`` and ``Visibility.moves_to``: a reader that keeps
    what it saw asks only for what is new, declined offers counted in the log but never
    shown."""
    g = make_game("3S 4D 9H", "5S 6S", "4S 4C 5C 5D 6C 6D KD", "7S 8S JD", preset="hue")
    assert g.move_count == 0 and g.moves_since(0) == ()
    seen = 0
    shown: list[MoveRecord] = []
    rng = random.Random(2)
    while not g.is_over:
        vis = seat_visibility(g, 0, moves_from=seen)
        assert vis.moves_to == g.move_count == len(g.moves)
        shown.extend(vis.moves)
        seen = vis.moves_to
        plays = g.legal_plays()
        k = rng.randrange(len(plays) + g.can_pass)
        g.pass_turn() if k == len(plays) else g.play(plays[k])
    shown.extend(seat_visibility(g, 0, moves_from=seen).moves)
    assert shown == list(seat_visibility(g, 0).moves)
    assert g.moves_since(1) == g.moves[1:]
    assert (g.moves[0].seat, g.moves[0].offer) == (2, "steal_lead")  # asked first
    with pytest.raises(ValueError, match="0 or more"):
        g.moves_since(-1)
    with pytest.raises(ValueError, match="0 or more"):
        seat_visibility(g, 0, moves_from=-2)


@pytest.mark.parametrize("players", [2, 3, 4])
@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_the_opening_card_is_the_leaders_and_every_first_play_holds_it(preset: str,
                                                                       players: int) -> None:
    for i in range(30):
        game = Game.from_seed(f"opening-{preset}-{i}", players, preset=preset)
        card = game.opening_card
        start = game.options.start_card
        dealt = sorted(c.index for hand in game.initial_hands for c in hand)
        assert card == (start if start in dealt else dealt[0])
        assert card in {c.index for c in game.initial_hands[game.leader]}
        if not game.is_over:
            assert all(card in {c.index for c in play} for play in game.legal_plays())
        later = Game.from_seed(f"opening-{preset}-{i}", players, preset=preset,
                               starting=False, leader=0)
        assert later.opening_card is None
