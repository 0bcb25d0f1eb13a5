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


def knockout_tables(seeded: Sequence[T], seats: int) -> list[list[T]]:
    """Split entrants (best seed first) into serpentine-seeded tables of at most `seats`."""
    n = len(seeded)
    if n < 2:
        raise ValueError("a knockout needs at least 2 entrants")
    count = ceil(n / seats)
    tables: list[list[T]] = [[] for _ in range(count)]
    for i, entrant in enumerate(seeded):
        lap, pos = divmod(i, count)
        tables[pos if lap % 2 == 0 else count - 1 - pos].append(entrant)
    return tables


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
