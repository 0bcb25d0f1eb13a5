"""Legal-move generation checked against a naive oracle written straight from docs/rules.md.

The oracle enumerates every subset of the mover's hand and keeps those that form a
combination (§3) and answer the table (normal beat §3 or chop §5/§9) — slow, obvious code
that shares nothing with the engine's bitmask tables.
"""

from __future__ import annotations

import itertools
import random

import pytest

from bots_sdk.cards import Card
from bots_sdk.rules import PRESETS, Game

KINDS = ("single", "pair", "triple", "straight", "pair_sequence", "four_of_a_kind")


def naive_classify(cards: tuple[Card, ...], preset: str):
    """(kind, size, key index) or None, from the rule book's table."""
    opts = PRESETS[preset]
    cards = tuple(sorted(cards))
    n = len(cards)
    ranks = [c.rank for c in cards]
    key = cards[-1].index
    if n == 1:
        return ("single", 1, key)
    if len(set(ranks)) == 1:
        return ({2: "pair", 3: "triple", 4: "four_of_a_kind"}[n], n, key)
    if 12 in ranks:
        return None
    distinct = sorted(set(ranks))
    consecutive = distinct == list(range(distinct[0], distinct[0] + len(distinct)))
    if n >= 3 and len(distinct) == n and consecutive:
        if opts.like_beats_like and len({c.suit for c in cards}) != 1:
            return None
        return ("straight", n, key)
    if (opts.pair_sequences and n >= 6 and n % 2 == 0 and consecutive
            and all(ranks.count(r) == 2 for r in distinct)):
        return ("pair_sequence", n, key)
    return None


def category(combo) -> str | None:
    kind, size, key = combo
    if kind == "single" and key >= 48:
        return "2"
    if kind == "pair" and key >= 48:
        return "22"
    if kind == "pair_sequence":
        return "ps3" if size == 6 else "ps4"
    if kind == "four_of_a_kind":
        return "quad"
    return None


def naive_answers(play, play_cards, table, table_cards, preset: str) -> bool:
    opts = PRESETS[preset]
    ct, cp = category(table), category(play)
    if ct and cp in ("ps3", "quad", "ps4") and f"{ct}>{cp}" in opts.chops:
        if ct != cp:
            return True
        if ct == "ps4" and (play[1] > table[1] or (play[1] == table[1] and play[2] > table[2])):
            return True
        if ct != "ps4" and play[2] > table[2]:
            return True
    if play[0] == table[0] and play[1] == table[1] and play[2] > table[2]:
        if not opts.like_beats_like:
            return True
        if play[0] in ("single", "straight"):
            return play[2] % 4 == table[2] % 4
        reds = sum(c.suit >= 2 for c in play_cards)
        return reds == sum(c.suit >= 2 for c in table_cards)
    return False


def oracle(game: Game) -> set[frozenset[Card]]:
    seat = game.to_move
    hand = game.hands[seat]
    table = game.table
    out = set()
    first = not game.history and game.starting
    for k in range(1, len(hand) + 1):
        for sub in itertools.combinations(hand, k):
            combo = naive_classify(sub, game.preset)
            if combo is None:
                continue
            if first:
                # the starting game's first play contains the start card (3S; 3C in hue),
                # or the weakest dealt card when that one is undealt
                start = Card(PRESETS[game.preset].start_card)
                dealt = {c for h in game.initial_hands for c in h}
                need = start if start in dealt else min(dealt)
                if need not in sub:
                    continue
            if table is not None:
                t = (table.kind, table.size, table.key.index)
                if not naive_answers(combo, sub, t, table.cards, game.preset):
                    continue
            out.add(frozenset(sub))
    return out


def random_states(preset: str, games: int, seed: int):
    rng = random.Random(seed)
    for g_i in range(games):
        game = Game.from_seed(f"oracle-{preset}-{g_i}", rng.choice((2, 3, 4)), preset=preset,
                              starting=rng.random() < 0.5, leader=rng.randrange(2))
        while not game.is_over:
            yield game
            plays = game.legal_plays()
            k = rng.randrange(len(plays) + (1 if game.can_pass else 0))
            if k == len(plays):
                game.pass_turn()
            else:
                game.play(plays[k])


@pytest.mark.parametrize("preset", ["south", "north", "danang", "hue", "south_extended"])
def test_legal_plays_match_the_naive_oracle(preset: str) -> None:
    checked = 0
    for game in random_states(preset, games=6, seed=7):
        if game.offer is not None or len(game.hands[game.to_move]) > 11:
            continue
        got = [frozenset(p) for p in game.legal_plays()]
        assert len(got) == len(set(got)), "a card set is offered twice"
        if any(game._emp3) or any(game._emp6):
            continue  # Huế split bombs: covered by test_engine_presets
        assert set(got) == oracle(game), (game.history, game.hands[game.to_move], game.table)
        checked += 1
    assert checked > 10


@pytest.mark.parametrize("preset", ["south", "north", "danang", "hue", "south_extended"])
def test_every_card_set_is_accepted_exactly_when_it_is_offered(preset: str) -> None:
    """play() must accept precisely legal_plays(): try every subset of small hands."""
    checked = 0
    for game in random_states(preset, games=4, seed=11):
        hand = game.hands[game.to_move]
        if len(hand) > 8:
            continue
        legal = {frozenset(p) for p in game.legal_plays()}
        for k in range(1, len(hand) + 1):
            for sub in itertools.combinations(hand, k):
                try:
                    game._validate(game.to_move, sum(c.bit for c in sub), len(sub), list(sub))
                    accepted = True
                except ValueError:
                    accepted = False
                assert accepted == (frozenset(sub) in legal), (sub, game.table, game.offer)
        checked += 1
    assert checked > 5


def test_lazy_sequence_behaves_like_a_list() -> None:
    game = Game.from_seed("lazy", 4)
    plays = game.legal_plays()
    as_list = list(plays)
    assert plays == as_list and len(plays) == len(as_list)
    assert plays[-1] == as_list[-1] and plays[1:3] == as_list[1:3]
    with pytest.raises(IndexError):
        plays[len(plays)]


@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_masks_lists_every_play_in_index_order(preset: str) -> None:
    """masks() (the referee sends every play) equals decoding each index, and issues the
    same combinations, so play() accepts exactly what was listed."""
    checked = 0
    for game in random_states(preset, games=8, seed=5):
        plays = game.legal_plays()
        by_index = [plays.mask_at(i) for i in range(len(plays))]
        issued = dict(plays.issued)
        plays.issued.clear()
        assert plays.masks() == by_index
        assert plays.issued == issued
        assert [sum(c.bit for c in p) for p in plays] == by_index
        checked += 1
    assert checked > 100


def test_bomb_precheck_never_misses_a_bomb() -> None:
    """may_hold_bomb() lets answers skip the chop search; it must never say no wrongly."""
    from bots_sdk.rules.moves import may_hold_bomb, may_hold_four_pairs

    rng = random.Random(0)
    for _ in range(20000):
        cards = rng.sample(range(52), rng.randrange(1, 14))
        if rng.random() < 0.2:
            cards = sorted(set(cards[:9]) | {48, 49, 50, 51})
        counts = [sum(1 for c in cards if c >> 2 == r) for r in range(13)]
        truth = 4 in counts or any(all(counts[r + i] >= 2 for i in range(3)) for r in range(10))
        assert may_hold_bomb(sum(1 << c for c in cards)) == truth, sorted(cards)
        four = any(all(counts[r + i] >= 2 for i in range(4)) for r in range(9))
        assert may_hold_four_pairs(sum(1 << c for c in cards)) == four, sorted(cards)
