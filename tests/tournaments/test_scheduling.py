"""Scheduling properties: pairs meet equally often (within one), relative positions and
seats are balanced, designs are deterministic in size and content, field duplicate deal
groups never deal a bot twice, owners' entrants never meet, known designs are exact,
brackets shrink to a final, the ladder pairs close ratings."""

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


def ISOLATED(n):
    return [True] * n


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
    schedule = round_robin_schedule(n, k)
    assert len(schedule.tables) == tables
    assert pair_spread(schedule.seatings, n) == (lam, lam)
    assert all(len(set(t)) == k for t in schedule.seatings)


def test_small_fields_play_all_combinations() -> None:
    schedule = round_robin_schedule(6, 4)
    assert sorted(tuple(sorted(t)) for t in schedule.seatings) == list(itertools.combinations(range(6), 4))


def test_two_seat_tables_are_a_classic_round_robin() -> None:
    schedule = round_robin_schedule(7, 2)
    assert Counter(tuple(sorted(t)) for t in schedule.seatings) == Counter(itertools.combinations(range(7), 2))


@settings(max_examples=25, deadline=None)
@given(st.integers(min_value=2, max_value=16), st.integers(min_value=2, max_value=4), st.booleans())
def test_every_pair_meets_equally_often_within_one(n, k, field) -> None:
    if n < k:
        with pytest.raises(ValueError):
            round_robin_schedule(n, k, field=field, isolated=ISOLATED(n))
        return
    schedule = round_robin_schedule(n, k, field=field, isolated=ISOLATED(n))
    low, high = pair_spread(schedule.seatings, n)
    assert low >= 1 and high - low <= 1
    plays = Counter(p for t in schedule.seatings for p in t)
    assert len(set(plays.values())) == 1  # everyone plays the same number of tables
    # Starting seats are balanced after relative positions (seat numbers carry no
    # advantage: deals are random and the 3 of spades starts).
    for row in seat_counts(schedule.seatings, n, k):
        assert max(row) - min(row) <= 3


@settings(max_examples=15, deadline=None)
@given(st.integers(min_value=4, max_value=12), st.integers(min_value=2, max_value=4))
def test_duplicate_sets_put_every_entrant_in_every_seat_equally(n, k) -> None:
    if n < k:
        return
    schedule = round_robin_schedule(n, k)
    # The referee plays rotation r of a set with participant (s + r) % k in seat s.
    games = [tuple(table[(s + r) % k] for s in range(k)) for table in schedule.seatings for r in range(k)]
    for row in seat_counts(games, n, k):
        assert len(set(row)) == 1
    # And each deal (set) is played by the same players in every rotation.
    for table in schedule.seatings:
        hands = {tuple(table[(s + r) % k] for s in range(k)) for r in range(k)}
        assert len(hands) == k


@pytest.mark.parametrize("field", [False, True])
@pytest.mark.parametrize(("n", "k"), [(8, 4), (10, 4), (11, 4), (13, 4), (9, 3), (12, 3), (7, 2)])
def test_designs_are_a_deterministic_function_of_their_inputs(n, k, field) -> None:
    first = round_robin_schedule(n, k, field=field, isolated=ISOLATED(n))
    assert round_robin_schedule(n, k, field=field, isolated=ISOLATED(n)) == first


def test_ten_and_eleven_entrants_always_get_ten_and_eleven_tables() -> None:
    # Before: the table count depended on the tournament seed (11 entrants: 22 tables for
    # half the seeds). Tables of 4 hold 4 entrants, so 10 and 11 are the fewest tables in
    # which everyone plays equally often and every pair meets.
    for field in (False, True):
        assert len(round_robin_schedule(10, 4, field=field, isolated=ISOLATED(10)).tables) == 10
        assert len(round_robin_schedule(11, 4, field=field, isolated=ISOLATED(11)).tables) == 11


def relative_positions(seatings, k):
    """Pair -> how often the second sat 1, 2, ... k-1 places after the first."""
    out = {}
    for table in seatings:
        for i, a in enumerate(table):
            for j, b in enumerate(table):
                if a < b:
                    out.setdefault((a, b), [0] * k)[(j - i) % k] += 1
    return {pair: row[1:] for pair, row in out.items()}


