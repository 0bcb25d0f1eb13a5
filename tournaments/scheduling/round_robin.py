"""Round-robin schedules: who sits at which table, in which seat, playing which deals.

A schedule is a deterministic function of its inputs (entrant count, seats, cycles,
format, owners): no seed. Exact designs (every pair meets exactly λ times) are used when
one is known; otherwise a deterministic local search finds tables where every entrant
plays equally often and pair counts differ by at most one, with the fewest tables that
allow it (so 10 entrants at tables of 4 always get 10 tables, 11 always get 11).

Tables are grouped in rounds of disjoint tables. With field duplicates (`field=True`) a
round is a deal group: its tables play the same deals seat for seat, each entrant at
most once, so nobody is ever dealt a deal it has seen (docs/organiser-guide.md); the
design is then chosen resolvable (a known resolvable design, or the search keeps every
round's tables disjoint). Otherwise every table is its own deal group.

The owner rule (tournaments.scheduling.owners): entrants of one owner never share a table
(the search treats their pairs as forbidden and balances the allowed pairs) nor a deal
group (a round with two of them at different tables is split into several groups).

Seats: each table's cyclic order balances who sits directly after whom
(tournaments.scheduling.seating), then each table is turned so starting seats are
balanced and field counterparts vary.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from math import comb, gcd

from tournaments.scheduling.designs import Block, exact_designs, resolvable_designs
from tournaments.scheduling.owners import (
    check_owner_capacity,
    forbidden_pairs,
    owner_classes,
    split_deal_groups,
)
from tournaments.scheduling.seating import arrange_seats

Round = list[Block]
SEARCH_ITERATIONS = 400_000


@dataclass(frozen=True)
class PlannedTable:
    round: int  # 1-based
    seats: tuple[int, ...]  # entrant indices in starting-seat order
    deal_group: int  # 1-based; tables with the same group play the same deals


@dataclass(frozen=True)
class RoundRobinSchedule:
    design: str
    tables: list[PlannedTable]

    @property
    def seatings(self) -> list[tuple[int, ...]]:
        return [t.seats for t in self.tables]


def circle_rounds(n: int) -> list[Round]:
    """Berger/circle method: every pair once, in n-1 (or n) rounds of disjoint pairs."""
    players: list[int | None] = list(range(n)) + ([None] if n % 2 else [])
    m = len(players)
    rounds = []
    for _ in range(m - 1):
        tables = []
        for i in range(m // 2):
            a, b = players[i], players[m - 1 - i]
            if a is not None and b is not None:
                tables.append(tuple(sorted((a, b))))
        rounds.append(tables)
        players = [players[0], players[-1], *players[1:-1]]
    return rounds


def circle_pairs(n: int) -> list[Block]:
    return [t for r in circle_rounds(n) for t in r]


def pack_rounds(blocks: list[Block]) -> list[Round]:
    """Group tables into rounds of disjoint tables, first fit in order (for designs that
    are not resolvable by construction)."""
    rounds: list[tuple[set[int], Round]] = []
    for block in blocks:
        for seen, tables in rounds:
            if not seen.intersection(block):
                seen.update(block)
                tables.append(block)
                break
        else:
            rounds.append((set(block), [block]))
    return [tables for _, tables in rounds]


def table_count(n: int, k: int, pairs_to_cover: int) -> int:
    """Fewest tables with every entrant playing equally often that can cover the pairs."""
    step = n // gcd(n, k)  # T*k must be a multiple of n
    tables = step
    while tables * comb(k, 2) < pairs_to_cover:
        tables += step
    return tables


def search_rounds(
    n: int,
    k: int,
    tables_count: int,
    *,
    forbidden: set[tuple[int, int]] = frozenset(),  # type: ignore[assignment]
    resolvable: bool = True,
    iterations: int = SEARCH_ITERATIONS,
) -> tuple[list[Round], bool]:
    """Rounds of tables where everyone plays equally often, forbidden pairs never meet and
    the allowed pairs' counts are as even as possible; True when they are within one.

    Start: seat slots filled 0, 1, ..., n-1, 0, 1, ... table after table, rounds of n // k
    consecutive tables (so each round's tables are disjoint). Then simulated annealing on
    swaps of two entrants (keeping every round's tables disjoint when `resolvable`),
    minimising the sum of squared allowed pair counts plus a heavy cost per forbidden
    meeting. Seeded by its inputs only: the same inputs give the same design.
    """
    per_round = max(1, n // k) if resolvable else 1
    tables = [[(i * k + j) % n for j in range(k)] for i in range(tables_count)]
    round_of = [i // per_round for i in range(tables_count)]
    rounds_count = round_of[-1] + 1
    members = [set() for _ in range(rounds_count)]
    for i, t in enumerate(tables):
        members[round_of[i]].update(t)
    forbid = [[False] * n for _ in range(n)]
    for a, b in forbidden:
        forbid[a][b] = forbid[b][a] = True
    big = 50 * k * k
    counts = [[0] * n for _ in range(n)]
    for t in tables:
        for x in t:
            for y in t:
                if x != y:
                    counts[x][y] += 1

    def weight(x: int, y: int, c: int) -> int:
        """Cost of the pair (x, y) meeting once more when it meets c times now."""
        return big if forbid[x][y] else 2 * c + 1

    def status() -> tuple[int, int, int]:
        allowed = [counts[x][y] for x in range(n) for y in range(x + 1, n) if not forbid[x][y]]
        bad = sum(counts[x][y] for x in range(n) for y in range(x + 1, n) if forbid[x][y])
        return bad, min(allowed, default=0), max(allowed, default=0)

    rng = random.Random(f"round-robin-search/{n}/{k}/{tables_count}/{resolvable}/{sorted(forbidden)}")
    temperature = 2.0
    for step_no in range(iterations):
        if step_no % 2000 == 0:
            bad, low, high = status()
            if bad == 0 and low >= 1 and high - low <= 1:
                break
            temperature *= 0.92
        t1, t2 = rng.randrange(tables_count), rng.randrange(tables_count)
        if t1 == t2:
            continue
        i1, i2 = rng.randrange(k), rng.randrange(k)
        a, b = tables[t1][i1], tables[t2][i2]
        if a == b or b in tables[t1] or a in tables[t2]:
            continue
        r1, r2 = round_of[t1], round_of[t2]
        if resolvable and r1 != r2 and (b in members[r1] or a in members[r2]):
            continue
        rest1 = [p for p in tables[t1] if p != a]
        rest2 = [p for p in tables[t2] if p != b]
        change = 0
        for o in rest1:  # a leaves t1, b joins it
            change += weight(b, o, counts[b][o]) - weight(a, o, counts[a][o] - 1)
        for o in rest2:
            change += weight(a, o, counts[a][o]) - weight(b, o, counts[b][o] - 1)
        if change <= 0 or rng.random() < math.exp(-change / temperature):
            for o in rest1:
                counts[a][o] -= 1
                counts[o][a] -= 1
                counts[b][o] += 1
                counts[o][b] += 1
            for o in rest2:
                counts[b][o] -= 1
                counts[o][b] -= 1
                counts[a][o] += 1
                counts[o][a] += 1
            tables[t1][i1], tables[t2][i2] = b, a
            if r1 != r2:
                members[r1].discard(a)
                members[r1].add(b)
                members[r2].discard(b)
                members[r2].add(a)
    bad, low, high = status()
    blocks = [tuple(sorted(t)) for t in tables]
    if resolvable:
        rounds: list[Round] = [[] for _ in range(rounds_count)]
        for i, block in enumerate(blocks):
            rounds[round_of[i]].append(block)
    else:
        rounds = pack_rounds(blocks)
    return rounds, bad == 0 and low >= 1 and high - low <= 1


def _design(n: int, k: int, field: bool, forbidden: set[tuple[int, int]]) -> tuple[str, list[Round]]:
    if n == k:
        return "one table", [[tuple(range(n))]]
    if not forbidden:
        if k == 2:
            return "circle method, every pair once", circle_rounds(n)
        candidates = list(resolvable_designs(n, k))
        if not field:
            candidates += [(name, pack_rounds(blocks)) for name, blocks in exact_designs(n, k)]
        if candidates:
            # Fewest tables; among equals the resolvable one (listed first) wins.
            return min(candidates, key=lambda c: sum(len(r) for r in c[1]))
    allowed = comb(n, 2) - len(forbidden)
    base = table_count(n, k, allowed)
    step = n // gcd(n, k)
    rounds: list[Round] = []
    for extra in range(4):
        tables_count = base + extra * step
        rounds, ok = search_rounds(n, k, tables_count, forbidden=forbidden, resolvable=field)
        if not ok and field:
            # No resolvable design this size found: a balanced one whose disjoint tables
            # are packed into deal groups (some groups have one table) beats more tables.
            rounds, ok = search_rounds(n, k, tables_count, forbidden=forbidden, resolvable=False)
        if ok:
            break
    else:
        if any(a in t and b in t for r in rounds for t in r for a, b in forbidden):
            raise ValueError(
                "owner rule: no design was found that keeps every owner's entrants apart; "
                "add entrants of other owners or allow same-owner tables"
            )
    counts: dict[tuple[int, int], int] = {}
    for r in rounds:
        for t in r:
            for i, a in enumerate(t):
                for b in t[i + 1 :]:
                    counts[(a, b)] = counts.get((a, b), 0) + 1
    values = [counts.get((a, b), 0) for a in range(n) for b in range(a + 1, n) if (a, b) not in forbidden]
    name = f"balanced tables, every pair {min(values)}-{max(values)}x"
    if forbidden:
        name += f", {len(forbidden)} same-owner pairs apart"
    return name, rounds


def round_robin_schedule(
    n: int,
    k: int,
    *,
    cycles: int = 1,
    field: bool = False,
    owners: list[int | None] | None = None,
    allow_same_owner: bool = False,
) -> RoundRobinSchedule:
    """The tables of a round robin of n entrants at tables of k seats.

    `owners` (one per entrant, None for house bots) turns on the owner rule unless
    `allow_same_owner`; `field` makes rounds deal groups (field duplicates).
    """
    if not 2 <= k <= 4:
        raise ValueError("tables have 2, 3 or 4 seats")
    if n < k:
        raise ValueError(f"a round robin at tables of {k} needs at least {k} entrants, got {n}")
    if cycles < 1:
        raise ValueError("cycles must be at least 1")
    if owners is not None and len(owners) != n:
        raise ValueError(f"owners: expected one owner per entrant ({n}), got {len(owners)}")
    classes = owner_classes(owners, allow_same_owner=allow_same_owner)
    forbidden = forbidden_pairs(classes) if owners is not None else set()
    if forbidden:
        check_owner_capacity(classes, k)
    design, rounds = _design(n, k, field, forbidden)
    # Deal groups keep one owner's bots apart even where tables need not (owners module).
    group_classes = owner_classes(owners, allow_same_owner=allow_same_owner, single_owner_exempt=False)
    all_rounds = [r for _ in range(cycles) for r in rounds]
    if cycles > 1:
        design = f"{design}, {cycles} cycles"
    flat: list[Block] = []
    round_numbers: list[int] = []
    groups: list[int] = []
    group_no = 0
    for number, tables in enumerate(all_rounds, start=1):
        if field:
            split = split_deal_groups(tables, group_classes) if group_classes else [0] * len(tables)
            groups += [group_no + 1 + g for g in split]
            group_no += max(split) + 1
        else:
            groups += list(range(group_no + 1, group_no + 1 + len(tables)))
            group_no += len(tables)
        flat += tables
        round_numbers += [number] * len(tables)
    seated = arrange_seats(flat, n, k, groups=groups if field else None)
    return RoundRobinSchedule(
        design=design,
        tables=[
            PlannedTable(round=r, seats=s, deal_group=g)
            for r, s, g in zip(round_numbers, seated, groups, strict=True)
        ],
    )


def round_robin_table_count(n: int, k: int) -> int:
    """Upper bound used to warn organisers before scheduling (all combinations)."""
    return comb(n, k)
