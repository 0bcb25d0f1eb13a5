"""Legal-play generation: every distinct card set a seat may play now (docs/rules.md §3-§5).

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

import re
from bisect import bisect_right
from collections.abc import Iterator, Sequence
from itertools import product
from typing import Final, SupportsIndex, overload

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
NIB_SINGLES: Final = tuple(_submasks(n, 1) for n in range(16))
NIB_PAIRS: Final = tuple(_submasks(n, 2) for n in range(16))
NIB_TRIPLES: Final = tuple(_submasks(n, 3) for n in range(16))
HAS1: Final = tuple(n != 0 for n in range(16))
HAS2: Final = tuple(n.bit_count() >= 2 for n in range(16))
# North's suited straights: per suit, the one choice a rank offers (or none).
NIB_SUIT: Final = tuple(tuple([1 << s] if n >> s & 1 else [] for n in range(16)) for s in range(4))
HAS_SUIT: Final = tuple(tuple(bool(n >> s & 1) for n in range(16)) for s in range(4))
SHIFTS: Final = tuple(4 * r for r in range(13))
POP: Final = tuple(n.bit_count() for n in range(16))
NPAIRS: Final = tuple(len(NIB_PAIRS[n]) for n in range(16))
# The same, already shifted to each rank: PAIRS_AT[rank][nibble] -> list of card sets.
PAIRS_AT: Final = tuple(tuple([p << (4 * r) for p in NIB_PAIRS[n]] for n in range(16))
                 for r in range(13))
TRIPLES_AT: Final = tuple(tuple([p << (4 * r) for p in NIB_TRIPLES[n]] for n in range(16))
                   for r in range(13))
SUIT_MASKS: Final = tuple(sum(1 << (4 * r + s) for r in range(13)) for s in range(4))
NTRIPLES: Final = tuple(len(NIB_TRIPLES[n]) for n in range(16))
# bytes.translate tables: a hand's 13 rank nibbles as bytes, and per-nibble counts.
_LOWNIB: Final = bytes(b & 15 for b in range(256))
_HIGHNIB: Final = bytes(b >> 4 for b in range(256))
_NPAIRS_T: Final = bytes(NPAIRS) + bytes(240)
_NTRIPLES_T: Final = bytes(NTRIPLES) + bytes(240)
# Runs of 3+ ranks (C-speed regex over the nibble bytes of ranks 3..A).
_RUN1: Final = re.compile(rb"[\x01-\x0f]{3,}")
_RUN2: Final = re.compile(bytes("[" + "".join(f"\\x{n:02x}" for n in range(16) if HAS2[n]) + "]{3,}",
                         "ascii"))
_RUN_SUIT: Final = tuple(
    re.compile(bytes("[" + "".join(f"\\x{n:02x}" for n in range(16) if n >> s & 1) + "]{3,}",
                     "ascii"))
    for s in range(4)
)
SETS_AT: Final = {2: PAIRS_AT, 3: TRIPLES_AT}
SET_COUNTS: Final = {2: NPAIRS, 3: NTRIPLES}


def rank_nibbles(hand: int) -> bytes:
    """The 13 rank nibbles (suit sets) of a hand as bytes, built by C-level byte ops."""
    packed = hand.to_bytes(7, "little")
    b = bytearray(14)
    b[0::2] = packed.translate(_LOWNIB)
    b[1::2] = packed.translate(_HIGHNIB)
    return bytes(b[:13])

# A group: (kind, size, factors, key, count) — the plays are every choice of one mask from
# each factor list, OR-ed; key -1 means "the highest card of the play". Three lazy forms:
# factors as an int is a set of single cards (play i = its i-th card), as bytes the rank
# nibbles of a hand (its pairs or triples, rank by rank), and as a tuple a run family
# (``_family``: per, first rank, nibbles, choices per nibble, minimum length).
Choices = tuple[list[int], ...]
FamilySpec = tuple[int, int, bytes, Choices, int]
Factors = int | bytes | FamilySpec | list[list[int]]
Group = tuple[int, int, Factors, int, int]


def nibbles(hand: int) -> list[int]:
    """The 13 rank nibbles (suit sets) of a hand, 3s first."""
    return [(hand >> s) & 15 for s in SHIFTS]


def bits(m: int) -> list[int]:
    """The single-card sets of a card set, ascending."""
    out: list[int] = []
    while m:
        low = m & -m
        out.append(low)
        m ^= low
    return out


class LegalPlays:
    """A lazy, indexable sequence of plays (each a list of Card), equal to a list of lists.

    Items handed out are remembered by card set (``issued``), so ``Game.play`` can accept
    them without re-validating; the game drops this object whenever its state changes.
    A registered ``collections.abc.Sequence`` (not a subclass, so mypyc can compile it).
    """

    __slots__ = ("_groups", "_cum", "_n", "issued")

    _groups: list[Group]
    _cum: list[int]
    _n: int
    issued: dict[int, Combo]

    @classmethod
    def single_group(cls, group: Group) -> LegalPlays:
        """The plays of one group (the common case), without the general set-up loop."""
        return cls([group], group[4])

    def __init__(self, groups: list[Group], total: int = -1) -> None:
        if total >= 0:
            cum = [total]
        else:
            cum = []
            total = 0
            for g in groups:
                total += g[4]
                cum.append(total)
        self._groups = groups
        self._cum = cum
        self._n = total
        self.issued = {}

    def __len__(self) -> int:
        return self._n

    def mask_at(self, i: int) -> int:
        """Card set of play ``i`` (also recorded as issued)."""
        cum = self._cum
        gi = bisect_right(cum, i) if len(cum) > 1 else 0
        kind, size, factors, key, _count = self._groups[gi]
        rem = i - cum[gi - 1] if gi else i
        mask = 0
        if isinstance(factors, int):  # singles: the rem-th card of a card set
            m = factors
            for _ in range(rem):
                m &= m - 1
            mask = m & -m
        elif isinstance(factors, tuple):
            mask, size = decode_family(factors, rem)
        elif isinstance(factors, bytes):  # pairs or triples of a hand's rank nibbles
            counts = SET_COUNTS[size]
            at = SETS_AT[size]
            for r in range(len(factors)):
                nib = factors[r]
                c = counts[nib]
                if rem < c:
                    mask = at[r][nib][rem]
                    break
                rem -= c
        elif len(factors) == 1:
            mask = factors[0][rem]
        else:
            for f in factors:
                rem, j = divmod(rem, len(f))
                mask |= f[j]
        self.issued[mask] = (kind, size, key if key >= 0 else mask.bit_length() - 1, mask)
        return mask

    def masks(self) -> list[int]:
        """Every play's card set, in index order (all recorded as issued).

        For callers that need the whole list (the referee sends every legal play with each
        move request): one pass per group instead of decoding each index from scratch,
        which for a long straight family costs a loop over its intervals per play."""
        out: list[int] = []
        issued = self.issued
        for kind, size, factors, key, _count in self._groups:
            start = len(out)
            if isinstance(factors, int):  # singles of a card set, ascending
                m = factors
                while m:
                    low = m & -m
                    out.append(low)
                    m ^= low
            elif isinstance(factors, tuple):  # a run family: by start, then length
                per, first, nibs, choices, min_len = factors
                n = len(nibs)
                for a in range(n - min_len + 1):
                    for b in range(a + min_len, n + 1):
                        # the first rank varies fastest, as in decode_family
                        fac = [[o << SHIFTS[first + q] for o in choices[nibs[q]]]
                               for q in range(b - 1, a - 1, -1)]
                        run = [sum(t) for t in product(*fac)]
                        run_size = (b - a) * per
                        out.extend(run)
                        for mask in run:
                            issued[mask] = (kind, run_size, mask.bit_length() - 1, mask)
                continue
            elif isinstance(factors, bytes):  # pairs or triples, rank by rank
                at = SETS_AT[size]
                for r in range(len(factors)):
                    out.extend(at[r][factors[r]])
            elif len(factors) == 1:
                out.extend(factors[0])
            else:  # a product group: the first factor varies fastest
                out.extend(sum(t) for t in product(*reversed(factors)))
            if key >= 0:
                for i in range(start, len(out)):
                    issued[out[i]] = (kind, size, key, out[i])
            else:
                for i in range(start, len(out)):
                    mask = out[i]
                    issued[mask] = (kind, size, mask.bit_length() - 1, mask)
        return out

    @overload
    def __getitem__(self, i: SupportsIndex) -> list[Card]: ...
    @overload
    def __getitem__(self, i: slice) -> list[list[Card]]: ...

    def __getitem__(self, i: SupportsIndex | slice) -> list[Card] | list[list[Card]]:
        if isinstance(i, int) and 0 <= i < self._n:  # the usual case, first
            return cards_of_mask(self.mask_at(i))
        if isinstance(i, slice):
            return [cards_of_mask(self.mask_at(j)) for j in range(*i.indices(self._n))]
        k = i.__index__()
        if k < 0:
            k += self._n
        if not 0 <= k < self._n:
            raise IndexError("legal play index out of range")
        return cards_of_mask(self.mask_at(k))

    def __iter__(self) -> Iterator[list[Card]]:
        for i in range(self._n):
            yield cards_of_mask(self.mask_at(i))

    def __reversed__(self) -> Iterator[list[Card]]:
        for i in range(self._n - 1, -1, -1):
            yield cards_of_mask(self.mask_at(i))

    def __contains__(self, play: object) -> bool:
        return any(p == play for p in self)

    def index(self, play: object, start: int = 0, stop: int | None = None) -> int:
        """The index of ``play`` (a list of cards, in ascending order); ValueError if absent."""
        for i in range(start, self._n if stop is None else min(stop, self._n)):
            if cards_of_mask(self.mask_at(i)) == play:
                return i
        raise ValueError(f"{play!r} is not a legal play")

    def count(self, play: object) -> int:
        return sum(1 for p in self if p == play)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, LegalPlays | Sequence) and not isinstance(other, str):
            return len(other) == self._n and list(self) == [list(x) for x in other]
        return NotImplemented

    def __ne__(self, other: object) -> bool:
        equal = self.__eq__(other)
        return equal if equal is NotImplemented else not equal

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"LegalPlays({self._n} plays)"

    def combos(self) -> Iterator[Combo]:
        """Every play as an engine combination tuple (kind, size, key, mask)."""
        for i in range(self._n):
            yield self.issued[self.mask_at(i)]


Sequence.register(LegalPlays)


# ---------------------------------------------------------------- group builders

def _flat(kind: int, size: int, masks: list[int]) -> list[Group]:
    return [(kind, size, [masks], -1, len(masks))] if masks else []


def _sets(rs: list[int], table: tuple[tuple[list[int], ...], ...],
          first_rank: int = 0) -> list[int]:
    """Same-rank sets (pairs or triples: ``PAIRS_AT``/``TRIPLES_AT``) from ``first_rank`` up,
    ascending."""
    return [m for r in range(first_rank, 13) for m in table[r][rs[r]]]


def run_groups(rs: list[int], kind: int, has: tuple[bool, ...], choices: Choices,
               lengths: range, key: int = -1) -> list[Group]:
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


def decode_family(spec: FamilySpec, rem: int) -> tuple[int, int]:
    """(mask, size) of play ``rem`` of a lazy run family (intervals by start, then length)."""
    per, start, nibs, choices, min_len = spec
    n = len(nibs)
    cs = [len(choices[x]) for x in nibs]
    for a in range(n - min_len + 1):
        p = 1
        for b in range(a, n):
            p *= cs[b]
            if b - a + 1 >= min_len:
                if rem < p:
                    mask = 0
                    for q in range(a, b + 1):
                        rem, j = divmod(rem, cs[q])
                        mask |= choices[nibs[q]][j] << SHIFTS[start + q]
                    return mask, (b - a + 1) * per
                rem -= p
    raise IndexError("run family index out of range")


def expand_family(group: Group) -> list[Group]:
    """A lazy run family as explicit product groups (for filtering)."""
    kind, _size, spec, key, _count = group
    if not isinstance(spec, tuple):
        return [group]
    per, start, nibs, choices, min_len = spec
    f = [[o << SHIFTS[start + q] for o in choices[x]] for q, x in enumerate(nibs)]
    out: list[Group] = []
    for a in range(len(nibs) - min_len + 1):
        for b in range(a + min_len, len(nibs) + 1):
            fac = f[a:b]
            count = 1
            for x in fac:
                count *= len(x)
            out.append((kind, (b - a) * per, fac, key, count))
    return out


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


def _family(nb: bytes, start: int, end: int, kind: int, choices: Choices) -> Group:
    """Every straight (or pair sequence) within ranks start..end-1, as one lazy group.

    Only the count is computed here, in O(run length): the number of intervals of at least
    three ranks, each weighted by its suit variants, is the sum over b of
    c[b] * c[b-1] * E[b-2], where E[b] = c[b] * (1 + E[b-1]) sums the products of every
    interval ending at b. The plays themselves are decoded on access (``decode_family``).
    """
    nibs = nb[start:end]
    total = e2 = e1 = prev = 0
    for x in nibs:
        c = len(choices[x])
        total += c * prev * e2
        e2, e1 = e1, c * (1 + e1)
        prev = c
    per = 1 if kind == STRAIGHT else 2
    return (kind, 0, (per, start, nibs, choices, 3), -1, total)


def lead_groups(hand: int, opts: Options) -> list[Group]:
    """Every combination of the hand (the leader's choices), all lazy.

    Singles are the hand itself, pairs and triples the rank nibbles (decoded on access),
    straights and pair sequences one run family per run, found by a regex over the nibble
    bytes: a lead is a handful of C-level byte operations and one small loop per run.
    """
    nb = rank_nibbles(hand)
    groups: list[Group] = [(SINGLE, 1, hand, -1, hand.bit_count())]
    npairs = sum(nb.translate(_NPAIRS_T))
    if npairs:
        groups.append((PAIR, 2, nb, -1, npairs))
        ntriples = sum(nb.translate(_NTRIPLES_T))
        if ntriples:
            groups.append((TRIPLE, 3, nb, -1, ntriples))
            if 15 in nb:
                quads = [15 << SHIFTS[r] for r in range(13) if nb[r] == 15]
                groups.append((FOUR_OF_A_KIND, 4, [quads], -1, len(quads)))
        if opts.pair_sequences:
            for run in _RUN2.finditer(nb, 0, 12):
                groups.append(_family(nb, run.start(), run.end(), PAIR_SEQUENCE, NIB_PAIRS))
    if opts.like_beats_like:
        for s in range(4):
            for run in _RUN_SUIT[s].finditer(nb, 0, 12):
                groups.append(_family(nb, run.start(), run.end(), STRAIGHT, NIB_SUIT[s]))
    else:
        for run in _RUN1.finditer(nb, 0, 12):
            groups.append(_family(nb, run.start(), run.end(), STRAIGHT, NIB_SINGLES))
    return groups


def flat_masks(group: Group) -> list[int] | None:
    """The plays of a one-factor group as a list of masks (None for other groups)."""
    kind, size, factors, _key, _count = group
    if type(factors) is int:
        return bits(factors)
    if type(factors) is bytes:
        at = SETS_AT[size]
        return [m for r, nib in enumerate(factors) for m in at[r][nib]]
    if type(factors) is list and len(factors) == 1:
        return factors[0]
    return None


def normal_beat_groups(hand: int, table: Combo, opts: Options) -> list[Group]:
    """Plays of the table's type and size with a higher key (§3), like-for-like in north."""
    kind, size, key, tmask = table
    like = opts.like_beats_like
    if kind == SINGLE:
        m = (hand >> (key + 1)) << (key + 1)
        if like:
            m &= SUIT_MASKS[key & 3]
        return [(SINGLE, 1, m, -1, m.bit_count())] if m else []
    if kind in (PAIR, TRIPLE):
        table_at = PAIRS_AT if kind == PAIR else TRIPLES_AT
        masks = []
        for r in range(key >> 2, 13):
            nib = (hand >> SHIFTS[r]) & 15
            if POP[nib] >= size:
                masks += table_at[r][nib]
        if masks and masks[0].bit_length() - 1 <= key:
            masks = [m for m in masks if m.bit_length() - 1 > key]
        if like:
            reds = (tmask & RED_MASK).bit_count()
            masks = [m for m in masks if (m & RED_MASK).bit_count() == reds]
        return [(kind, size, [masks], -1, len(masks))] if masks else []
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


_LOW: Final = sum(1 << (4 * r) for r in range(13))  # bit 0 of every rank's nibble
_LOW3: Final = _LOW * 7
_LOW2: Final = _LOW * 3
_NOT_TWOS: Final = (1 << 48) - 1


def may_hold_four_pairs(hand: int) -> bool:
    """Whether the hand holds a pair sequence of 4+ pairs (bit-parallel, like below)."""
    h = hand & _NOT_TWOS
    two = (h & (h >> 1) & _LOW3) | (h & (h >> 2) & _LOW2) | (h & (h >> 3) & _LOW)
    two = (two | (two >> 1) | (two >> 2)) & _LOW
    return bool(two & (two >> 4) & (two >> 8) & (two >> 12))


def may_hold_bomb(hand: int) -> bool:
    """False only if the hand has no four of a kind and no three consecutive pairs.

    Bit-parallel over the 13 nibbles, so most answers to a 2 skip the chop search.
    """
    h = hand & _NOT_TWOS
    two = (h & (h >> 1) & _LOW3) | (h & (h >> 2) & _LOW2) | (h & (h >> 3) & _LOW)
    two = (two | (two >> 1) | (two >> 2)) & _LOW  # bit 4r: rank r holds a pair
    if two & (two >> 4) & (two >> 8):
        return True
    return bool(hand & (hand >> 1) & (hand >> 2) & (hand >> 3) & _LOW)  # 2s too


def answer_groups(hand: int, table: Combo, opts: Options) -> list[Group]:
    """Every play that beats or chops the table."""
    groups = normal_beat_groups(hand, table, opts)
    # only 2s and bombs can be chopped, and only by bombs
    if (table[2] >= 48 or table[0] >= PAIR_SEQUENCE) and may_hold_bomb(hand):
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
    out: list[Group] = []
    expanded: list[Group] = []
    for g in groups:
        expanded.extend(expand_family(g))
    for g in expanded:
        kind, size, factors, key, _count = g
        flat = flat_masks(g)
        if flat is not None:
            only = [m for m in flat if m & bit]
            if only:
                out.append((kind, size, [only], key, len(only)))
            continue
        if not isinstance(factors, list):  # expanded above: every other group is a product
            raise AssertionError("unexpected group form")
        new_factors: list[list[int]] = []
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
