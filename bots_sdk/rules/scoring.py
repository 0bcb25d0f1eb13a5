"""Hand evaluations used by scoring: stuck penalties and instant wins (docs/rules.md §6.4, §7).

The finishing payments themselves live in ``settlement``; this module only answers
"what is this hand worth" questions, on 52-bit hand masks.
"""

from __future__ import annotations

from functools import lru_cache

from .options import Options

RED_MASK = sum(1 << i for i in range(52) if i & 3 >= 2)


def rank_counts(hand: int) -> list[int]:
    return [((hand >> (4 * r)) & 15).bit_count() for r in range(13)]


def stuck_points(hand: int, opts: Options, empowered_three: bool = False,
                 empowered_sixes: bool = False) -> int:
    """Penalty for the 2s and bombs left in ``hand``: the best disjoint decomposition.

    Each card counts once (docs/rules.md §6.4 decision): of every way to split the hand into
    disjoint 2s and bombs, the one with the highest total is charged, so a player is never
    charged twice for one card nor less than the hand's worst reading.
    """
    return _stuck(hand, opts, empowered_three, empowered_sixes)


@lru_cache(maxsize=65536)
def _stuck(hand: int, opts: Options, emp3: bool, emp6: bool) -> int:
    total = 0
    twos = (hand >> 48) & 15
    single_twos = 0
    for s in range(4):
        if twos >> s & 1:
            single_twos += opts.value_red_two if s >= 2 else opts.value_black_two
    if twos == 15:
        single_twos = max(single_twos, opts.value_four_of_a_kind)
    total += single_twos

    counts = rank_counts(hand)[:12]
    # candidates: (value, {rank: cards used})
    cands: list[tuple[int, tuple[tuple[int, int], ...]]] = []
    for r in range(12):
        if counts[r] == 4:
            cands.append((opts.value_four_of_a_kind, ((r, 4),)))
    if opts.pair_sequences:
        for a in range(12):
            b = a
            while b < 12 and counts[b] >= 2:
                length = b - a + 1
                if length >= 3:
                    value = opts.value_three_pairs if length == 3 else opts.value_four_pairs
                    cands.append((value, tuple((r, 2) for r in range(a, b + 1))))
                b += 1
    has_three_spades = bool(hand & 1)
    if has_three_spades:
        if emp3:
            cands.append((opts.value_four_of_a_kind, ((0, 1),)))
        elif opts.stuck_three_spades:
            cands.append((opts.stuck_three_spades, ((0, 1),)))
    if emp6 and counts[3] >= 2:
        cands.append((opts.value_four_pairs, ((3, 2),)))

    best = 0
    memo: dict[tuple[int, tuple[int, ...]], int] = {}

    def search(i: int, left: tuple[int, ...]) -> int:
        if i == len(cands):
            return 0
        k = (i, left)
        if k in memo:
            return memo[k]
        result = search(i + 1, left)
        value, uses = cands[i]
        if all(left[r] >= n for r, n in uses):
            after = list(left)
            for r, n in uses:
                after[r] -= n
            result = max(result, value + search(i + 1, tuple(after)))
        memo[k] = result
        return result

    if cands:
        best = search(0, tuple(counts))
    return total + best


def has_pair_run(counts: list[int], length: int) -> bool:
    run = 0
    for r in range(12):
        run = run + 1 if counts[r] >= 2 else 0
        if run >= length:
            return True
    return False


_LOW = sum(1 << (4 * r) for r in range(13))  # bit 0 of every rank's nibble
_LOW_NO_TWOS = _LOW & ((1 << 48) - 1)
_QUICK = frozenset(("four_threes", "three_pairs_with_start", "dragon", "five_pair_sequence",
                    "six_pairs", "four_twos", "twelve_one_colour"))


def _quick_instant(name: str, hand: int) -> bool:
    """The common instant wins, bit-parallel over the 13 rank nibbles (no per-rank loop)."""
    if name == "four_threes":
        return hand & 15 == 15
    if name == "four_twos":
        return hand >> 48 == 15
    if name == "twelve_one_colour":
        red = (hand & RED_MASK).bit_count()
        return red >= 12 or hand.bit_count() - red >= 12
    if name == "dragon":
        present = (hand | hand >> 1 | hand >> 2 | hand >> 3) & _LOW_NO_TWOS
        return present == _LOW_NO_TWOS
    h = hand
    two = (h & (h >> 1) & (_LOW * 7)) | (h & (h >> 2) & (_LOW * 3)) | (h & (h >> 3) & _LOW)
    two = (two | (two >> 1) | (two >> 2)) & _LOW  # bit 4r: rank r holds a pair
    if name == "six_pairs":
        four = h & (h >> 1) & (h >> 2) & (h >> 3) & _LOW
        return two.bit_count() + four.bit_count() >= 6
    if name == "three_pairs_with_start":
        return bool(hand & 1) and two & 0x111 == 0x111
    two &= _LOW_NO_TWOS  # five_pair_sequence
    return bool(two & (two >> 4) & (two >> 8) & (two >> 12) & (two >> 16))


def instant_win_kind(hand: int, names: tuple[str, ...]) -> str | None:
    """The first of ``names`` (docs/rules.md §7 hand kinds) that the 13-card ``hand`` is."""
    if not names:
        return None
    if _QUICK.issuperset(names):
        for name in names:
            if _quick_instant(name, hand):
                return name
        return None
    counts = rank_counts(hand)
    for name in names:
        if _is_instant(name, hand, counts):
            return name
    return None


def _is_instant(name: str, hand: int, counts: list[int]) -> bool:
    if name == "four_threes":
        return counts[0] == 4
    if name == "three_pairs_with_start":
        return bool(hand & 1) and counts[0] >= 2 and counts[1] >= 2 and counts[2] >= 2
    if name == "dragon":
        return all(counts[r] for r in range(12))
    if name == "five_pair_sequence":
        return has_pair_run(counts, 5)
    if name == "six_pairs":
        return sum(c // 2 for c in counts) >= 6
    if name == "four_twos":
        return counts[12] == 4
    if name == "twelve_one_colour":
        red = (hand & RED_MASK).bit_count()
        black = hand.bit_count() - red
        return red >= 12 or black >= 12
    if name == "four_triples":
        return sum(1 for c in counts if c >= 3) >= 4
    if name == "two_fours":
        return sum(1 for c in counts if c == 4) >= 2
    raise ValueError(f"unknown instant win {name!r}")


def has_four_pair_sequence(hand: int) -> bool:
    """Whether a hand holds a pair sequence of 4+ pairs (Đà Nẵng's dealt bonus)."""
    return has_pair_run(rank_counts(hand), 4)
