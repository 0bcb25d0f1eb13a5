"""Balanced incomplete block designs: tables where every pair meets exactly λ times.

Known constructions are tried in order of fewest tables: cyclic difference families over
Z_n (or Z_{n-1} plus a point at infinity), found by a seeded depth-first search; affine
planes AG(2, q) for q = 3, 4 (every pair once: 9 entrants at tables of 3, 16 at tables of
4); and, when small, all combinations. Whist-like designs (tables of 4, every pair three
times) come out of the cyclic search for 8, 9, 12, 13, 16, 17, 20, 21, ... entrants.
"""

from __future__ import annotations

import itertools
import random
from functools import lru_cache
from math import comb

Block = tuple[int, ...]
SEARCH_NODE_BUDGET = 200_000
ALL_COMBINATIONS_MAX = 35


def _diffs(block: Block, m: int) -> list[int]:
    return [(a - b) % m for a in block for b in block if a != b]


def _search_family(
    m: int, k: int, lam: int, full: int, infinite: int, rng: random.Random
) -> list[Block] | None:
    """Base blocks (each containing 0) whose differences cover Z_m \\ {0} exactly λ times."""
    counts = [0] * m
    sizes = [k - 1] * infinite + [k] * full
    chosen: list[Block] = []
    nodes = 0

    def extend(block: list[int], size: int, start: int) -> bool:
        nonlocal nodes
        nodes += 1
        if nodes > SEARCH_NODE_BUDGET:
            return False
        if len(block) == size:
            chosen.append(tuple(block))
            if place(len(chosen)):
                return True
            chosen.pop()
            return False
        candidates = list(range(start, m))
        rng.shuffle(candidates)
        for x in candidates:
            new = [(x - b) % m for b in block] + [(b - x) % m for b in block]
            for d in new:
                counts[d] += 1
            if all(counts[d] <= lam for d in new) and extend([*block, x], size, x + 1):
                return True
            for d in new:
                counts[d] -= 1
        return False

    def place(i: int) -> bool:
        if i == len(sizes):
            return all(c == lam for c in counts[1:])
        # Blocks of equal size are kept in increasing order of their second element.
        start = 1
        if i > 0 and sizes[i - 1] == sizes[i]:
            start = chosen[i - 1][1]
        return extend([0], sizes[i], start)

    if place(0):
        return chosen
    return None


def cyclic_design(n: int, k: int, lam: int, seed: int = 0) -> list[Block] | None:
    """Develop a cyclic difference family; the point at infinity is n-1 when used."""
    if k < 3 or n <= k:
        return None
    rng = random.Random(seed)
    # Without infinity: the group is Z_n.
    if (lam * (n - 1)) % (k * (k - 1)) == 0:
        full = lam * (n - 1) // (k * (k - 1))
        for _ in range(3):
            base = _search_family(n, k, lam, full, 0, rng)
            if base:
                return _develop(base, n, None)
    # With infinity: Z_{n-1} plus one point.
    m = n - 1
    if k > 2 and lam % (k - 1) == 0:
        inf_blocks = lam // (k - 1)
        rest = lam * (m - 1) - inf_blocks * (k - 1) * (k - 2)
        if rest >= 0 and rest % (k * (k - 1)) == 0:
            full = rest // (k * (k - 1))
            for _ in range(3):
                base = _search_family(m, k, lam, full, inf_blocks, rng)
                if base:
                    return _develop(base, m, n - 1)
    return None


def _develop(base: list[Block], m: int, infinity: int | None) -> list[Block]:
    """All translates of the base blocks; blocks one short get the point at infinity."""
    size = max(len(block) for block in base)
    blocks = []
    for block in base:
        for shift in range(m):
            points = sorted((b + shift) % m for b in block)
            if infinity is not None and len(block) < size:
                points.append(infinity)
            blocks.append(tuple(points))
    return blocks


def affine_plane(q: int) -> list[Block] | None:
    """AG(2, q) for q in {2, 3, 4}: q² points, lines of q points, every pair once."""
    if q not in (2, 3, 4):
        return None
    if q == 4:
        # GF(4) = {0, 1, a, a+1} as 0..3; addition is xor; multiplication by table.
        mul = [[0, 0, 0, 0], [0, 1, 2, 3], [0, 2, 3, 1], [0, 3, 1, 2]]

        def add(x: int, y: int) -> int:
            return x ^ y
    else:
        mul = [[(x * y) % q for y in range(q)] for x in range(q)]

        def add(x: int, y: int) -> int:
            return (x + y) % q

    point = {(x, y): x * q + y for x in range(q) for y in range(q)}
    lines = []
    for slope in range(q):
        for intercept in range(q):
            lines.append(tuple(sorted(point[(x, add(mul[slope][x], intercept))] for x in range(q))))
    for x in range(q):
        lines.append(tuple(sorted(point[(x, y)] for y in range(q))))
    return lines


def all_combinations(n: int, k: int) -> list[Block]:
    return list(itertools.combinations(range(n), k))


