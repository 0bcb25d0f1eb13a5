"""Determinization: every sampled deal fits the seat's view exactly, and the consistent
deals come out uniformly (chi-square against an exhaustive enumeration, fixed seeds).

The oracle used here is deliberately independent of the sampler's own shortcuts: a deal
is consistent when the engine, dealt it, replaying the public history (declining offers
the history does not show accepted) gives the seat the very same view."""

from __future__ import annotations

import itertools
import random
from collections import Counter
from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy.stats import chisquare

from bots_sdk.bot import View
from bots_sdk.cards import DECK, parse_cards
from bots_sdk.determinize import Deal, Determinizer, InconsistentView, sample_deal
from bots_sdk.rules import PRESETS, Game


def random_game(preset: str, players: int, seed: int, moves: int, starting: bool) -> Game:
    rng = random.Random(seed)
    game = Game.from_seed(f"det/{seed}", players, preset=preset, starting=starting,
                          leader=rng.randrange(players))
    for _ in range(moves):
        if game.is_over:
            break
        plays = game.legal_plays()
        i = rng.randrange(len(plays) + game.can_pass)
        game.pass_turn() if i == len(plays) else game.play(plays[i])
    return game


def oracle_consistent(view, hands, preset: str, options=None) -> bool:
    """Replay the public history on this deal; consistent iff the seat sees the same."""
    played = [[] for _ in range(view.players)]
    for move in view.history:
        if move.get("cards"):
            played[move["seat"]].extend(parse_cards(move["cards"]))
    initial = [list(h) + played[s] for s, h in enumerate(hands)]
    game = Game(initial, preset=preset, starting=view.starting,
                leader=None if view.starting else view.leader, options=options)
    try:
        for move in view.history:
            while game.offer is not None and (game.to_move != move["seat"]
                                              or game.offer != move.get("offer")):
                game.pass_turn()
            if game.is_over:
                return False
            if move.get("cards"):
                game.play(move["cards"], seat=move["seat"])
            else:
                game.pass_turn(seat=move["seat"])
        if view.to_move == view.seat:
            while game.offer is not None and (game.to_move != view.seat
                                              or game.offer != view.offer):
                game.pass_turn()
    except ValueError:
        return False
    if game.is_over:
        return False
    return game.view(view.seat).to_dict() == view.to_dict()


def enumerate_deals(det: Determinizer) -> list[tuple[tuple[int, ...], ...]]:
    """Every split of the unseen cards into the hidden hands (and the undealt rest)."""
    unknown = [c.index for c in det.unknown]
    counts = det.hidden_counts
    seats = [s for s in range(len(counts)) if counts[s]]
    out = []

    def rec(i: int, left: list[int], acc: list[tuple[int, ...]]) -> None:
        if i == len(seats):
            out.append(tuple(acc))
            return
        for combo in itertools.combinations(left, counts[seats[i]]):
            rest = [c for c in left if c not in combo]
            rec(i + 1, rest, [*acc, combo])

    rec(0, unknown, [])
    return [dict(zip(seats, d, strict=True)) for d in out]  # type: ignore[misc]


def key_of(deal: Deal, seats: list[int]) -> tuple[tuple[int, ...], ...]:
    return tuple(tuple(c.index for c in deal.hands[s]) for s in seats)


def hands_of(view, split: dict[int, tuple[int, ...]]) -> list[list]:
    return [list(view.hand) if s == view.seat else [DECK[i] for i in split.get(s, ())]
            for s in range(view.players)]


# ---------------------------------------------------------------- consistency


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(preset=st.sampled_from(sorted(PRESETS)), players=st.sampled_from([2, 3, 4]),
       seed=st.integers(0, 10**6), moves=st.integers(0, 60), starting=st.booleans())
def test_every_sample_reproduces_the_seats_view(preset, players, seed, moves, starting):
    game = random_game(preset, players, seed, moves, starting)
    if game.is_over:
        return
    seat = game.to_move
    view = game.view(seat)
    det = Determinizer(View(view))
    assert det.is_consistent(game.hands)  # the true deal is one of them
    rng = random.Random(seed)
    for _ in range(3):
        deal = det.sample(rng)
        assert sorted(len(h) for h in deal.hands) == sorted(view.card_counts)
        assert deal.hands[seat] == view.hand
        seen = [c for h in deal.hands for c in h] + list(deal.undealt)
        assert len(seen) == len(set(seen)) == 52 - sum(len(p) for p in deal.played)
        assert oracle_consistent(view, deal.hands, preset)
        again = det.game_for(deal).view(seat)
        assert again.to_dict() == view.to_dict()
        assert det.sample_game(rng).view(seat).to_dict() == view.to_dict()


