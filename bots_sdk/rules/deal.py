"""The portable seeded deal ``tienlen-deal-v1`` (docs/contracts.md, docs/rules.md).

SHA-256 in counter mode plus a rejection-sampled Fisher-Yates shuffle: any language with
SHA-256 can reproduce a deal bit for bit from the seed, and nothing depends on the Python
version's ``random`` module.
"""

from __future__ import annotations

import hashlib
import struct
from typing import Final

from bots_sdk.cards import DECK, Card

ALGORITHM = "tienlen-deal-v1"
_PREFIX = ALGORITHM.encode("ascii") + b"\x00"


_BLOCK: Final = 7  # digests per batch: 56 words, enough for the 51 draws unless one is rejected
_UNPACK: Final = struct.Struct(f">{8 * _BLOCK}I").unpack
# Rejection limits of the shuffle's draws: position i takes words below _LIMITS[i].
_LIMITS: Final = tuple(2**32 - (2**32 % (i + 1)) for i in range(52))


def _block(base: bytes, counter: int) -> list[int]:
    """The next 8 * _BLOCK words of the seed's byte stream, from digest ``counter`` on."""
    chunk = b"".join([hashlib.sha256(base + (counter + i).to_bytes(8, "big")).digest()
                      for i in range(_BLOCK)])
    words: list[int] = list(_UNPACK(chunk))
    return words


def shuffled_deck(seed: object) -> list[int]:
    """The 52 card integers in the order the seed shuffles them."""
    if not isinstance(seed, str):
        raise ValueError(f"a deal seed must be a string, got {type(seed).__name__}")
    base = _PREFIX + seed.encode("utf-8") + b"\x00"
    words = _block(base, 0)
    counter = _BLOCK
    pos = 0
    deck = list(range(52))
    for i in range(51, 0, -1):
        limit = _LIMITS[i]
        while True:
            if pos == len(words):  # consecutive words, rejected ones skipped, never reused
                words = _block(base, counter)
                counter += _BLOCK
                pos = 0
            u = words[pos]
            pos += 1
            if u < limit:
                break
        j = u % (i + 1)
        deck[i], deck[j] = deck[j], deck[i]
    return deck


def deal(seed: object, players: object) -> list[list[Card]]:
    """13 cards per seat, each hand sorted ascending; with fewer than 4 seats the rest is undealt."""
    if type(players) is not int or not 2 <= players <= 4:
        raise ValueError(f"a deal is for 2 to 4 players, got {players!r}")
    deck = shuffled_deck(seed)
    return [[DECK[c] for c in sorted(deck[13 * s: 13 * s + 13])] for s in range(players)]


def undealt(seed: object, players: int) -> list[Card]:
    """The cards set aside with fewer than four players (shown by replays afterwards)."""
    deck = shuffled_deck(seed)
    return [DECK[c] for c in sorted(deck[13 * players:])]
