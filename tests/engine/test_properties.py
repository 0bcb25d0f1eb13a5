"""Invariants over random deals and random legal play, for every preset and 2, 3 and 4
players: cards are conserved, every game ends, points sum to zero, legal plays are
accepted and other card sets rejected with a reason, `beats` agrees with `legal_plays`,
replays reproduce the result, and a seat's view never shows cards it may not see."""

from __future__ import annotations

import functools
import itertools
import json
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bots_sdk.cards import DECK, Card
from bots_sdk.rules import PRESETS, Game, beats, classify, replay_game

CARD_TEXT = {str(c) for c in DECK}
MAX_MOVES = 600  # far above any real game (52 cards, at most a few passes per play)
SET_LIMIT = 1000  # enumerate legal plays as a set only when there are at most this many

PROPERTY_SETTINGS = settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    derandomize=True,
)


def _public_cards(game: Game) -> set[Card]:
    played: set[Card] = set()
    for move in game.history:
        for text in move.get("cards") or ():
            played.add(Card(text))
    return played


def _card_strings(value) -> set[str]:
    """Every string in a JSON-like value that names a card."""
    found: set[str] = set()
    if isinstance(value, str):
        if value in CARD_TEXT:
            found.add(value)
    elif isinstance(value, dict):
        for v in value.values():
            found |= _card_strings(v)
    elif isinstance(value, list | tuple):
        for v in value:
            found |= _card_strings(v)
    return found


def _check_views(game: Game, public: set[Card]) -> None:
    for seat in range(game.players):
        view = game.view(seat).to_dict()
        json.dumps(view)  # JSON-ready
        visible = {Card(t) for t in _card_strings(view)}
        allowed = set(game.hands[seat]) | public
        assert visible <= allowed, f"seat {seat} sees {sorted(visible - allowed)}"
        assert sorted(Card(t) for t in view["hand"]) == sorted(game.hands[seat])


def _random_subset(rng: random.Random, hand: list[Card]) -> list[Card]:
    size = rng.randint(1, min(len(hand), 8))
    return rng.sample(hand, size)


def _start_card(game: Game) -> Card | None:
    """The card the first play of a starting game must contain, if it is still owed."""
    if not game.starting or any(m.get("cards") for m in game.history):
        return None
    dealt = sorted(c for h in game.initial_hands for c in h)
    wanted = Card(game.options.start_card)
    return wanted if wanted in dealt else dealt[0]


def _expected_plays(game: Game, hand: list[Card], table) -> set[frozenset[Card]]:
    """Every legal play by the rules alone: combinations that beat the table (or, when
    leading, every combination, holding the start card in a starting game's first play)."""
    preset = game.preset
    start = _start_card(game) if table is None else None
    expected = set()
    for size in range(1, len(hand) + 1):
        for subset in itertools.combinations(hand, size):
            cards = list(subset)
            if classify(cards, preset=preset) is None:
                continue
            if table is not None and not beats(cards, list(table.cards), preset=preset):
                continue
            if start is not None and start not in subset:
                continue
            expected.add(frozenset(cards))
    return expected


def stuck_value(hand: list[Card], opts) -> int:
    """docs/rules.md §6.4 by brute force: the best total over disjoint 2s and bombs.

    Bombs other than 2s only care about how many cards of each rank are left, so a search
    over rank counts finds the best disjoint set; a stuck 3S (hue, danang) is one card.
    """
    counts = [0] * 13
    for c in hand:
        counts[c.rank] += 1
    twos = [c for c in hand if c.rank == 12]
    total = sum(opts.value_red_two if c.suit >= 2 else opts.value_black_two for c in twos)
    if len(twos) == 4:
        total = max(total, opts.value_four_of_a_kind)
    has_3s = bool(opts.stuck_three_spades) and any(c.index == 0 for c in hand)

    @functools.cache
    def best(cnt: tuple[int, ...], r: int, spade: bool) -> int:
        if r >= 12:
            return 0
        options = [best(cnt, r + 1, spade)]
        if r == 0 and spade and cnt[0] >= 1:
            less = (cnt[0] - 1, *cnt[1:])
            options.append(opts.stuck_three_spades + best(less, 0, False))
        if cnt[r] == 4:
            options.append(opts.value_four_of_a_kind + best(_minus(cnt, r, 1, 4), r, spade))
        if opts.pair_sequences:
            k = 0
            while r + k < 12 and cnt[r + k] >= 2:
                k += 1
                if k >= 3:
                    value = opts.value_three_pairs if k == 3 else opts.value_four_pairs
                    options.append(value + best(_minus(cnt, r, k, 2), r, spade))
        return max(options)

    return total + best(tuple(counts[:12]), 0, has_3s)