def test_views_of_seats_not_to_move_are_sampled_too():
    game = random_game("danang", 4, 7, 25, False)
    for seat in range(4):
        view = game.view(seat)
        det = Determinizer(view)
        for _ in range(5):
            assert oracle_consistent(view, det.sample(random.Random(seat)).hands, "danang")


# ---------------------------------------------------------------- uniformity


def chi_square_uniform(det: Determinizer, view, preset: str, samples: int, seed: int,
                       options=None):
    splits = enumerate_deals(det)
    consistent = [s for s in splits if oracle_consistent(view, hands_of(view, s), preset,
                                                          options)]
    seats = [s for s in range(view.players) if det.hidden_counts[s]]
    index = {tuple(split[s] for s in seats): i for i, split in enumerate(consistent)}
    rng = random.Random(seed)
    counts = Counter(index[key_of(det.sample(rng), seats)] for _ in range(samples))
    observed = [counts.get(i, 0) for i in range(len(consistent))]
    return splits, consistent, chisquare(observed)


def late_four_player_view():
    """A south position late in a 4-player game: 7 hidden cards in three hands."""
    for seed in range(500):
        game = random_game("south", 4, seed, 200, True)
        # walk back: replay the same game and stop when the hidden total is 6-8 cards
        rng = random.Random(seed)
        g = Game.from_seed(f"det/{seed}", 4, starting=True, leader=rng.randrange(4))
        while not g.is_over:
            s = g.to_move
            hidden = sum(c for t, c in enumerate(g.card_counts) if t != s)
            if 6 <= hidden <= 7 and sum(1 for t, c in enumerate(g.card_counts)
                                        if t != s and c) == 3:
                return g.view(s)
            plays = g.legal_plays()
            i = rng.randrange(len(plays) + g.can_pass)
            g.pass_turn() if i == len(plays) else g.play(plays[i])
        del game
    raise AssertionError("no late position found")


def test_uniform_over_every_split_of_a_late_four_player_position():
    view = late_four_player_view()
    det = Determinizer(view)
    splits, consistent, result = chi_square_uniform(det, view, "south", 20_000, seed=11)
    assert len(consistent) == len(splits) >= 90  # nothing but the counts constrains it here
    assert result.pvalue > 0.001, result


def instant_win_constrained_view():
    """Two players, a later game led by seat 1, which plays five pairs and a lone 8D while
    seat 0 passes: seat 1 has two cards left, and its dealt hand was no instant win."""
    x = parse_cards("3S 3C 5S 5C 7S 7C 9S 9C JS JC 8D KH AD")
    me = parse_cards("3D 4S 4H 6S 6D 8S 10S 10H QC KS AC 2S 2D")
    game = Game([me, x], starting=False, leader=1)
    for play in ("3S 3C", "5S 5C", "7S 7C", "9S 9C", "JS JC", "8D"):
        game.play(play, seat=1)
        if play != "8D":
            game.pass_turn(seat=0)
    assert game.to_move == 0
    return game


def test_no_instant_win_is_dealt_and_the_rest_is_uniform():
    game = instant_win_constrained_view()
    view = game.view(0)
    det = Determinizer(view)
    splits, consistent, result = chi_square_uniform(det, view, "south", 30_000, seed=5)
    excluded = [s for s in splits if s not in consistent]
    # The public game excludes real deals: a pair (six pairs), any 8 (a pair with 8D) or
    # two black cards (twelve black cards).
    assert len(excluded) > 50
    pair = (parse_cards("KC")[0].index, parse_cards("KD")[0].index)
    assert {1: pair} in excluded
    assert result.pvalue > 0.001, result
    for deal in (det.sample(random.Random(i)) for i in range(500)):
        ranks = [c.rank for c in deal.hands[1]]
        assert ranks[0] != ranks[1] and 5 not in ranks  # rank 5 is the 8


def test_a_first_play_without_the_start_card_proves_the_weaker_cards_undealt():
    # Two players, a starting game: 3S and 3C are undealt, so 3D leads (with 4H).
    a = parse_cards("3D 4H 6S 7C 8D 9H 10S JC QD KH AS 2C 5D")
    b = parse_cards("4S 5S 6C 7D 8H 9S 10C JD QH KS AC 2D 3H")
    game = Game([a, b], starting=True)
    assert game.to_move == 0
    game.play("3D 4H 5D")  # a straight: the weakest dealt card must be in it
    view = game.view(1)
    det = Determinizer(view)
    assert {str(c) for c in det.known_undealt} == {"3S", "3C"}
    rng = random.Random(3)
    in_hand = Counter()
    n = 4000
    for _ in range(n):
        deal = det.sample(rng)
        assert {"3S", "3C"} <= {str(c) for c in deal.undealt}
        in_hand.update(c.index for c in deal.hands[0])
    # Every other unseen card is in seat 0's 10 hidden cards with the same probability.
    free = [c.index for c in det.unknown if str(c) not in ("3S", "3C")]
    result = chisquare([in_hand[i] for i in free])
    assert result.pvalue > 0.001, result
    assert sum(in_hand.values()) == 10 * n


