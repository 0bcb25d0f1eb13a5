"""Round-robin schedules: who sits at which table, in which seat, playing which deals.

A schedule is a deterministic function of its inputs (entrant count, seats, cycles,
format, owners): no seed. Exact designs (every pair meets exactly λ times) are used when
one is known; otherwise a deterministic local search finds tables where every entrant
plays equally often and pair counts differ by at most one, with the fewest tables that
allow it (so 10 entrants at tables of 4 always get 10 tables, 11 always get 11).

Tables are grouped in rounds of disjoint tables. With field duplicates (`field=True`) a
round's tables are split into deal groups (tournaments.scheduling.deal_groups): tables of
a group play the same deals seat for seat, each entrant at most once, so nobody is ever
dealt a deal it has seen (docs/organiser-guide.md), and at most one table of a group
seats entrants that are not isolated (remote bots, presumed able to talk to each other);
the design is then chosen resolvable (a known resolvable design, or the search keeps
every round's tables disjoint). Otherwise every table is its own deal group. When the
field mixes isolated and remote entrants (and no owner rule constrains the design), the
design's labels are permuted so that as many tables as possible can share deals
(`isolation_labels`): every pair still meets equally often.

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
from collections.abc import Sequence
from dataclasses import dataclass
from math import comb, gcd

from tournaments.scheduling.deal_groups import arrange_deal_groups, sharing_tables
from tournaments.scheduling.designs import Block, exact_designs, resolvable_designs
from tournaments.scheduling.owners import (
    check_owner_capacity,
    forbidden_pairs,
    owner_classes,
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


def _round_groups(rounds: list[Round], isolated: Sequence[bool], classes: Sequence[int] | None) -> list[list[int]]:
    return [
        arrange_deal_groups(tables, isolated=isolated, classes=classes, offset=number)
        for number, tables in enumerate(rounds)
    ]


def _shared(rounds: list[Round], isolated: Sequence[bool]) -> int:
    return sum(sharing_tables(tables, groups) for tables, groups in zip(rounds, _round_groups(rounds, isolated, None), strict=True))


def isolation_labels(rounds: list[Round], isolated: Sequence[bool], *, restarts: int = 6) -> list[int]:
    """A permutation of the design's labels (entrant e plays as label `perm[e]`) under
    which as many tables as possible share deals: which labels the isolated entrants
    take decides how often a round has tables of isolated entrants only.

    Every label of a design without forbidden pairs is interchangeable (pair counts,
    rounds and table counts do not change), so this changes nothing but which tables may
    share. Hill climbing over swaps of an isolated and a remote label, from the identity
    and from a few deterministic random starts; the identity is kept unless beaten.
    """
    n = len(isolated)
    remote_count = sum(1 for flag in isolated if not flag)
    if remote_count in (0, n):
        return list(range(n))
    rng = random.Random(f"isolation-labels/{n}/{remote_count}/{sum(len(r) for r in rounds)}")

    def climb(flags: list[bool]) -> tuple[int, list[bool]]:
        best = _shared(rounds, flags)
        improved = True
        while improved:
            improved = False
            for a in range(n):
                for b in range(n):
                    if flags[a] and not flags[b]:
                        flags[a], flags[b] = False, True
                        value = _shared(rounds, flags)
                        if value > best:
                            best, improved = value, True
                        else:
                            flags[a], flags[b] = True, False
        return best, flags

    best_value, best_flags = climb(list(isolated))
    for _ in range(restarts):
        start = list(isolated)
        rng.shuffle(start)
        value, flags = climb(start)
        if value > best_value:
            best_value, best_flags = value, flags
    if best_flags == list(isolated):
        return list(range(n))
    # Isolated entrants take the isolated labels in order, remote ones the others.
    iso_labels = [label for label in range(n) if best_flags[label]]
    remote_labels = [label for label in range(n) if not best_flags[label]]
    perm = [0] * n
    for e in range(n):
        perm[e] = (iso_labels if isolated[e] else remote_labels).pop(0)
    return perm


def round_robin_schedule(
    n: int,
    k: int,
    *,
    cycles: int = 1,
    field: bool = False,
    owners: list[int | None] | None = None,
    allow_same_owner: bool = False,
    isolated: Sequence[bool] | None = None,
) -> RoundRobinSchedule:
    """The tables of a round robin of n entrants at tables of k seats.

    `owners` (one per entrant, None for house bots) turns on the owner rule unless
    `allow_same_owner`; `field` makes rounds deal groups (field duplicates), which needs
    `isolated` (one flag per entrant, from tournaments.isolation.bot_isolated): at most
    one table of a group seats entrants that are not isolated.
    """
    if not 2 <= k <= 4:
        raise ValueError("tables have 2, 3 or 4 seats")
    if n < k:
        raise ValueError(f"a round robin at tables of {k} needs at least {k} entrants, got {n}")
    if cycles < 1:
        raise ValueError("cycles must be at least 1")
    if owners is not None and len(owners) != n:
        raise ValueError(f"owners: expected one owner per entrant ({n}), got {len(owners)}")
    if field and isolated is None:
        raise ValueError("field duplicates: say which entrants are isolated (tournaments.isolation)")
    if isolated is not None and len(isolated) != n:
        raise ValueError(f"isolated: expected one flag per entrant ({n}), got {len(isolated)}")
    flags = list(isolated) if isolated is not None else [False] * n
    classes = owner_classes(owners, allow_same_owner=allow_same_owner)
    forbidden = forbidden_pairs(classes) if owners is not None else set()
    if forbidden:
        check_owner_capacity(classes, k)
    design, rounds = _design(n, k, field, forbidden)
    if field and not forbidden:
        # Labels are interchangeable: let the isolated entrants take those that give the
        # most tables of isolated entrants only.
        perm = isolation_labels(rounds, flags)
        if perm != list(range(n)):
            back = {label: e for e, label in enumerate(perm)}
            rounds = [[tuple(sorted(back[p] for p in t)) for t in r] for r in rounds]
    # Deal groups keep one owner's bots apart even where tables need not (owners module).
    group_classes = (
        owner_classes(owners, allow_same_owner=allow_same_owner, single_owner_exempt=False)
        if owners is not None else None
    )
    all_rounds = [r for _ in range(cycles) for r in rounds]
    if cycles > 1:
        design = f"{design}, {cycles} cycles"
    flat: list[Block] = []
    round_numbers: list[int] = []
    groups: list[int] = []
    group_no = 0
    for number, tables in enumerate(all_rounds, start=1):
        if field:
            split = arrange_deal_groups(tables, isolated=flags, classes=group_classes, offset=number)
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