def test_eight_entrants_never_sit_in_the_same_relative_position_at_every_shared_table() -> None:
    # Who plays directly after whom matters. Before: 15.6% of pairs (4-5 of 28, by seed)
    # sat in the same relative position at all 3 of their shared tables.
    for field in (False, True):
        rows = relative_positions(round_robin_schedule(8, 4, field=field, isolated=ISOLATED(8)).seatings, 4)
        assert len(rows) == 28
        assert all(sum(r) == 3 for r in rows.values())
        assert not [pair for pair, r in rows.items() if max(r) == 3]
        # Most pairs see all three positions once each.
        assert sum(1 for r in rows.values() if r == [1, 1, 1]) >= 20


@pytest.mark.parametrize("n", range(5, 17))
def test_relative_positions_are_balanced_across_designs(n) -> None:
    rows = relative_positions(round_robin_schedule(n, 4).seatings, 4)
    always_same = [r for r in rows.values() if sum(r) > 1 and max(r) == sum(r)]
    assert len(always_same) <= 1  # one pair at most (7 entrants), 0 for the others
    assert max(max(r) - min(r) for r in rows.values()) <= 2


@pytest.mark.parametrize(("n", "k"), [(8, 4), (12, 4), (16, 4), (9, 3), (12, 3), (10, 2), (14, 4)])
def test_field_deal_groups_deal_every_bot_each_deal_at_most_once(n, k) -> None:
    schedule = round_robin_schedule(n, k, field=True, isolated=ISOLATED(n))
    groups = {}
    for t in schedule.tables:
        groups.setdefault(t.deal_group, []).append(t)
    for tables in groups.values():
        players = [p for t in tables for p in t.seats]
        assert len(players) == len(set(players))  # disjoint tables: each bot once per deal
        assert len({t.round for t in tables}) == 1
    # Resolvable designs: every round is one deal group covering n // k tables.
    if n % k in (0, 1):
        assert all(len(tables) == n // k for tables in groups.values())


def test_field_counterparts_vary() -> None:
    # At 8 entrants a deal group is two tables: a bot's counterpart (same seat, other table)
    # holds its cards. Over 7 rounds it should meet many different counterparts.
    schedule = round_robin_schedule(8, 4, field=True, isolated=ISOLATED(8))
    groups = {}
    for t in schedule.tables:
        groups.setdefault(t.deal_group, []).append(t.seats)
    counterparts = Counter()
    for a, b in groups.values():
        for x, y in zip(a, b, strict=True):
            counterparts[frozenset((x, y))] += 1
    assert max(counterparts.values()) <= 2
    assert len(counterparts) >= 20


def test_non_field_tables_are_each_their_own_deal_group() -> None:
    schedule = round_robin_schedule(8, 4)
    assert len({t.deal_group for t in schedule.tables}) == len(schedule.tables)


OWNERS_8 = [1, 1, 2, 2, 3, 3, 4, 4]


@pytest.mark.parametrize("field", [False, True])
@pytest.mark.parametrize(
    ("owners", "k"),
    [(OWNERS_8, 4), ([1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6], 4), ([1, 1, 1, 2, 2, 2, 3, 3, 3], 3),
     ([7, 7, None, None, 8, 9, 10, 11], 4), ([1, 1, 2, 2, 3, 3], 2)],
)
def test_owner_rule_keeps_one_owners_entrants_apart(owners, k, field) -> None:
    n = len(owners)
    schedule = round_robin_schedule(n, k, owners=owners, field=field, isolated=ISOLATED(n))
    same = {(a, b) for a in range(n) for b in range(a + 1, n) if owners[a] is not None and owners[a] == owners[b]}
    counts = pair_counts([tuple(sorted(t)) for t in schedule.seatings], n)
    assert all(counts[p] == 0 for p in same)
    allowed = [c for p, c in counts.items() if p not in same]
    assert min(allowed) >= 1 and max(allowed) - min(allowed) <= 1
    plays = Counter(p for t in schedule.seatings for p in t)
    assert len(set(plays.values())) == 1
    # Nor do they share a deal group (field duplicates).
    groups = {}
    for t in schedule.tables:
        groups.setdefault(t.deal_group, set()).update(t.seats)
    for members in groups.values():
        mine = [owners[p] for p in members if owners[p] is not None]
        assert len(mine) == len(set(mine))


def test_owner_rule_exemptions() -> None:
    # House bots (None) never conflict; one owner alone has nobody to collude against; an
    # organiser may allow same-owner tables explicitly: then the full design is used.
    full = round_robin_schedule(8, 4)
    assert round_robin_schedule(8, 4, owners=[5] * 8) == full
    assert round_robin_schedule(8, 4, owners=[None] * 8) == full
    assert round_robin_schedule(8, 4, owners=[5] * 6 + [None, None]) == full
    assert round_robin_schedule(8, 4, owners=OWNERS_8, allow_same_owner=True) == full


def test_owner_rule_that_cannot_be_kept_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="one owner has 5 of the 8 entrants"):
        round_robin_schedule(8, 4, owners=[1, 1, 1, 1, 1, 2, 3, 4])
    with pytest.raises(ValueError, match="at least 4 different owners"):
        round_robin_schedule(8, 4, owners=[1, 1, 1, 1, 2, 2, 2, 2][:6] + [3, 3])
    with pytest.raises(ValueError, match="one owner per entrant"):
        round_robin_schedule(8, 4, owners=[1, 2])


