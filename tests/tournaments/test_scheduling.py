"""Scheduling properties: pairs meet equally often (within one), seats are balanced,
known designs are exact, brackets shrink to a final, the ladder pairs close ratings."""

from __future__ import annotations

import itertools
import random
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tournaments.scheduling.designs import pair_counts
from tournaments.scheduling.knockout import (
    SeatResult,
    knockout_advance_count,
    knockout_rank_table,
    knockout_rounds_needed,
    knockout_tables,
)
from tournaments.scheduling.ladder import Candidate, ladder_pick_tables
from tournaments.scheduling.round_robin import round_robin_schedule


def pair_spread(tables, n):
    counts = pair_counts([tuple(sorted(t)) for t in tables], n).values()
    return min(counts), max(counts)


def seat_counts(tables, n, k):
    counts = [[0] * k for _ in range(n)]
    for table in tables:
        for seat, player in enumerate(table):
            counts[player][seat] += 1
    return counts


@pytest.mark.parametrize(
    ("n", "k", "lam", "tables"),
    [
        (8, 4, 3, 14), (9, 4, 3, 18), (12, 4, 3, 33), (13, 4, 1, 13), (16, 4, 1, 20),
        (9, 3, 1, 12), (7, 3, 1, 7), (5, 4, 3, 5),
    ],
)
def test_known_designs_make_every_pair_meet_exactly_lambda_times(n, k, lam, tables) -> None:
    schedule = round_robin_schedule(n, k, seed="s")
    assert len(schedule.tables) == tables
    assert pair_spread(schedule.tables, n) == (lam, lam)
    assert all(len(set(t)) == k for t in schedule.tables)


def test_small_fields_play_all_combinations() -> None:
    schedule = round_robin_schedule(6, 4, seed="s")
    assert sorted(tuple(sorted(t)) for t in schedule.tables) == list(itertools.combinations(range(6), 4))


def test_two_seat_tables_are_a_classic_round_robin() -> None:
    schedule = round_robin_schedule(7, 2, seed="s")
    assert Counter(tuple(sorted(t)) for t in schedule.tables) == Counter(itertools.combinations(range(7), 2))


@settings(max_examples=25, deadline=None)
@given(st.integers(min_value=2, max_value=16), st.integers(min_value=2, max_value=4), st.text(max_size=5))
def test_every_pair_meets_equally_often_within_one(n, k, seed) -> None:
    if n < k:
        with pytest.raises(ValueError):
            round_robin_schedule(n, k, seed=seed)
        return
    schedule = round_robin_schedule(n, k, seed=seed)
    low, high = pair_spread(schedule.tables, n)
    assert low >= 1 and high - low <= 1
    plays = Counter(p for t in schedule.tables for p in t)
    assert len(set(plays.values())) == 1  # everyone plays the same number of tables
    # Starting seats: each entrant's seat counts differ by at most one.
    for row in seat_counts(schedule.tables, n, k):
        assert max(row) - min(row) <= 1


@settings(max_examples=15, deadline=None)
@given(st.integers(min_value=4, max_value=12), st.integers(min_value=2, max_value=4))
def test_duplicate_sets_put_every_entrant_in_every_seat_equally(n, k) -> None:
    if n < k:
        return
    schedule = round_robin_schedule(n, k, seed="dup")
    # The referee plays rotation r of a set with participant (s + r) % k in seat s.
    games = [tuple(table[(s + r) % k] for s in range(k)) for table in schedule.tables for r in range(k)]
    for row in seat_counts(games, n, k):
        assert len(set(row)) == 1
    # And each deal (set) is played by the same players in every rotation.
    for table in schedule.tables:
        hands = {tuple(table[(s + r) % k] for s in range(k)) for r in range(k)}
        assert len(hands) == k


def test_cycles_repeat_the_design() -> None:
    once = round_robin_schedule(8, 4, seed="c")
    twice = round_robin_schedule(8, 4, seed="c", cycles=2)
    assert len(twice.tables) == 2 * len(once.tables)
    assert pair_spread(twice.tables, 8) == (6, 6)


@given(st.integers(min_value=2, max_value=40), st.integers(min_value=2, max_value=4))
def test_knockout_tables_are_serpentine_and_cover_everyone(n, k) -> None:
    tables = knockout_tables(list(range(1, n + 1)), k)
    assert sorted(p for t in tables for p in t) == list(range(1, n + 1))
    sizes = [len(t) for t in tables]
    assert max(sizes) <= k and max(sizes) - min(sizes) <= 1
    if n >= 2 * k:
        # The top seeds are at different tables.
        assert len({i for i, t in enumerate(tables) for p in t if p <= len(tables)}) == len(tables)


def test_knockout_tie_break_rule() -> None:
    results = [
        SeatResult(entrant=1, seed_rank=1, points=3, firsts=1, place_sum=8, games=4),
        SeatResult(entrant=2, seed_rank=2, points=3, firsts=2, place_sum=9, games=4),
        SeatResult(entrant=3, seed_rank=3, points=3, firsts=2, place_sum=8, games=4),
        SeatResult(entrant=4, seed_rank=4, points=3, firsts=2, place_sum=8, games=4),
        SeatResult(entrant=5, seed_rank=5, points=9, firsts=0, place_sum=12, games=4, forfeited=True),
    ]
    ranked = [r.entrant for r in knockout_rank_table(results)]
    # Equal points: more firsts, then lower average place, then better seed; forfeits last.
    assert ranked == [3, 4, 2, 1, 5]
    assert knockout_advance_count(4, 2) == 2
    assert knockout_advance_count(2, 2) == 1
    assert knockout_rounds_needed(16, 4, 2) == 3  # 16 -> 8 -> 4 (final)


def test_ladder_pairs_close_ratings_and_never_one_owner_twice() -> None:
    rng = random.Random(3)
    candidates = [Candidate(bot_id=i, owner_id=i % 3, rating=1000 + 100 * i) for i in range(12)]
    tables = ladder_pick_tables(candidates, seats=2, tables=6, rng=rng, noise=0.0)
    assert tables
    owner = {c.bot_id: c.owner_id for c in candidates}
    rating = {c.bot_id: c.rating for c in candidates}
    used = [b for t in tables for b in t]
    assert len(used) == len(set(used))
    for table in tables:
        assert len({owner[b] for b in table}) == len(table)
    spread = [abs(rating[a] - rating[b]) for a, b in tables]
    assert min(spread) <= 100


def test_ladder_allows_same_owner_when_configured() -> None:
    candidates = [Candidate(bot_id=i, owner_id=1, rating=1500) for i in range(4)]
    assert ladder_pick_tables(candidates, seats=4, tables=1, rng=random.Random(1)) == []
    assert len(ladder_pick_tables(candidates, seats=4, tables=1, rng=random.Random(1), allow_same_owner=True)) == 1
