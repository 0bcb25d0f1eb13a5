"""Round-robin schedules: who sits at which table, in which starting seat.

Exact designs (every pair meets exactly λ times) are used when one is known; otherwise a
seeded local search finds tables where every entrant plays equally often and pair counts
differ by at most one. Starting seats are then assigned table by table so each entrant's
seat counts stay within one of each other; with duplicate sets the referee also rotates
every deal through every seat, which makes seats exactly equal over the games.
"""

from __future__ import annotations

import itertools
import math
import random
from dataclasses import dataclass
from math import comb, gcd

from tournaments.scheduling.designs import Block, exact_designs, pair_counts


@dataclass(frozen=True)
class RoundRobinSchedule:
    design: str
    tables: list[tuple[int, ...]]  # entrant indices in starting-seat order


def circle_pairs(n: int) -> list[Block]:
    """Berger/circle method: every pair once, in n-1 (or n) rounds."""
    players: list[int | None] = list(range(n)) + ([None] if n % 2 else [])
    m = len(players)
    tables = []
    for _ in range(m - 1):
        for i in range(m // 2):
            a, b = players[i], players[m - 1 - i]
            if a is not None and b is not None:
                tables.append((a, b))
        players = [players[0], players[-1], *players[1:-1]]
    return tables


def balanced_tables(
    n: int, k: int, rng: random.Random, iterations: int = 300_000, extra_steps: int = 0
) -> list[Block]:
    """Tables where every entrant plays r times and pair counts are within one.

    Local search: swap two entrants between tables when that does not increase the sum of
    squared pair counts (minimal exactly when counts are as equal as possible).
    """
    step = n // gcd(n, k)  # T*k must be a multiple of n: everyone plays equally often
    tables_count = step
    while tables_count * k * (k - 1) < n * (n - 1):
        tables_count += step
    tables_count += step * extra_steps
    per_player = tables_count * k // n
    tables = [[(i * k + j) % n for j in range(k)] for i in range(tables_count)]
    if per_player * n != tables_count * k or any(len(set(t)) != k for t in tables):
        raise ValueError(f"cannot build balanced tables for {n} entrants at tables of {k}")
    counts = [[0] * n for _ in range(n)]
    for t in tables:
        for x, y in itertools.permutations(t, 2):
            counts[x][y] += 1

    def apply(t: list[int], i: int, new: int) -> None:
        old = t[i]
        for other in t:
            if other != old:
                counts[old][other] -= 1
                counts[other][old] -= 1
                counts[new][other] += 1
                counts[other][new] += 1
        t[i] = new

    def spread() -> int:
        values = [counts[x][y] for x in range(n) for y in range(x + 1, n)]
        return max(values) - min(values)

    temperature = 1.0
    for step_no in range(iterations):
        if step_no % 2000 == 0:
            if spread() <= 1:
                break
            temperature *= 0.9
        t1, t2 = rng.sample(range(tables_count), 2)
        i1, i2 = rng.randrange(k), rng.randrange(k)
        a, b = tables[t1][i1], tables[t2][i2]
        if a == b or b in tables[t1] or a in tables[t2]:
            continue
        # Swap a (in t1) and b (in t2); the pair (a, b) itself is unaffected.
        rest1 = [p for p in tables[t1] if p != a]
        rest2 = [p for p in tables[t2] if p != b]
        change = sum(1 - 2 * counts[a][o] + 1 + 2 * counts[b][o] for o in rest1)
        change += sum(1 - 2 * counts[b][o] + 1 + 2 * counts[a][o] for o in rest2)
        if change <= 0 or rng.random() < math.exp(-change / temperature):
            apply(tables[t1], i1, b)
            apply(tables[t2], i2, a)
    return [tuple(sorted(t)) for t in tables]


def _rebalance_two_seats(tables: list[Block], colour: list[list[int]], a: int, b: int) -> None:
    """Recolour the seat-a and seat-b edges so every table and entrant is balanced in a/b.

    The edges coloured a or b form a bipartite graph (tables x entrants); walking it in
    trails (from odd-degree vertices first) and alternating a, b along each trail gives
    every vertex as many a's as b's, give or take one (de Werra's equitable colouring).
    """
    adjacency: dict[tuple[str, int], list[tuple[int, int]]] = {}
    edges = []
    for t, table in enumerate(tables):
        for j, player in enumerate(table):
            if colour[t][j] in (a, b):
                edge = (t, j)
                edges.append(edge)
                adjacency.setdefault(("t", t), []).append(edge)
                adjacency.setdefault(("p", player), []).append(edge)
    used: set[tuple[int, int]] = set()

    def other_end(edge: tuple[int, int], vertex: tuple[str, int]) -> tuple[str, int]:
        t, j = edge
        return ("p", tables[t][j]) if vertex[0] == "t" else ("t", t)

    def remaining(vertex: tuple[str, int]) -> int:
        return sum(1 for e in adjacency[vertex] if e not in used)

    while len(used) < len(edges):
        starts = [v for v in adjacency if remaining(v) % 2 == 1]
        if not starts:
            starts = [v for v in adjacency if remaining(v) > 0]
        vertex = starts[0]
        step = 0
        while True:
            edge = next((e for e in adjacency[vertex] if e not in used), None)
            if edge is None:
                break
            used.add(edge)
            colour[edge[0]][edge[1]] = a if step % 2 == 0 else b
            step += 1
            vertex = other_end(edge, vertex)


def seat_order(tables: list[Block], n: int, k: int) -> list[tuple[int, ...]]:
    """Order each table's seats so every entrant's seat counts differ by at most one."""
    colour = [list(range(len(table))) for table in tables]
    for _ in range(10 * n * k + 100):
        counts = [[0] * k for _ in range(n)]
        for t, table in enumerate(tables):
            for j, player in enumerate(table):
                counts[player][colour[t][j]] += 1
        worst = max(range(n), key=lambda p: max(counts[p]) - min(counts[p]))
        row = counts[worst]
        if max(row) - min(row) <= 1:
            break
        _rebalance_two_seats(tables, colour, row.index(max(row)), row.index(min(row)))
    ordered = []
    for t, table in enumerate(tables):
        seats: list[int] = [0] * len(table)
        for j, player in enumerate(table):
            seats[colour[t][j]] = player
        ordered.append(tuple(seats))
    return ordered


def round_robin_schedule(n: int, k: int, *, seed: str = "", cycles: int = 1) -> RoundRobinSchedule:
    """The tables of a round robin of n entrants at tables of k seats."""
    if not 2 <= k <= 4:
        raise ValueError("tables have 2, 3 or 4 seats")
    if n < k:
        raise ValueError(f"a round robin at tables of {k} needs at least {k} entrants, got {n}")
    if cycles < 1:
        raise ValueError("cycles must be at least 1")
    rng = random.Random(f"round-robin/{seed}/{n}/{k}")
    if n == k:
        design, blocks = "one table", [tuple(range(n))]
    elif k == 2:
        design, blocks = "circle method, every pair once", circle_pairs(n)
    else:
        found = exact_designs(n, k)
        if found:
            design, blocks = found[0]
        else:
            # Near the minimum number of tables a within-one cover may not exist (or not be
            # found); a few more tables give the search room.
            for extra in range(4):
                blocks = balanced_tables(n, k, rng, extra_steps=extra)
                counts = set(pair_counts(blocks, n).values())
                if min(counts) >= 1 and max(counts) - min(counts) <= 1:
                    break
            design = f"balanced tables, every pair {min(counts)}-{max(counts)}x"
    # Relabel entrants at random so seeds do not decide who shares the awkward tables.
    labels = list(range(n))
    rng.shuffle(labels)
    blocks = [tuple(labels[p] for p in block) for block in blocks]
    all_blocks = [block for _ in range(cycles) for block in blocks]
    rng.shuffle(all_blocks)
    if cycles > 1:
        design = f"{design}, {cycles} cycles"
    return RoundRobinSchedule(design=design, tables=seat_order(all_blocks, n, k))


def round_robin_table_count(n: int, k: int) -> int:
    """Upper bound used to warn organisers before scheduling (all combinations)."""
    return comb(n, k)
