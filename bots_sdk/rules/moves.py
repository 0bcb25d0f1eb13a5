"""Legal-play generation: every distinct card set a seat may play now (RULES.md §3-§5).

Speed matters here (bots and benchmarks call it every turn), so:
- a hand is a 52-bit integer and its combinations are built per type on first use and kept
  in a ``HandIndex`` until the hand changes;
- plays of one type are kept sorted by key, so answering a table is a ``bisect``;
- straights and pair sequences are *product groups* (one list of choices per rank), and
  ``LegalPlays`` is a lazy sequence over those groups: its length is a product of list
  lengths and item ``i`` is decoded in mixed radix, so a random pick never materialises the
  hundreds of suit variants of a long straight.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
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
    beat_kind,
    category,
)
from .options import Options


def _submasks(nib: int, k: int) -> list[int]:
    return sorted(s for s in range(16) if s & nib == s and s.bit_count() == k)


# Per 4-bit suit set of one rank: its single cards, pairs and triples, ascending. For
# same-rank sets, ascending value is ascending key (highest bit), which bisect relies on.
NIB_SINGLES = tuple(_submasks(n, 1) for n in range(16))
NIB_PAIRS = tuple(_submasks(n, 2) for n in range(16))
NIB_TRIPLES = tuple(_submasks(n, 3) for n in range(16))
SHIFTS = tuple(4 * r for r in range(13))

# A group: (kind, size, factors, key) — the plays are every choice of one mask from each
# factor list, OR-ed; key -1 means "the highest card of the play".
Group = tuple


class HandIndex:
    """The combinations of one hand, built per type on first use."""

    __slots__ = ("hand", "rs", "opts", "_singles", "_pairs", "_triples", "_quads",
                 "_straights", "_pairseqs")

    def __init__(self, hand: int, opts: Options) -> None:
        self.hand = hand
        self.rs = [(hand >> s) & 15 for s in SHIFTS]
        self.opts = opts
        self._singles: list[int] | None = None
        self._pairs: list[int] | None = None
        self._triples: list[int] | None = None
        self._quads: list[int] | None = None
        self._straights: dict[int, list] = {}
        self._pairseqs: dict[int, list] = {}

    # --- sets of one rank (flat, sorted ascending = by key) ---
    def singles(self) -> list[int]:
        if self._singles is None:
            out = []
            m = self.hand
            while m:
                low = m & -m
                out.append(low)
                m ^= low
            self._singles = out
        return self._singles

    def pairs(self) -> list[int]:
        if self._pairs is None:
            out: list[int] = []
            for r, nib in enumerate(self.rs):
                if nib.bit_count() >= 2:
                    s = SHIFTS[r]
                    out.extend(p << s for p in NIB_PAIRS[nib])
            self._pairs = out
        return self._pairs

    def triples(self) -> list[int]:
        if self._triples is None:
            out: list[int] = []
            for r, nib in enumerate(self.rs):
                if nib.bit_count() >= 3:
                    s = SHIFTS[r]
                    out.extend(p << s for p in NIB_TRIPLES[nib])
            self._triples = out
        return self._triples

    def quads(self) -> list[int]:
        if self._quads is None:
            self._quads = [15 << SHIFTS[r] for r, nib in enumerate(self.rs) if nib == 15]
        return self._quads

    # --- runs (product groups), per length, ascending by top rank ---
    def straights(self, length: int) -> list[tuple[int, list[list[int]]]]:
        """[(top_rank, factors)]; in like-beats-like mode one group per suit and run."""
        got = self._straights.get(length)
        if got is not None:
            return got
        out: list[tuple[int, list[list[int]]]] = []
        rs = self.rs
        if self.opts.like_beats_like:
            for top in range(length - 1, 12):
                common = 15
                for r in range(top - length + 1, top + 1):
                    common &= rs[r]
                    if not common:
                        break
                for suit_bit in NIB_SINGLES[common]:
                    out.append((top, [[suit_bit << SHIFTS[r]]
                                      for r in range(top - length + 1, top + 1)]))
        else:
            run = 0
            for top in range(12):
                run = run + 1 if rs[top] else 0
                if run >= length:
                    out.append((top, [[b << SHIFTS[r] for b in NIB_SINGLES[rs[r]]]
                                      for r in range(top - length + 1, top + 1)]))
        self._straights[length] = out
        return out

    def pair_sequences(self, pairs: int) -> list[tuple[int, list[list[int]]]]:
        got = self._pairseqs.get(pairs)
        if got is not None:
            return got
        out: list[tuple[int, list[list[int]]]] = []
        if self.opts.pair_sequences:
            rs = self.rs
            run = 0
            for top in range(12):
                run = run + 1 if rs[top].bit_count() >= 2 else 0
                if run >= pairs:
                    out.append((top, [[p << SHIFTS[r] for p in NIB_PAIRS[rs[r]]]
                                      for r in range(top - pairs + 1, top + 1)]))
        self._pairseqs[pairs] = out
        return out

    def max_run(self) -> int:
        run = best = 0
        for top in range(12):
            run = run + 1 if self.rs[top] else 0
            if run > best:
                best = run
        return best

    def max_pair_run(self) -> int:
        run = best = 0
        for top in range(12):
            run = run + 1 if self.rs[top].bit_count() >= 2 else 0
            if run > best:
                best = run
        return best


class LegalPlays(Sequence):
    """A lazy, indexable sequence of plays (each a list of Card), equal to a list of lists.

    Items handed out are remembered by card set, so ``Game.play`` can accept them without
    re-validating (the game drops this object whenever its state changes).
    """

    __slots__ = ("_groups", "_cum", "_n", "issued")

    def __init__(self, groups: list[Group]) -> None:
        cum = []
        total = 0
        kept = []
        for g in groups:
            count = 1
            for f in g[2]:
                count *= len(f)
            if count:
                total += count
                cum.append(total)
                kept.append(g)
        self._groups = kept
        self._cum = cum
        self._n = total
        self.issued: dict[int, Combo] = {}

    def __len__(self) -> int:
        return self._n

    def mask_at(self, i: int) -> int:
        """Card set of play ``i`` (also recorded as issued)."""
        gi = bisect_right(self._cum, i)
        kind, size, factors, key = self._groups[gi]
        rem = i - (self._cum[gi - 1] if gi else 0)
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

    def __hash__(self) -> int:  # mutable-ish view; not hashable
        raise TypeError("LegalPlays is not hashable")

    def __repr__(self) -> str:
        return f"LegalPlays({len(self)} plays)"

    def combos(self) -> Iterator[Combo]:
        for i in range(self._n):
            mask = self.mask_at(i)
            yield self.issued[mask]


# ---------------------------------------------------------------- group builders

def _flat(kind: int, size: int, masks: list[int]) -> Group:
    return (kind, size, [masks], -1)


def lead_groups(hi: HandIndex) -> list[Group]:
    """Every combination of the hand (the leader's choices)."""
    groups = [_flat(SINGLE, 1, hi.singles())]
    pairs = hi.pairs()
    if pairs:
        groups.append(_flat(PAIR, 2, pairs))
        triples = hi.triples()
        if triples:
            groups.append(_flat(TRIPLE, 3, triples))
            quads = hi.quads()
            if quads:
                groups.append(_flat(FOUR_OF_A_KIND, 4, quads))
    longest = hi.max_run()
    for length in range(3, longest + 1):
        for _top, factors in hi.straights(length):
            groups.append((STRAIGHT, length, factors, -1))
    if hi.opts.pair_sequences and pairs:
        longest = hi.max_pair_run()
        for npairs in range(3, longest + 1):
            for _top, factors in hi.pair_sequences(npairs):
                groups.append((PAIR_SEQUENCE, 2 * npairs, factors, -1))
    return groups


def _above(masks: list[int], key: int) -> list[int]:
    """The masks (sorted by highest card) whose highest card is above ``key``."""
    return masks[bisect_left(masks, 1 << (key + 1)):]


def _runs_above(runs: list[tuple[int, list[list[int]]]], key: int) -> list[list[list[int]]]:
    """Run groups (ascending by top rank) with a top card above ``key``."""
    key_rank = key >> 2
    out = []
    for top, factors in runs:
        if top < key_rank:
            continue
        if top == key_rank:
            last = [m for m in factors[-1] if m.bit_length() - 1 > key]
            if not last:
                continue
            factors = factors[:-1] + [last]
        out.append(factors)
    return out


def normal_beat_groups(hi: HandIndex, table: Combo) -> list[Group]:
    """Plays of the table's type and size with a higher key (§3), like-for-like in north."""
    kind, size, key, tmask = table
    opts = hi.opts
    like = opts.like_beats_like
    if kind == SINGLE:
        masks = _above(hi.singles(), key)
        if like:
            suit = key & 3
            masks = [m for m in masks if (m.bit_length() - 1) & 3 == suit]
        return [_flat(SINGLE, 1, masks)] if masks else []
    if kind in (PAIR, TRIPLE, FOUR_OF_A_KIND):
        source = hi.pairs() if kind == PAIR else hi.triples() if kind == TRIPLE else hi.quads()
        masks = _above(source, key)
        if like and kind != FOUR_OF_A_KIND:
            reds = (tmask & RED_MASK).bit_count()
            masks = [m for m in masks if (m & RED_MASK).bit_count() == reds]
        return [_flat(kind, size, masks)] if masks else []
    if kind == STRAIGHT:
        runs = hi.straights(size)
        if like:
            suit = key & 3
            runs = [(t, f) for t, f in runs if (f[-1][0].bit_length() - 1) & 3 == suit]
        return [(STRAIGHT, size, f, -1) for f in _runs_above(runs, key)]
    if kind == PAIR_SEQUENCE:
        return [(PAIR_SEQUENCE, size, f, -1)
                for f in _runs_above(hi.pair_sequences(size // 2), key)]
    return []


def chop_groups(hi: HandIndex, table: Combo, only_ps4: bool = False) -> list[Group]:
    """Bombs that chop the table (§5) other than those that are also normal beats."""
    opts = hi.opts
    ct = category(table)
    if not ct:
        return []
    pairs = opts.chop_pairs
    groups: list[Group] = []
    if not only_ps4:
        if (ct, CAT_PS3) in pairs and ct != CAT_PS3:
            for _t, f in hi.pair_sequences(3):
                groups.append((PAIR_SEQUENCE, 6, f, -1))
        if (ct, CAT_QUAD) in pairs and ct != CAT_QUAD:
            quads = hi.quads()
            if quads:
                groups.append(_flat(FOUR_OF_A_KIND, 4, quads))
    if (ct, CAT_PS4) in pairs and opts.pair_sequences:
        longest = hi.max_pair_run()
        start = 4
        if ct == CAT_PS4:
            start = table[1] // 2 + 1  # same length is a normal beat (generated there)
        for npairs in range(start, longest + 1):
            for _t, f in hi.pair_sequences(npairs):
                groups.append((PAIR_SEQUENCE, 2 * npairs, f, -1))
    return groups


def answer_groups(hi: HandIndex, table: Combo) -> list[Group]:
    """Every play that beats or chops the table."""
    groups = normal_beat_groups(hi, table)
    if category(table):
        groups.extend(chop_groups(hi, table))
    return groups


def ps4_chop_groups(hi: HandIndex, table: Combo) -> list[Group]:
    """Pair sequences of 4+ pairs that chop the table (out-of-turn chop offers)."""
    ct = category(table)
    if (ct, CAT_PS4) not in hi.opts.chop_pairs:
        return []
    groups = chop_groups(hi, table, only_ps4=True)
    if ct == CAT_PS4:
        groups = [(PAIR_SEQUENCE, table[1], f, -1)
                  for f in _runs_above(hi.pair_sequences(table[1] // 2), table[2])] + groups
    return groups


def three_pair_groups(hi: HandIndex, above: int = -1) -> list[Group]:
    """Three-pair sequences with a key above ``above`` (stealing the lead)."""
    runs = hi.pair_sequences(3)
    if above >= 0:
        return [(PAIR_SEQUENCE, 6, f, -1) for f in _runs_above(runs, above)]
    return [(PAIR_SEQUENCE, 6, f, -1) for _t, f in runs]


def restrict_to_card(groups: list[Group], bit: int) -> list[Group]:
    """Only the plays that contain the card ``bit`` (the starting game's first play)."""
    rank_mask = 15 << ((bit.bit_length() - 1) & ~3)
    out = []
    for kind, size, factors, key in groups:
        if len(factors) == 1:
            only = [m for m in factors[0] if m & bit]
            if only:
                out.append((kind, size, [only], key))
            continue
        new_factors = []
        found = False
        for f in factors:
            if f and f[0] & rank_mask:
                f = [m for m in f if m & bit]
                found = True
            new_factors.append(f)
        if found and all(new_factors):
            out.append((kind, size, new_factors, key))
    return out


def validate_answer(table: Combo | None, play: Combo, opts: Options) -> int:
    """Beat kind of ``play`` on ``table`` (a lead when the table is empty: NORMAL)."""
    if table is None:
        return 1
    return beat_kind(table, play, opts)


__all__ = [
    "CAT_22", "CAT_PS3", "CAT_PS4", "CAT_QUAD", "HandIndex", "LegalPlays", "answer_groups",
    "lead_groups", "ps4_chop_groups", "restrict_to_card", "three_pair_groups",
]  # fmt: skip
