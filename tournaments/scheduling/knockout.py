"""Knockout brackets: seeded tables, the best k of each table advance, down to a final.

Seeding is serpentine (1..T across, then T..1 back), so every table gets a fair mix of
strong and weak seeds. Tables hold `seats` players when possible; otherwise the entrants are
spread over tables as evenly as possible (never fewer than 2 at a table).

Tie-break at a table (documented in docs/organiser-guide.md), in order: more points over
the table's games; more first places; lower (better) average place; better seed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from math import ceil
from typing import TypeVar

T = TypeVar("T")


@dataclass(frozen=True)
class SeatResult:
    entrant: int
    seed_rank: int
    points: int
    firsts: int
    place_sum: int
    games: int
    forfeited: bool = False

    def sort_key(self) -> tuple:
        average = self.place_sum / self.games if self.games else 99.0
        return (self.forfeited, -self.points, -self.firsts, average, self.seed_rank)


def knockout_tables(
    seeded: Sequence[T], seats: int, owners: Sequence[int | None] | None = None, *, strict: bool = True
) -> list[list[T]]:
    """Split entrants (best seed first) into serpentine-seeded tables of at most `seats`.

    With `owners` (one per entrant, None for house bots and exempt tournaments: see
    tournaments.scheduling.owners), entrants of one owner are then moved apart: each
    conflict is solved by swapping with the entrant of the nearest seed at another table
    that leaves both tables conflict-free, so the seeding changes as little as possible.
    A round of one table (a final) cannot separate anyone. When no swap helps, `strict`
    raises ValueError; otherwise the remaining conflicts stay (later rounds: the entrants
    earned their places).
    """
    n = len(seeded)
    if n < 2:
        raise ValueError("a knockout needs at least 2 entrants")
    if owners is not None and len(owners) != n:
        raise ValueError(f"owners: expected one owner per entrant ({n}), got {len(owners)}")
    count = ceil(n / seats)
    slots: list[list[int]] = [[] for _ in range(count)]
    for i in range(n):
        lap, pos = divmod(i, count)
        slots[pos if lap % 2 == 0 else count - 1 - pos].append(i)
    if owners is not None and count > 1:
        _separate_owners(slots, owners, strict)
    return [[seeded[i] for i in table] for table in slots]


def _separate_owners(tables: list[list[int]], owners: Sequence[int | None], strict: bool) -> None:
    def clash(table: list[int], skip: int | None = None, extra: int | None = None) -> bool:
        seen = [owners[i] for i in table if i != skip]
        if extra is not None:
            seen.append(owners[extra])
        mine = [o for o in seen if o is not None]
        return len(mine) != len(set(mine))

    unsolved: set[int] = set()
    for _ in range(len(owners)):
        conflict = next(
            ((t, i) for t, table in enumerate(tables) for i in table
             if owners[i] is not None and sum(owners[j] == owners[i] for j in table) > 1
             and i != min(j for j in table if owners[j] == owners[i]) and i not in unsolved),
            None,
        )
        if conflict is None:
            return
        t, i = conflict
        candidates = sorted(
            ((abs(j - i), u, j) for u, other in enumerate(tables) if u != t for j in other),
        )
        for _, u, j in candidates:
            if not clash(tables[t], skip=i, extra=j) and not clash(tables[u], skip=j, extra=i):
                tables[t][tables[t].index(i)] = j
                tables[u][tables[u].index(j)] = i
                break
        else:
            if strict:
                raise ValueError(
                    "owner rule: the knockout cannot seat every owner's entrants at different "
                    "tables; add entrants of other owners or allow same-owner tables"
                )
            unsolved.add(i)


def knockout_advance_count(table_size: int, advance: int) -> int:
    """How many advance from a table: at most `advance`, and always fewer than sit there."""
    return max(1, min(advance, table_size - 1))


def knockout_rank_table(results: Sequence[SeatResult]) -> list[SeatResult]:
    """A table's players best first, by the documented tie-break."""
    return sorted(results, key=SeatResult.sort_key)


def knockout_is_final(entrants: int, seats: int) -> bool:
    return entrants <= seats


def knockout_plan(n: int, seats: int, advance: int) -> list[list[int]]:
    """Table sizes of every round of a bracket of n entrants, first round first (for the
    empty bracket and for progress before later rounds exist). Forfeits can only shrink it."""
    rounds = []
    while True:
        tables = ceil(n / seats)
        base, extra = divmod(n, tables)
        sizes = [base + 1] * extra + [base] * (tables - extra)
        rounds.append(sizes)
        if tables == 1:
            return rounds
        n = sum(knockout_advance_count(size, advance) for size in sizes)


def knockout_rounds_needed(n: int, seats: int, advance: int) -> int:
    return len(knockout_plan(n, seats, advance))
