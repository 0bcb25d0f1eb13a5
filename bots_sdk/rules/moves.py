"""Legal-play generation: every distinct card set a seat may play now (RULES.md §3-§5).

Speed matters here (bots and benchmarks call it every turn), so:
- a hand is a 52-bit integer, one 4-bit suit set ("nibble") per rank, and per-nibble tables
  give the singles, pairs and triples of a rank without looping over cards;
- answering a table only looks at ranks at or above the table's key;
- straights and pair sequences are *product groups* (one list of choices per rank), and
  ``LegalPlays`` is a lazy sequence over groups: its length is a sum of products and item
  ``i`` is decoded in mixed radix, so a random pick never materialises the hundreds of
  suit variants of a long straight.
Nothing is cached per hand: between two of its own plays a seat faces at most one table
per round (a pass locks it out), so a cache would almost never be hit.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterator, Sequence

from bots_sdk.cards import Card, cards_of_mask

from .combos import (
    CAT_22,
    CAT_PS3,
    CAT_PS4,
    CAT_QUAD,
    FOUR_OF_A_KIND,
    PAIR,
    PAIR_SEQUENCE,
    RED_MASK,
    SINGLE,
    STRAIGHT,
    TRIPLE,
    Combo,
    category,
)
from .options import Options


def _submasks(nib: int, k: int) -> list[int]:
    return sorted(s for s in range(16) if s & nib == s and s.bit_count() == k)


# Per 4-bit suit set of one rank: its single cards, pairs and triples, ascending. For
# same-rank sets, ascending value is ascending key (highest bit).
NIB_SINGLES = tuple(_submasks(n, 1) for n in range(16))
NIB_PAIRS = tuple(_submasks(n, 2) for n in range(16))
NIB_TRIPLES = tuple(_submasks(n, 3) for n in range(16))
HAS1 = tuple(n != 0 for n in range(16))
HAS2 = tuple(n.bit_count() >= 2 for n in range(16))
# North's suited straights: per suit, the one choice a rank offers (or none).
NIB_SUIT = tuple(tuple([1 << s] if n >> s & 1 else [] for n in range(16)) for s in range(4))
HAS_SUIT = tuple(tuple(bool(n >> s & 1) for n in range(16)) for s in range(4))
SHIFTS = tuple(4 * r for r in range(13))
SUIT_MASKS = tuple(sum(1 << (4 * r + s) for r in range(13)) for s in range(4))

# A group: (kind, size, factors, key, count) — the plays are every choice of one mask from
# each factor list, OR-ed; key -1 means "the highest card of the play".
Group = tuple


def nibbles(hand: int) -> list[int]:
    return [(hand >> s) & 15 for s in SHIFTS]


def bits(m: int) -> list[int]:
    out = []
    while m:
        low = m & -m
        out.append(low)
        m ^= low
    return out


class LegalPlays(Sequence):
    """A lazy, indexable sequence of plays (each a list of Card), equal to a list of lists.

    Items handed out are remembered by card set (``issued``), so ``Game.play`` can accept
    them without re-validating; the game drops this object whenever its state changes.
    """

    __slots__ = ("_groups", "_cum", "_n", "issued")

    def __init__(self, groups: list[Group]) -> None:
        cum = []
        total = 0
        for g in groups:
            total += g[4]
            cum.append(total)
        self._groups = groups
        self._cum = cum
        self._n = total
        self.issued: dict[int, Combo] = {}

    def __len__(self) -> int:
        return self._n

    def mask_at(self, i: int) -> int:
        """Card set of play ``i`` (also recorded as issued)."""
        cum = self._cum
        gi = bisect_right(cum, i) if len(cum) > 1 else 0
        kind, size, factors, key, _count = self._groups[gi]
        rem = i - cum[gi - 1] if gi else i
        if len(factors) == 1:
            mask = factors[0][rem]
        else:
            mask = 0
            for f in factors:
                rem, j = divmod(rem, len(f))
                mask |= f[j]
        self.issued[mask] = (kind, size, key if key >= 0 else mask.bit_length() - 1, mask)
        return mask

    def __getitem__(self, i):  # type: ignore[override]
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(self._n))]
        if i < 0:
            i += self._n
        if not 0 <= i < self._n:
            raise IndexError("legal play index out of range")
        return cards_of_mask(self.mask_at(i))

    def __iter__(self) -> Iterator[list[Card]]:
        for i in range(self._n):
            yield cards_of_mask(self.mask_at(i))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Sequence) and not isinstance(other, str):
            return len(other) == self._n and list(self) == [list(x) for x in other]
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"LegalPlays({self._n} plays)"

    def combos(self) -> Iterator[Combo]:
        """Every play as an engine combination tuple (kind, size, key, mask)."""
        for i in range(self._n):
            yield self.issued[self.mask_at(i)]


# ---------------------------------------------------------------- group builders

def _flat(kind: int, size: int, masks: list[int]) -> list[Group]:
    return [(kind, size, [masks], -1, len(masks))] if masks else []


def _sets(rs: list[int], table: tuple, first_rank: int = 0) -> list[int]:
    """Same-rank sets (pairs or triples by ``table``) from ``first_rank`` up, ascending."""
    return [p << SHIFTS[r] for r in range(first_rank, 13) for p in table[rs[r]]]


def run_groups(rs: list[int], kind: int, has: tuple, choices: tuple, lengths: range,
               key: int = -1) -> list[Group]:
    """Straights (per=1) or pair sequences: every run of ``lengths`` ranks, top card > key."""
    per = 1 if kind == STRAIGHT else 2
    key_rank = key >> 2 if key >= 0 else -1
    min_len = lengths.start
    groups: list[Group] = []
    start = -1
    for r in range(13):
        if r < 12 and has[rs[r]]:
            if start < 0:
                start = r
            continue
        if start < 0:
            continue
        n = r - start
        if n >= min_len and r - 1 >= key_rank:
            f = [[o << SHIFTS[q] for o in choices[rs[q]]] for q in range(start, r)]
            for length in lengths:
                if length > n:
                    break
                for a in range(0, n - length + 1):
                    top = start + a + length - 1
                    if top < key_rank:
                        continue
                    fac = f[a:a + length]
                    if top == key_rank:
                        last = [m for m in fac[-1] if m.bit_length() - 1 > key]
                        if not last:
                            continue
                        fac = fac[:-1] + [last]
                    count = 1
                    for x in fac:
                        count *= len(x)
                    groups.append((kind, length * per, fac, -1, count))
        start = -1
    return groups


def straight_groups(rs: list[int], opts: Options, lengths: range, key: int = -1,
                    suit: int = -1) -> list[Group]:
    if not opts.like_beats_like:
        return run_groups(rs, STRAIGHT, HAS1, NIB_SINGLES, lengths, key)
    groups: list[Group] = []
    for s in range(4) if suit < 0 else (suit,):
        groups.extend(run_groups(rs, STRAIGHT, HAS_SUIT[s], NIB_SUIT[s], lengths, key))
    return groups


def pair_sequence_groups(rs: list[int], opts: Options, lengths: range,
                         key: int = -1) -> list[Group]:
    if not opts.pair_sequences:
        return []
    return run_groups(rs, PAIR_SEQUENCE, HAS2, NIB_PAIRS, lengths, key)


def lead_groups(hand: int, opts: Options) -> list[Group]:
    """Every combination of the hand (the leader's choices)."""
    rs = nibbles(hand)
    groups = _flat(SINGLE, 1, bits(hand))
    pairs = _sets(rs, NIB_PAIRS)
    if pairs:
        groups.append((PAIR, 2, [pairs], -1, len(pairs)))
        triples = _sets(rs, NIB_TRIPLES)
        if triples:
            groups.append((TRIPLE, 3, [triples], -1, len(triples)))
            quads = [15 << SHIFTS[r] for r in range(13) if rs[r] == 15]
            groups.extend(_flat(FOUR_OF_A_KIND, 4, quads))
        groups.extend(pair_sequence_groups(rs, opts, range(3, 7)))
    groups.extend(straight_groups(rs, opts, range(3, 13)))
    return groups


def normal_beat_groups(hand: int, table: Combo, opts: Options) -> list[Group]:
    """Plays of the table's type and size with a higher key (§3), like-for-like in north."""
    kind, size, key, tmask = table
    like = opts.like_beats_like
    if kind == SINGLE:
        m = (hand >> (key + 1)) << (key + 1)
        if like:
            m &= SUIT_MASKS[key & 3]
        return _flat(SINGLE, 1, bits(m)) if m else []
    if kind in (PAIR, TRIPLE):
        rs = nibbles(hand)
        masks = _sets(rs, NIB_PAIRS if kind == PAIR else NIB_TRIPLES, key >> 2)
        if masks and masks[0].bit_length() - 1 <= key:
            masks = [m for m in masks if m.bit_length() - 1 > key]
        if like:
            reds = (tmask & RED_MASK).bit_count()
            masks = [m for m in masks if (m & RED_MASK).bit_count() == reds]
        return _flat(kind, size, masks)
    if kind == FOUR_OF_A_KIND:
        return _flat(FOUR_OF_A_KIND, 4, [15 << SHIFTS[r] for r in range((key >> 2) + 1, 13)
                                         if (hand >> SHIFTS[r]) & 15 == 15])
    rs = nibbles(hand)
    if kind == STRAIGHT:
        return straight_groups(rs, opts, range(size, size + 1), key,
                               key & 3 if like else -1)
    return pair_sequence_groups(rs, opts, range(size // 2, size // 2 + 1), key)


def chop_groups(hand: int, table: Combo, opts: Options, only_ps4: bool = False) -> list[Group]:
    """Bombs that chop the table (§5) and are not same-type normal beats."""
    ct = category(table)
    if not ct:
        return []
    pairs = opts.chop_pairs
    rs = nibbles(hand)
    groups: list[Group] = []
    if not only_ps4:
        if (ct, CAT_PS3) in pairs and ct != CAT_PS3:
            groups.extend(pair_sequence_groups(rs, opts, range(3, 4)))
        if (ct, CAT_QUAD) in pairs and ct != CAT_QUAD:
            groups.extend(_flat(FOUR_OF_A_KIND, 4,
                                [15 << SHIFTS[r] for r in range(13) if rs[r] == 15]))
    if (ct, CAT_PS4) in pairs:
        # the same number of pairs as a pair-sequence table is a normal beat (made there)
        start = table[1] // 2 + 1 if ct == CAT_PS4 else 4
        groups.extend(pair_sequence_groups(rs, opts, range(start, 7)))
    return groups


def answer_groups(hand: int, table: Combo, opts: Options) -> list[Group]:
    """Every play that beats or chops the table."""
    groups = normal_beat_groups(hand, table, opts)
    if table[2] >= 48 or table[0] >= PAIR_SEQUENCE:  # only 2s and bombs can be chopped
        groups.extend(chop_groups(hand, table, opts))
    return groups


def ps4_chop_groups(hand: int, table: Combo, opts: Options) -> list[Group]:
    """Pair sequences of 4+ pairs that chop the table (out-of-turn chop offers)."""
    ct = category(table)
    if (ct, CAT_PS4) not in opts.chop_pairs:
        return []
    groups = chop_groups(hand, table, opts, only_ps4=True)
    if ct == CAT_PS4:
        groups = normal_beat_groups(hand, table, opts) + groups
    return groups


def three_pair_groups(hand: int, opts: Options, above: int = -1) -> list[Group]:
    """Three-pair sequences with a key above ``above`` (stealing the lead)."""
    return pair_sequence_groups(nibbles(hand), opts, range(3, 4), above)


def restrict_to_card(groups: list[Group], bit: int) -> list[Group]:
    """Only the plays that contain the card ``bit`` (the starting game's first play)."""
    rank_mask = 15 << ((bit.bit_length() - 1) & ~3)
    out = []
    for kind, size, factors, key, _count in groups:
        if len(factors) == 1:
            only = [m for m in factors[0] if m & bit]
            if only:
                out.append((kind, size, [only], key, len(only)))
            continue
        new_factors = []
        found = False
        count = 1
        for f in factors:
            if f and f[0] & rank_mask:
                f = [m for m in f if m & bit]
                found = True
            new_factors.append(f)
            count *= len(f)
        if found and count:
            out.append((kind, size, new_factors, key, count))
    return out


__all__ = [
    "CAT_22", "CAT_PS3", "CAT_PS4", "CAT_QUAD", "LegalPlays", "answer_groups", "lead_groups",
    "ps4_chop_groups", "restrict_to_card", "three_pair_groups",
]  # fmt: skip