def test_a_lone_three_that_chopped_was_four_threes_in_hue():
    # hue, starting game: the 3C holder (seat 0, with all four 3s) opens 3C; seat 1 plays
    # 2H; seat 0 chops it with 3S alone, which only four 3s make legal. So 3D and 3H,
    # unseen, are in seat 0's hand in every consistent deal.
    a = parse_cards("3S 3C 3D 3H 5S 6C 7D 8H 9S 10C JD QH KS")
    b = parse_cards("4S 4C 5D 6H 7S 8C 9D 10H JS QC KD AH 2H")
    c = parse_cards("4D 4H 5C 6S 7C 8D 9H 10S JC QD KH AS 2S")
    game = Game([a, b, c], preset="hue", starting=True)
    game.play("3C", seat=0)
    game.play("2H", seat=1)
    game.pass_turn(seat=2)
    game.play("3S", seat=0)
    assert game.table.kind == "four_of_a_kind"
    view = game.view(1)
    det = Determinizer(view)
    rng = random.Random(8)
    for _ in range(200):
        deal = det.sample(rng)
        assert {"3D", "3H"} <= {str(card) for card in deal.hands[0]}
        assert det.sample_game(rng).table.kind == "four_of_a_kind"


def test_while_another_seat_is_offered_a_chop_it_holds_the_bomb():
    # danang: after a pair of 2s, a seat holding a pair sequence of 4+ pairs is offered
    # an out-of-turn chop; the others see nobody to move.
    a = parse_cards("2S 2C 3S 9D 10H JD QH KS AS 5C 6D 7H 8S")
    b = parse_cards("4S 4C 5S 5D 6S 6H 7S 7C 9S 10D JS QD KC")
    c = parse_cards("3C 3D 3H 4D 4H 5H 6C 7D 8C 8D 8H 9C 9H")
    game = Game([a, b, c], preset="danang", starting=False, leader=0)
    assert game.offer == "steal_lead" and game.to_move == 1
    game.pass_turn(seat=1)  # declines stealing the lead: private
    game.play("2S 2C", seat=0)
    assert game.offer == "out_of_turn_chop" and game.to_move == 1
    view = game.view(2)
    assert view.to_move is None
    det = Determinizer(view)
    rng = random.Random(2)
    for _ in range(100):
        deal = det.sample(rng)
        assert oracle_consistent(view, deal.hands, "danang")
        # someone other than seat 2 can chop 2S 2C with four consecutive pairs
        hand = sorted(c.rank for c in deal.hands[1])
        pairs = {r for r in set(hand) if hand.count(r) >= 2 and r < 12}
        assert any(all(r + k in pairs for k in range(4)) for r in pairs)


# ---------------------------------------------------------------- bad input


def test_bad_views_get_clear_errors():
    game = random_game("south", 4, 1, 0, True)
    view = game.view(0)
    with pytest.raises(TypeError, match="View or SeatView"):
        Determinizer(object())
    over = Game([parse_cards("3S"), parse_cards("4S")], starting=False, leader=0)
    over.play("3S")
    with pytest.raises(InconsistentView, match="over"):
        Determinizer(over.view(1))
    with pytest.raises(InconsistentView, match="unknown card"):
        Determinizer(replace(view, history=({"seat": 1, "cards": ["ZZ"]},)))
    with pytest.raises(InconsistentView, match="seen twice"):
        Determinizer(replace(view, history=({"seat": 1, "cards": [str(view.hand[0])]},)))
    with pytest.raises(InconsistentView, match="bad seat"):
        Determinizer(replace(view, history=({"seat": 7, "pass": True},)))
    with pytest.raises(InconsistentView, match="unknown preset"):
        Determinizer(replace(view, preset="mars"))
    with pytest.raises(InconsistentView, match="count"):
        Determinizer(replace(view, card_counts=(12, 13, 13, 13)))
    with pytest.raises(TypeError, match="options"):
        Determinizer(view, options=3)
    with pytest.raises(ValueError, match="unknown option"):
        Determinizer(view, options={"nope": 1})
    det = Determinizer(view)
    assert not det.is_consistent([[], [], [], []])
    with pytest.raises(InconsistentView, match="does not fit"):
        det.game_for([list(view.hand), [], [], []])
    assert sample_deal(view, random.Random(1)).hands[0] == view.hand