def pair_counts(blocks: list[Block], n: int) -> dict[tuple[int, int], int]:
    counts = {pair: 0 for pair in itertools.combinations(range(n), 2)}
    for block in blocks:
        for a, b in itertools.combinations(sorted(block), 2):
            counts[(a, b)] += 1
    return counts


def is_balanced(blocks: list[Block], n: int) -> bool:
    values = set(pair_counts(blocks, n).values())
    return len(values) == 1


@lru_cache(maxsize=256)
def exact_designs(n: int, k: int, max_lambda: int = 3) -> list[tuple[str, list[Block]]]:
    """Every exact design found for (n, k), fewest tables first."""
    found: list[tuple[str, list[Block]]] = []
    if n == k * k and (plane := affine_plane(k)) is not None:
        found.append((f"affine plane AG(2,{k}), every pair once", plane))
    for lam in range(1, max_lambda + 1):
        design = cyclic_design(n, k, lam)
        if design is not None and is_balanced(design, n):
            found.append((f"cyclic design, every pair {lam}x", design))
            break
    if comb(n, k) <= ALL_COMBINATIONS_MAX:
        found.append(
            (f"all combinations, every pair {comb(n - 2, k - 2)}x", all_combinations(n, k))
        )
    found.sort(key=lambda item: len(item[1]))
    return found


# --- resolvable designs: rounds of disjoint tables ---------------------------------------

Round = list[Block]


def resolvable_cyclic_design(n: int, k: int) -> list[Round] | None:
    """Rounds of disjoint tables of k where every pair meets exactly k-1 times.

    1-rotational construction (how whist tournaments are built): one base round is found by
    a depth-first search and developed cyclically, one round per shift. For n ≡ 0 (mod k)
    the group is Z_{n-1} and the point at infinity (n-1) plays every round; for n ≡ 1
    (mod k) the group is Z_n and in round r entrant r sits out. The base round's blocks
    partition the points, so every developed round does too: a round is a deal group of
    field duplicates, every entrant at most once.
    """
    if k < 2 or n <= k:
        return None
    lam = k - 1
    if n % k == 0:
        m, infinite = n - 1, True
        points = list(range(m))
    elif n % k == 1:
        m, infinite = n, False
        points = list(range(1, m))  # 0 sits out the base round
    else:
        return None
    counts = [0] * m
    used = [False] * m
    if not infinite:
        used[0] = True
    sizes = ([k - 1] if infinite else []) + [k] * ((len(points) - (k - 1 if infinite else 0)) // k)
    chosen: list[list[int]] = []
    nodes = 0

    def add(block: list[int], x: int, sign: int) -> bool:
        ok = True
        for b in block:
            for d in ((x - b) % m, (b - x) % m):
                counts[d] += sign
                ok = ok and counts[d] <= lam
        return ok

    def extend(block: list[int], size: int) -> bool:
        nonlocal nodes
        nodes += 1
        if nodes > SEARCH_NODE_BUDGET:
            return False
        if len(block) == size:
            chosen.append(block[:])
            if place(len(chosen)):
                return True
            chosen.pop()
            return False
        for x in range(block[-1] + 1, m):
            if used[x]:
                continue
            ok = add(block, x, 1)
            used[x] = True
            if ok and extend([*block, x], size):
                return True
            used[x] = False
            add(block, x, -1)
        return False

    def place(i: int) -> bool:
        if i == len(sizes):
            return all(c == lam for c in counts[1:])
        first = next(x for x in range(m) if not used[x])  # canonical: smallest free point
        used[first] = True
        if extend([first], sizes[i]):
            return True
        used[first] = False
        return False

    if not place(0):
        return None
    rounds = []
    for shift in range(m):
        tables = []
        for j, block in enumerate(chosen):
            table = [(b + shift) % m for b in block]
            if infinite and j == 0:
                table.append(n - 1)
            tables.append(tuple(sorted(table)))
        rounds.append(tables)
    return rounds


def affine_plane_rounds(q: int) -> list[Round] | None:
    """AG(2, q) split into its parallel classes (q + 1 rounds of q disjoint lines)."""
    lines = affine_plane(q)
    if lines is None:
        return None
    # affine_plane lists q lines per slope, then the q vertical lines: each run of q lines
    # is one parallel class.
    return [lines[i : i + q] for i in range(0, len(lines), q)]


@lru_cache(maxsize=256)
def resolvable_designs(n: int, k: int) -> list[tuple[str, list[Round]]]:
    """Every exact resolvable design found for (n, k), fewest tables first."""
    found: list[tuple[str, list[Round]]] = []
    if n == k * k and (rounds := affine_plane_rounds(k)) is not None:
        found.append((f"affine plane AG(2,{k}) in {k + 1} rounds, every pair once", rounds))
    if k >= 3 and (rounds := resolvable_cyclic_design(n, k)) is not None:
        found.append((f"resolvable cyclic design in {len(rounds)} rounds, every pair {k - 1}x", rounds))
    found.sort(key=lambda item: sum(len(r) for r in item[1]))
    return found