def test_knockout_keeps_owners_apart_with_the_least_change_of_seeding() -> None:
    entrants = list(range(1, 9))  # seeds 1..8
    plain = knockout_tables(entrants, 4)
    owners = [1, 2, 3, 4, 5, 6, 7, 1]  # seeds 1 and 8 share an owner (and a serpentine table)
    assert any({1, 8} <= set(t) for t in plain)
    tables = knockout_tables(entrants, 4, owners)
    assert not any({1, 8} <= set(t) for t in tables)
    moved = sum(1 for a, b in zip(plain, tables, strict=True) for x in a if x not in b)
    assert moved == 2  # one swap
    assert sorted(p for t in tables for p in t) == entrants
    # A final (one table) cannot separate anyone; a field that cannot be split is an error.
    assert knockout_tables([1, 2, 3], 4, [1, 1, 2]) == [[1, 2, 3]]
    with pytest.raises(ValueError, match="owner rule"):
        knockout_tables(list(range(6)), 3, [1, 1, 1, 1, 2, 3])
    assert knockout_tables(list(range(6)), 3, [1, 1, 1, 1, 2, 3], strict=False)


def test_cycles_repeat_the_design() -> None:
    once = round_robin_schedule(8, 4)
    twice = round_robin_schedule(8, 4, cycles=2)
    assert len(twice.tables) == 2 * len(once.tables)
    assert pair_spread(twice.seatings, 8) == (6, 6)
    # Relative positions are balanced over both cycles: 6 shared tables, 2 per position.
    assert all(r == [2, 2, 2] for r in relative_positions(twice.seatings, 4).values())


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


def test_ladder_house_bots_are_exempt_from_the_owner_rule() -> None:
    # Two bots of owner 1 and two house bots (owned by staff user 9): one table, the two
    # owner-1 bots apart is impossible at 4 seats, but house bots may sit with anyone.
    candidates = [
        Candidate(bot_id=1, owner_id=1, rating=1500), Candidate(bot_id=2, owner_id=2, rating=1500),
        Candidate(bot_id=3, owner_id=9, rating=1500, house=True),
        Candidate(bot_id=4, owner_id=9, rating=1500, house=True),
    ]
    tables = ladder_pick_tables(candidates, seats=4, tables=1, rng=random.Random(1))
    assert [sorted(t) for t in tables] == [[1, 2, 3, 4]]
    plain = [Candidate(bot_id=c.bot_id, owner_id=c.owner_id, rating=1500) for c in candidates]
    assert ladder_pick_tables(plain, seats=4, tables=1, rng=random.Random(1)) == []
