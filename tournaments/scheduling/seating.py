"""Seat order inside tables: relative positions, starting seats and field counterparts.

Who plays directly after whom matters in Tiến Lên (you can only beat what the player
before you led), so a design also chooses each table's cyclic order: over the tables two
entrants share, each should sit 1, 2, ... k-1 places after the other as evenly as
possible (for 8 entrants at tables of 4, every pair shares 3 tables: ideally once each at
+1, +2 and +3). The cyclic order is chosen first; turning a table (which entrant takes
seat 0) does not change it, and is then chosen so each entrant's starting seats differ
by at most one where possible, and so that, in field duplicates, entrants holding the
same seat at other tables of their deal group (their "counterparts", who hold the same
cards) vary.

Everything is a deterministic local search: the same tables always give the same seats.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Sequence

Table = tuple[int, ...]
SEAT_WEIGHT = 3
MATES_WEIGHT = 1  # field counterparts: weighed against starting seats (3) and relative positions (4)


def relative_position_counts(tables: Sequence[Sequence[int]], n: int, k: int) -> dict[tuple[int, int], list[int]]:
    """For each pair a < b that shares a table: how often b sat d places after a (d = 1..k-1)."""
    counts: dict[tuple[int, int], list[int]] = {}
    for table in tables:
        size = len(table)
        for i, a in enumerate(table):
            for j, b in enumerate(table):
                if a < b:
                    row = counts.setdefault((a, b), [0] * k)
                    row[(j - i) % size] += 1
    return {pair: row[1:] for pair, row in counts.items()}


def same_position_fraction(tables: Sequence[Sequence[int]], n: int, k: int) -> float:
    """Share of pairs meeting at 2+ tables that always sat in the same relative position."""
    rows = [r for r in relative_position_counts(tables, n, k).values() if sum(r) > 1]
    if not rows:
        return 0.0
    return sum(1 for r in rows if max(r) == sum(r)) / len(rows)


def relative_position_spread(tables: Sequence[Sequence[int]], n: int, k: int) -> int:
    """The worst pair's max - min count over its relative positions (0 or 1 is ideal)."""
    rows = relative_position_counts(tables, n, k).values()
    return max((max(r) - min(r) for r in rows), default=0)


def seat_counts(tables: Sequence[Sequence[int]], n: int, k: int) -> list[list[int]]:
    counts = [[0] * k for _ in range(n)]
    for table in tables:
        for seat, player in enumerate(table):
            counts[player][seat] += 1
    return counts


def arrange_seats(
    tables: Sequence[Sequence[int]],
    n: int,
    k: int,
    *,
    groups: Sequence[int] | None = None,
    rounds: int = 12,
) -> list[Table]:
    """Order every table's seats: relative positions even first, then starting seats,
    then (with `groups`, the deal group of each table) varied field counterparts.

    One cost: for each table the sum, over what its seating adds, of 2c + 1 (c the count
    already there) for every ordered pair's relative position (weight 4), entrant's
    starting seat (weight 2) and same-seat pair across the tables of its deal group
    (weight 1); the sum of squared counts, smallest when counts are as even as possible.
    Coordinate descent (each table in turn takes its best of the k! seatings) with a few
    deterministic perturbations; the best seating found is kept.
    """
    rng = random.Random(f"seats/{n}/{k}/{len(tables)}")
    base = [tuple(sorted(t)) for t in tables]
    options = [list(itertools.permutations(t)) for t in base]
    current: list[Table] = list(base)
    rel = [[[0] * k for _ in range(n)] for _ in range(n)]
    seats = [[0] * k for _ in range(n)]
    mates: dict[tuple[int, int], int] = {}
    by_group: dict[int, list[int]] = {}
    if groups is not None:
        for i, g in enumerate(groups):
            by_group.setdefault(g, []).append(i)

    def partners(i: int) -> list[int]:
        return [j for j in by_group.get(groups[i], ()) if j != i] if groups is not None else []

    def cost(i: int, seating: Table) -> int:
        size = len(seating)
        total = 0
        for x, a in enumerate(seating):
            total += SEAT_WEIGHT * (2 * seats[a][x] + 1)
            for y, b in enumerate(seating):
                if a != b:
                    total += 4 * (2 * rel[a][b][(y - x) % size] + 1)
        for j in partners(i):
            other = current[j]
            for x, a in enumerate(seating):
                if x < len(other):
                    total += MATES_WEIGHT * (2 * mates.get((min(a, other[x]), max(a, other[x])), 0) + 1)
        return total

    def apply(i: int, sign: int, later_only: bool = False) -> None:
        seating = current[i]
        size = len(seating)
        for x, a in enumerate(seating):
            seats[a][x] += sign
            for y, b in enumerate(seating):
                if a != b:
                    rel[a][b][(y - x) % size] += sign
        for j in partners(i):
            if later_only and j < i:
                continue
            other = current[j]
            for x, a in enumerate(seating):
                if x < len(other):
                    key = (min(a, other[x]), max(a, other[x]))
                    mates[key] = mates.get(key, 0) + sign

    def total() -> int:
        value = SEAT_WEIGHT * sum(c * c for row in seats for c in row)
        value += 2 * sum(c * c for row in rel for cell in row for c in cell)  # each pair twice
        return value + MATES_WEIGHT * sum(c * c for c in mates.values())

    for i in range(len(current)):
        apply(i, 1, later_only=True)
    best_cost, best = total(), list(current)
    for attempt in range(rounds):
        for _ in range(50):
            changed = False
            for i in range(len(current)):
                apply(i, -1)
                old = current[i]
                choice = min(options[i], key=lambda s, i=i: cost(i, s))
                if cost(i, choice) < cost(i, old):
                    current[i] = choice
                    changed = True
                apply(i, 1)
            if not changed:
                break
        value = total()
        if value < best_cost:
            best_cost, best = value, list(current)
        if attempt + 1 < rounds:
            for i in rng.sample(range(len(current)), max(1, len(current) // 6)):
                apply(i, -1)
                current[i] = rng.choice(options[i])
                apply(i, 1)
    # Turning a table keeps every relative position: spend what is left on starting seats.
    for i in range(len(current)):
        apply(i, -1)
    current[:] = best
    for i in range(len(current)):
        apply(i, 1, later_only=True)
    for _ in range(50):
        changed = False
        for i in range(len(current)):
            apply(i, -1)
            old = current[i]
            turns = [old[t:] + old[:t] for t in range(len(old))]
            choice = min(turns, key=lambda s, i=i: cost(i, s))
            if cost(i, choice) < cost(i, old):
                current[i] = choice
                changed = True
            apply(i, 1)
        if not changed:
            break
    return current
