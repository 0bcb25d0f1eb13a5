"""docs/rules.md §10 (and §2): the portable deal `tienlen-deal-v1`, checked against an independent
reference written from the spec in docs/contracts.md / docs/rules.md alone, and against
fixed vectors (the same ones docs/rules.md prints for other languages)."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator

import pytest

from bots_sdk.cards import format_cards
from bots_sdk.rules import Game, deal

RANKS = ["3", "4", "5", "6", "7", "8", "9", "10", "J", "Q", "K", "A", "2"]
SUITS = "SCDH"


def _words(seed: str) -> Iterator[int]:
    counter = 0
    while True:
        block = hashlib.sha256(
            b"tienlen-deal-v1\x00" + seed.encode("utf-8") + b"\x00" + counter.to_bytes(8, "big")
        ).digest()
        for k in range(0, 32, 4):
            yield int.from_bytes(block[k : k + 4], "big")
        counter += 1


def reference_deal(seed: str, players: int) -> list[str]:
    deck = list(range(52))
    words = _words(seed)
    for i in range(51, 0, -1):
        bound = i + 1
        limit = 2**32 - (2**32 % bound)
        u = next(words)
        while u >= limit:
            u = next(words)
        j = u % bound
        deck[i], deck[j] = deck[j], deck[i]
    return [
        " ".join(RANKS[c // 4] + SUITS[c % 4] for c in sorted(deck[13 * s : 13 * s + 13]))
        for s in range(players)
    ]


VECTORS = [
    (
        "example",
        4,
        [
            "3C 5S 5C 5D 7H 8S 8H 9D JD QC KD AS AC",
            "6C 6D 6H 7C 7D 8C 9S 9C 10H JS KS AD 2H",
            "3D 3H 4S 4D 5H 6S 9H 10S JC QS QD QH 2D",
            "3S 4C 4H 7S 8D 10C 10D JH KC KH AH 2S 2C",
        ],
    ),
    (
        "",
        2,
        [
            "4S 5C 6S 7C 8S 8H 9C JC JD KD 2S 2C 2H",
            "3H 4H 5S 7D 8C 10S 10H JS JH KC AS AC AH",
        ],
    ),
    (
        "Tiến Lên",
        3,
        [
            "3S 4S 5C 5D 5H 6D 6H 7C 8H 9C JD QH AS",
            "3D 5S 6S 6C 7H 8S 9S 10S 10C 10D 10H KC 2D",
            "3H 4C 7D 8C 8D 9D 9H JH KS KH AC 2C 2H",
        ],
    ),
]


@pytest.mark.parametrize(("seed", "players", "hands"), VECTORS)
def test_fixed_vectors(seed: str, players: int, hands: list[str]) -> None:
    assert reference_deal(seed, players) == hands
    assert [format_cards(h) for h in deal(seed, players)] == hands


@pytest.mark.parametrize("players", [2, 3, 4])
def test_engine_agrees_with_the_reference_over_many_seeds(players: int) -> None:
    for k in range(150):
        seed = f"table-{k}/game-{k % 7}"
        assert [format_cards(h) for h in deal(seed, players)] == reference_deal(seed, players)


def test_fewer_players_get_a_prefix_of_the_same_shuffle() -> None:
    four = deal("prefix", 4)
    assert deal("prefix", 2) == four[:2]
    assert deal("prefix", 3) == four[:3]


def test_every_seat_gets_13_distinct_sorted_cards() -> None:
    hands = deal("x", 4)
    assert all(len(h) == 13 and h == sorted(h) for h in hands)
    assert len({c for h in hands for c in h}) == 52


@pytest.mark.parametrize("players", [1, 5, 0])
def test_bad_player_count_is_a_clear_error(players: int) -> None:
    with pytest.raises(ValueError):
        deal("x", players)


def test_from_seed_plays_the_dealt_hands() -> None:
    g = Game.from_seed("example", 4, starting=True)
    assert g.seed == "example"
    assert [format_cards(h) for h in g.hands] == VECTORS[0][2]
    assert g.to_move == 3  # 3S is in seat 3's hand