def _minus(cnt: tuple[int, ...], start: int, length: int, amount: int) -> tuple[int, ...]:
    out = list(cnt)
    for i in range(start, start + length):
        out[i] -= amount
    return tuple(out)


def _check_stuck_payments(game: Game) -> None:
    """Who pays for stuck cards, and how much (§6.2, §6.4), against `stuck_value`."""
    opts = game.options
    if (
        game.instant_winner is not None
        or game.end_reason == "blind_three"
        or game.den_bai is not None
        or (opts.split_bombs and game.starting)
    ):
        return
    order = list(game.finishing_order)
    last = order[-1]
    frozen = set(game.frozen)
    for seat in range(game.players):
        paid = sum(
            p["points"] for p in game.payments if p["from"] == seat and p["reason"] == "stuck"
        )
        if seat in frozen:
            expected = stuck_value(game.hands[seat], opts) if opts.frozen_pays_stuck else 0
        elif seat == last:
            expected = stuck_value(game.hands[seat], opts)
        else:
            expected = 0
        assert paid == expected, (seat, [str(c) for c in game.hands[seat]], game.payments)


def _state(game: Game):
    return (game.to_move, game.offer, game.can_pass, tuple(map(tuple, game.hands)))


def _play_random_game(game: Game, rng: random.Random) -> None:
    hands = [set(h) for h in game.hands]
    dealt = set().union(*hands)
    public: set[Card] = set()
    preset = game.preset
    split_bombs = game.options.split_bombs and game.starting
    for step in range(MAX_MOVES):
        if game.is_over:
            break
        seat = game.to_move
        hand = sorted(hands[seat])
        legal = game.legal_plays()
        n = len(legal)
        assert n > 0 or game.can_pass, "a player with no legal play must be able to pass"
        legal_set = {frozenset(p) for p in legal} if n <= SET_LIMIT else None

        # Random card sets: rejected with a reason unless legal; beats agrees with legal.
        table = game.table  # the combination to beat, None when leading
        for _ in range(3):
            subset = _random_subset(rng, hand)
            key = frozenset(subset)
            if legal_set is not None and key not in legal_set:
                before = _state(game)
                with pytest.raises(ValueError) as exc:
                    game.play(subset)
                assert str(exc.value).strip()
                assert _state(game) == before
            if (
                legal_set is not None
                and table is not None
                and game.offer is None
                and not split_bombs
            ):
                expected = classify(subset, preset=preset) is not None and beats(
                    subset, list(table.cards), preset=preset
                )
                assert (key in legal_set) == expected, (subset, table)

        # Small hands: every subset, so legal_plays is complete as well as sound.
        if legal_set is not None and len(hand) <= 7 and game.offer is None and not split_bombs:
            assert legal_set == _expected_plays(game, hand, table), (hand, table)

        # Someone else's card is never accepted.
        others = [c for c in DECK if c not in hands[seat]]
        with pytest.raises(ValueError):
            game.play([rng.choice(others)])

        if step % 15 == 0:
            _check_views(game, public)

        # Move: a pass now and then, otherwise a uniformly random legal play.
        if game.can_pass and (n == 0 or rng.random() < 0.3):
            game.pass_turn()
            assert [set(h) for h in game.hands] == hands
        else:
            play = legal[rng.randrange(n)]
            game.play(play)
            # Cards are conserved: exactly the played cards left exactly that hand.
            hands[seat] -= set(play)
            public |= set(play)
            assert [set(h) for h in game.hands] == hands
    assert game.is_over, "the game did not end"
    assert _public_cards(game) == public
    assert set().union(*hands) | public == dealt
    _check_views(game, public)


