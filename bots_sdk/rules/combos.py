"""The six combinations, their keys, normal beats and chops (docs/rules.md §3, §5, §9).

Internally a combination is a plain tuple ``(kind, size, key, mask)``: ``mask`` is the
52-bit set of its cards, ``key`` the index of its strongest card and ``size`` the number
of cards it counts as (a Huế split bomb counts as more cards than it holds). Tuples keep
the hot paths (legal-move generation, validation) free of object construction; the public
``Combination`` wraps one for bot authors.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final

from bots_sdk.cards import DECK, Card, cards_of_mask, parse_cards

from .options import Options, resolve_options

SINGLE: Final = 0
PAIR: Final = 1
TRIPLE: Final = 2
STRAIGHT: Final = 3
PAIR_SEQUENCE: Final = 4
FOUR_OF_A_KIND: Final = 5
KIND_NAMES: Final = ("single", "pair", "triple", "straight", "pair_sequence", "four_of_a_kind")
KIND_CODES: Final = {name: i for i, name in enumerate(KIND_NAMES)}

# Chop categories, numbered as options.CHOP_CATEGORIES (index + 1); 0 = not choppable.
CAT_2: Final = 1
CAT_22: Final = 2
CAT_PS3: Final = 3
CAT_QUAD: Final = 4
CAT_PS4: Final = 5

NOT_BEAT: Final = 0
NORMAL_BEAT: Final = 1
CHOP: Final = 2

RED_MASK: Final = sum(1 << i for i in range(52) if i & 3 >= 2)
TWOS_MASK: Final = 0xF << 48
RANK_MASKS: Final = tuple(0xF << (4 * r) for r in range(13))

#: (kind, size, key, mask): kind code, cards it counts as, index of its key card, card set.
Combo = tuple[int, int, int, int]


def category(combo: Combo) -> int:
    """Chop category of a combination: what it is on the chop tables (0 = none)."""
    kind = combo[0]
    if kind == SINGLE:
        return CAT_2 if combo[2] >= 48 else 0
    if kind == PAIR:
        return CAT_22 if combo[2] >= 48 else 0
    if kind == PAIR_SEQUENCE:
        return CAT_PS3 if combo[1] == 6 else CAT_PS4
    if kind == FOUR_OF_A_KIND:
        return CAT_QUAD
    return 0


def is_bomb(combo: Combo) -> bool:
    return category(combo) >= CAT_PS3


def classify_mask(m: int, opts: Options) -> Combo | None:
    """The combination formed by the card set ``m``, or None."""
    if not m:
        return None
    n = m.bit_count()
    key = m.bit_length() - 1
    if n == 1:
        return (SINGLE, 1, key, m)
    low = (m & -m).bit_length() - 1
    lo_rank = low >> 2
    hi_rank = key >> 2
    if lo_rank == hi_rank:
        if n == 2:
            return (PAIR, 2, key, m)
        if n == 3:
            return (TRIPLE, 3, key, m)
        return (FOUR_OF_A_KIND, 4, key, m)
    if hi_rank == 12 or n < 3:
        return None  # a 2 is never in a straight or a pair sequence
    nranks = hi_rank - lo_rank + 1
    if nranks == n:
        # straight: one card per rank, every rank present
        suits = -1
        for r in range(lo_rank, hi_rank + 1):
            nib = (m >> (4 * r)) & 15
            if nib & (nib - 1) or not nib:
                return None
            if opts.like_beats_like:
                if suits == -1:
                    suits = nib
                elif nib != suits:
                    return None
        return (STRAIGHT, n, key, m)
    if nranks * 2 == n and nranks >= 3 and opts.pair_sequences:
        for r in range(lo_rank, hi_rank + 1):
            if ((m >> (4 * r)) & 15).bit_count() != 2:
                return None
        return (PAIR_SEQUENCE, n, key, m)
    return None


def beat_kind(table: Combo, play: Combo, opts: Options) -> int:
    """NOT_BEAT, NORMAL_BEAT or CHOP: how ``play`` answers ``table`` under ``opts``."""
    ct = category(table)
    if ct:
        cp = category(play)
        if cp >= CAT_PS3 and (ct, cp) in opts.chop_pairs:
            if ct != cp:
                return CHOP
            if ct == CAT_PS4:
                if play[1] > table[1] or (play[1] == table[1] and play[2] > table[2]):
                    return CHOP
            elif play[2] > table[2]:
                return CHOP
    if (play[0] == table[0] and play[1] == table[1] and play[2] > table[2]
            and (not opts.like_beats_like or same_likeness(table, play))):
        return NORMAL_BEAT
    return NOT_BEAT


def same_likeness(a: Combo, b: Combo) -> bool:
    """North's like-beats-like: same suit (singles, straights) or the same colour mix."""
    if a[0] == SINGLE or a[0] == STRAIGHT:
        return (a[2] & 3) == (b[2] & 3)
    ra: int = a[3] & RED_MASK
    rb: int = b[3] & RED_MASK
    return ra.bit_count() == rb.bit_count()


