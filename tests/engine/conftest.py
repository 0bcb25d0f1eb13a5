"""Helpers for the rule tests: build hand-crafted positions and play them move by move.

Positions are written the way the rule book talks about them: seats are letters
(A = seat 0, B = 1, C = 2, D = 3) and a script is a list of moves separated by ";",
e.g. ``"A 5S; B pass; C 7D"``. Every move asserts first that it is that seat's turn,
so a script also checks who moves (skips of locked-out players included).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

import pytest

from bots_sdk.cards import Card, parse_cards
from bots_sdk.rules import Game

SEATS = "ABCD"


def C(text: str) -> list[Card]:
    """Cards from text ("3S 4H")."""
    return parse_cards(text)


def combo_set(plays: Iterable[Iterable[Card]]) -> set[frozenset[Card]]:
    """Plays as a set of card sets, so lazy sequences and orderings compare equal."""
    return {frozenset(p) for p in plays}


def make_game(
    *hands: str,
    preset: str = "south",
    leader: int | None = 0,
    starting: bool = False,
    options: dict | None = None,
) -> Game:
    """A game from hand texts; a non-starting game led by ``leader`` unless told otherwise."""
    kwargs: dict = {"preset": preset, "starting": starting}
    if not starting:
        kwargs["leader"] = leader
    if options:
        kwargs["options"] = options
    return Game([C(h) for h in hands], **kwargs)


def seat_of(letter: str) -> int:
    return SEATS.index(letter.upper())


def run(game: Game, script: str) -> Game:
    """Play a script of moves ("A 5S; B pass; ..."), checking whose turn each one is."""
    for step in (s.strip() for s in script.split(";")):
        if not step:
            continue
        who, _, what = step.partition(" ")
        seat = seat_of(who)
        assert game.to_move == seat, (
            f"expected {who} (seat {seat}) to move before '{step}', got {game.to_move}"
        )
        if what.strip().lower() == "pass":
            game.pass_turn()
        else:
            game.play(C(what))
    return game


def owed(game: Game) -> dict[tuple[int, int], int]:
    """Total points paid from seat to seat, summed over every payment line."""
    total: dict[tuple[int, int], int] = defaultdict(int)
    for p in game.payments:
        total[(p["from"], p["to"])] += p["points"]
    return dict(total)


def net_from_payments(game: Game) -> list[int]:
    pts = [0] * game.players
    for p in game.payments:
        pts[p["from"]] -= p["points"]
        pts[p["to"]] += p["points"]
    return pts


def assert_points(game: Game, expected: list[int]) -> None:
    """The result a user sees: points per seat, consistent with the payment lines."""
    assert game.is_over
    assert list(game.points) == expected
    assert net_from_payments(game) == expected
    assert sum(expected) == 0


@pytest.fixture
def cards():
    return C


def _rank_counts(hand: list[Card]) -> list[int]:
    counts = [0] * 13
    for card in hand:
        counts[card.rank] += 1
    return counts


def is_plain(hand: list[Card]) -> bool:
    """No instant win of any preset and no bomb: safe filler for a hand-crafted deal."""
    counts = _rank_counts(hand)
    pairs = sum(c // 2 for c in counts)
    triples = sum(1 for c in counts if c >= 3)
    distinct_low = sum(1 for c in counts[:12] if c)
    red = sum(1 for card in hand if card.suit >= 2)
    runs = any(all(counts[r + i] >= 2 for i in range(3)) for r in range(10))
    return (
        pairs < 5
        and triples < 2
        and max(counts) < 4
        and distinct_low < 11
        and 2 <= red <= 11
        and not runs
    )


def full_deal(fixed: dict[int, str], players: int = 4, seed: int = 0) -> list[list[Card]]:
    """13 cards per seat: the fixed cards as given, the rest filled with plain cards.

    A seat given 13 cards keeps exactly those; every filled seat passes `is_plain`, so
    only the hands a test writes out can hold an instant win or a bomb.
    """
    import random

    from bots_sdk.cards import DECK

    fixed_cards = {seat: C(text) for seat, text in fixed.items()}
    used = {card for hand in fixed_cards.values() for card in hand}
    assert sum(len(h) for h in fixed_cards.values()) == len(used), "a card is given twice"
    rest = [card for card in DECK if card not in used]
    rng = random.Random(seed)
    for _ in range(20000):
        rng.shuffle(rest)
        pool = iter(rest)
        hands = []
        for seat in range(players):
            hand = list(fixed_cards.get(seat, []))
            hand += [next(pool) for _ in range(13 - len(hand))]
            hands.append(sorted(hand))
        if all(is_plain(hands[s]) for s in range(players) if len(fixed_cards.get(s, [])) < 13):
            return hands
    raise AssertionError("could not fill the deal with plain hands")