@pytest.mark.parametrize("players", [2, 3, 4])
@pytest.mark.parametrize("preset", sorted(PRESETS))
@PROPERTY_SETTINGS
@given(
    seed=st.text(max_size=12),
    starting=st.booleans(),
    leader=st.integers(min_value=0, max_value=3),
    move_seed=st.integers(min_value=0, max_value=2**32 - 1),
)
def test_random_games_keep_every_invariant(
    preset, players, seed, starting, leader, move_seed
) -> None:
    # The moves come from a seeded PRNG rather than st.randoms(): hypothesis instruments
    # every call of st.randoms(), which made each game ~30x slower on a 2-core machine.
    game = Game.from_seed(seed, players, preset=preset, starting=starting, leader=leader % players)
    _play_random_game(game, random.Random(move_seed))

    points = list(game.points)
    assert len(points) == players and sum(points) == 0
    assert sorted(game.finishing_order) == list(range(players))
    net = [0] * players
    for p in game.payments:
        assert p["points"] > 0 and p["from"] != p["to"]
        net[p["from"]] -= p["points"]
        net[p["to"]] += p["points"]
    assert net == points
    _check_stuck_payments(game)

    replay = json.loads(json.dumps(game.replay()))
    again = replay_game(replay)
    assert again.is_over
    assert list(again.points) == points
    assert list(again.finishing_order) == list(game.finishing_order)
    assert again.payments == game.payments
    assert list(again.frozen) == list(game.frozen)
    assert again.instant_winner == game.instant_winner
    assert again.history == game.history
    assert again.replay() == replay


@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_a_tampered_replay_is_rejected(preset) -> None:
    game = Game.from_seed("tamper", 4, preset=preset, starting=True)
    rng = random.Random(1)
    while not game.is_over:
        legal = game.legal_plays()
        if game.can_pass and (not legal or rng.random() < 0.3):
            game.pass_turn()
        else:
            game.play(legal[rng.randrange(len(legal))])
    replay = game.replay()
    replay["result"]["points"] = [
        p + (1 if i == 0 else -1 if i == 1 else 0) for i, p in enumerate(replay["result"]["points"])
    ]
    with pytest.raises(ValueError):
        replay_game(replay)


@pytest.mark.parametrize("players", [2, 3, 4])
@pytest.mark.parametrize("preset", sorted(PRESETS))
@settings(max_examples=8, deadline=None, derandomize=True)
@given(table_seed=st.text(max_size=8), move_seed=st.integers(min_value=0, max_value=2**32 - 1))
def test_a_table_carries_only_the_leader_and_the_starting_flag(
    preset, players, table_seed, move_seed
) -> None:
    from bots_sdk.rules import Table

    rng = random.Random(move_seed)
    table = Table(players, preset=preset)
    totals = [0] * players
    expect_starting, expect_leader = True, None
    for index in range(4):
        game = table.new_game(seed=f"{table_seed}/{index}")
        assert game.starting is expect_starting
        if not expect_starting and game.instant_winner is None and not game.offer:
            assert game.to_move == expect_leader
        while not game.is_over:
            legal = game.legal_plays()
            if game.can_pass and (not legal or rng.random() < 0.3):
                game.pass_turn()
            else:
                game.play(legal[rng.randrange(len(legal))])
        table.finish_game(game)
        totals = [t + p for t, p in zip(totals, game.points, strict=True)]
        assert list(table.totals) == totals and sum(totals) == 0
        expect_starting = game.instant_winner is not None
        winner = game.finishing_order[0]
        expect_leader = (
            None if expect_starting else (game.den_bai if game.den_bai is not None else winner)
        )
        assert game.next_starting is expect_starting
        assert game.next_leader == expect_leader
    assert table.games_played == 4