def chop_value(combo: Combo, opts: Options) -> int:
    """Points a chopped (or stuck) 2, pair of 2s or bomb is worth (docs/rules.md §6.4)."""
    cat = category(combo)
    if cat in (CAT_2, CAT_22):
        m = combo[3]
        total = 0
        for idx in range(48, 52):
            if m >> idx & 1:
                total += opts.value_red_two if idx >= 50 else opts.value_black_two
        return total
    if cat == CAT_PS3:
        return opts.value_three_pairs
    if cat == CAT_QUAD:
        return opts.value_four_of_a_kind
    if cat == CAT_PS4:
        return opts.value_four_pairs
    return 0


class Combination:
    """A valid combination of cards: ``kind``, ``key`` (its strongest card), ``cards``."""

    __slots__ = ("kind", "key", "cards", "size", "_combo")

    def __init__(self, combo: Combo, cards: Iterable[Card] | None = None) -> None:
        self._combo = combo
        self.kind: str = KIND_NAMES[combo[0]]
        self.size: int = combo[1]
        self.key: Card = DECK[combo[2]]
        if cards is None:
            cards = cards_of_mask(combo[3])
        self.cards: tuple[Card, ...] = tuple(sorted(cards))

    @property
    def is_bomb(self) -> bool:
        return is_bomb(self._combo)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Combination):
            return self._combo == other._combo
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._combo)

    def __len__(self) -> int:
        return len(self.cards)

    def __repr__(self) -> str:
        return (f"Combination({self.kind}, key={self.key}, "
                f"cards={' '.join(str(c) for c in self.cards)})")


def _as_mask(cards: Iterable[Card | str | int] | str | Combination) -> tuple[int, int]:
    if isinstance(cards, Combination):
        return cards._combo[3], len(cards.cards)
    parsed = parse_cards(cards)
    m = 0
    for c in parsed:
        m |= c.bit
    return m, len(parsed)


def classify(cards: Iterable[Card | str | int] | str, preset: str = "south",
             options: Options | dict[str, Any] | None = None) -> Combination | None:
    """The combination the cards form under a preset, or None (a card named twice: None)."""
    opts = resolve_options(preset, options)
    m, n = _as_mask(cards)
    if m.bit_count() != n:
        return None
    combo = classify_mask(m, opts)
    return None if combo is None else Combination(combo)


def beats(play: Iterable[Card | str | int] | str, table: Iterable[Card | str | int] | str,
          preset: str = "south", options: Options | dict[str, Any] | None = None) -> bool:
    """True when ``play`` may be played on ``table`` (a normal beat or a chop)."""
    opts = resolve_options(preset, options)
    pm, pn = _as_mask(play)
    tm, tn = _as_mask(table)
    if pm.bit_count() != pn or tm.bit_count() != tn:
        return False
    p = classify_mask(pm, opts)
    t = classify_mask(tm, opts)
    if p is None or t is None:
        return False
    return beat_kind(t, p, opts) != NOT_BEAT
