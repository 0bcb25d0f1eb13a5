"""The portable seeded deal ``tienlen-deal-v1`` (docs/contracts.md, docs/rules.md).

SHA-256 in counter mode plus a rejection-sampled Fisher-Yates shuffle: any language with
SHA-256 can reproduce a deal bit for bit from the seed, and nothing depends on the Python
version's ``random`` module.
"""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Iterator

from bots_sdk.cards import DECK, Card

ALGORITHM = "tienlen-deal-v1"
_PREFIX = ALGORITHM.encode("ascii") + b"\x00"


_BLOCK = 7  # digests per batch: 56 words, enough for the 51 draws unless one is rejected
_UNPACK = struct.Struct(f">{8 * _BLOCK}I").unpack


def _words(seed: str) -> Iterator[int]:
    """Consecutive 4-byte big-endian unsigned integers of the seed's byte stream."""
    base = _PREFIX + seed.encode("utf-8") + b"\x00"
    counter = 0
    while True:
        chunk = b"".join(hashlib.sha256(base + (counter + i).to_bytes(8, "big")).digest()
                         for i in range(_BLOCK))
        yield from _UNPACK(chunk)
        counter += _BLOCK


def shuffled_deck(seed: str) -> list[int]:
    """The 52 card integers in the order the seed shuffles them."""
    if not isinstance(seed, str):
        raise ValueError(f"a deal seed must be a string, got {type(seed).__name__}")
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
    return deck


def deal(seed: str, players: int) -> list[list[Card]]:
    """13 cards per seat, each hand sorted ascending; with fewer than 4 seats the rest is undealt."""
    if type(players) is not int or not 2 <= players <= 4:
        raise ValueError(f"a deal is for 2 to 4 players, got {players!r}")
    deck = shuffled_deck(seed)
    return [[DECK[c] for c in sorted(deck[13 * s: 13 * s + 13])] for s in range(players)]


def undealt(seed: str, players: int) -> list[Card]:
    """The cards set aside with fewer than four players (shown by replays afterwards)."""
    deck = shuffled_deck(seed)
    return [DECK[c] for c in sorted(deck[13 * players:])]
