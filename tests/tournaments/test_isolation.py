"""No two bots that can communicate share a deal across tables.

Every remote bot is presumed able to talk to every other (the owner rule sees accounts,
not people), so in every deal group at most one table seats bots that are not isolated
(tournaments.isolation.bot_isolated). Properties over random fields for the pure
scheduler (round robins of any size, mix and owners; any tables created together), then
the services' knockout rounds and ladder ticks, and that `bot_isolated` is the one place
that decides it."""

from __future__ import annotations

import itertools
import random
from collections import Counter, defaultdict

import pytest
from django.contrib.auth.models import User
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.tournaments.conftest import running_round_robin
from tournaments.isolation import bot_isolated
from tournaments.models import Table
from tournaments.scheduling.deal_groups import arrange_deal_groups, sharing_tables
from tournaments.scheduling.designs import pair_counts
from tournaments.scheduling.round_robin import (
    _design,
    _shared,
    isolation_labels,
    round_robin_schedule,
)
from tournaments.services.accounts import bot_create
from tournaments.services.ladder import ladder_tick
from tournaments.services.tournaments import (
    tournament_create,
    tournament_entrant_add,
    tournament_schedule,
    tournament_start,
)


def remote_tables_per_group(tables, groups, isolated) -> Counter:
    """How many tables of each group seat at least one remote (not isolated) entrant."""
    out: Counter = Counter()
    for table, group in zip(tables, groups, strict=True):
        out[group] += not all(isolated[p] for p in table)
    return out


def test_house_bots_are_isolated_and_remote_bots_are_not(db) -> None:
    staff = User.objects.create_user("staff", is_staff=True)
    person = User.objects.create_user("person")
    house, _ = bot_create(owner=staff, name="h", house_bot="greedy")
    remote, _ = bot_create(owner=person, name="r")
    assert bot_isolated(house) is True
    assert bot_isolated(remote) is False


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    n=st.integers(min_value=4, max_value=12),
    k=st.integers(min_value=2, max_value=4),
    data=st.data(),
)
def test_round_robin_deal_groups_never_seat_remote_bots_at_two_tables(n, k, data) -> None:
    if n < k:
        return
    isolated = data.draw(st.lists(st.booleans(), min_size=n, max_size=n), label="isolated")
    # Owners for some remote bots (house bots: None); at most n // k bots of an owner.
    owners: list[int | None] = [None if iso else 100 + i for i, iso in enumerate(isolated)]
    shared_owner = data.draw(st.booleans(), label="shared owner")
    if shared_owner:
        remote = [i for i, iso in enumerate(isolated) if not iso]
        for i in remote[: max(1, n // k)]:
            owners[i] = 7
    try:
        schedule = round_robin_schedule(n, k, field=True, owners=owners, isolated=isolated)
    except ValueError as exc:  # a field the owner rule cannot seat is refused, with the reason
        assert "owner rule" in str(exc)
        return
    tables = [t.seats for t in schedule.tables]
    groups = [t.deal_group for t in schedule.tables]
    # At most one table of a group seats remote bots.
    assert max(remote_tables_per_group(tables, groups, isolated).values()) <= 1
    by_group = defaultdict(list)
    for t in schedule.tables:
        by_group[t.deal_group].append(t)
    for members in by_group.values():
        seated = [p for t in members for p in t.seats]
        assert len(seated) == len(set(seated))  # each bot plays each deal once
        assert len({t.round for t in members}) == 1
        # The owner rule still holds: no owner at two tables of a group (one table may seat
        # a single owner's bots together, which the owner rule exempts).
        per_table = [{owners[p] for p in t.seats if owners[p] is not None} for t in members]
        assert all(not a & b for a, b in itertools.combinations(per_table, 2))
    assert len(set(Counter(p for t in tables for p in t).values())) == 1
    if not shared_owner:
        # The design is still a round robin: every pair meets equally often within one.
        counts = pair_counts([tuple(sorted(t)) for t in tables], n)
        assert min(counts.values()) >= 1 and max(counts.values()) - min(counts.values()) <= 1
        assert len(counts) == n * (n - 1) // 2
    # A field of house bots only shares every round; remote bots only, nothing.
    if all(isolated):
        assert len(by_group) < len(tables) or all(len(r) == 1 for r in _rounds(schedule))
    if not any(isolated):
        assert len(by_group) == len(tables)


def _rounds(schedule):
    rounds = defaultdict(list)
    for t in schedule.tables:
        rounds[t.round].append(t)
    return list(rounds.values())


@settings(max_examples=200, deadline=None)
@given(data=st.data())
def test_any_tables_created_together_get_groups_with_one_remote_table_at_most(data) -> None:
    """Knockout rounds and ladder ticks: disjoint tables of any entrants."""
    size = data.draw(st.integers(min_value=2, max_value=4), label="seats")
    count = data.draw(st.integers(min_value=1, max_value=8), label="tables")
    entrants = list(range(size * count))
    random.Random(data.draw(st.integers(0, 10**6), label="shuffle")).shuffle(entrants)
    tables = [entrants[i * size:(i + 1) * size] for i in range(count)]
    isolated = {e: data.draw(st.booleans(), label=f"iso{e}") for e in entrants}
    classes = {e: data.draw(st.integers(0, 5), label=f"class{e}") if not isolated[e] else 1000 + e for e in entrants}
    offset = data.draw(st.integers(0, 20), label="offset")
    groups = arrange_deal_groups(tables, isolated=isolated, classes=classes, offset=offset)
    assert max(remote_tables_per_group(tables, groups, isolated).values()) <= 1
    assert sorted(set(groups)) == list(range(len(set(groups))))  # numbered 0.. in table order
    for g in set(groups):  # no owner class at two tables of a group
        per_table = [{classes[p] for p in t} for t, gg in zip(tables, groups, strict=True) if gg == g]
        assert all(not a & b for a, b in itertools.combinations(per_table, 2))
    # Without owner conflicts, tables of isolated bots go to the remote tables first, and
    # evenly: every remote table gets a companion while there are enough.
    plain = arrange_deal_groups(tables, isolated=isolated, offset=offset)
    remote = [i for i, t in enumerate(tables) if not all(isolated[p] for p in t)]
    quiet = len(tables) - len(remote)
    sizes = Counter(plain)
    if remote:
        shares = [sizes[plain[i]] - 1 for i in remote]
        assert max(shares) - min(shares) <= 1 and sum(shares) == quiet
    else:
        assert len(sizes) == 1  # one group, as before
    assert sharing_tables(tables, plain) == sum(v for v in sizes.values() if v > 1)


def test_a_mixed_field_is_labelled_so_that_more_tables_share_deals() -> None:
    # 12 entrants, 4 of them remote: the design's labels are interchangeable, and giving the
    # house bots the right ones turns more of their tables into companions of remote tables.
    isolated = [False] * 4 + [True] * 8
    _, rounds = _design(12, 4, True, set())
    perm = isolation_labels(rounds, isolated)
    assert sorted(perm) == list(range(12))
    back = {label: e for e, label in enumerate(perm)}
    relabelled = [[tuple(sorted(back[p] for p in t)) for t in r] for r in rounds]
    assert _shared(relabelled, isolated) > _shared(rounds, isolated)
    flat = [t for r in rounds for t in r]
    assert sorted(pair_counts(flat, 12).values()) == sorted(pair_counts([t for r in relabelled for t in r], 12).values())
    schedule = round_robin_schedule(12, 4, field=True, isolated=isolated)
    tables = [t.seats for t in schedule.tables]
    groups = [t.deal_group for t in schedule.tables]
    assert max(remote_tables_per_group(tables, groups, isolated).values()) <= 1
    assert sharing_tables(tables, groups) == _shared(relabelled, isolated) >= 14
    assert round_robin_schedule(12, 4, field=True, isolated=isolated) == schedule  # deterministic


def test_field_duplicates_need_to_know_who_is_isolated() -> None:
    with pytest.raises(ValueError, match="isolated"):
        round_robin_schedule(8, 4, field=True)
    with pytest.raises(ValueError, match="one flag per entrant"):
        round_robin_schedule(8, 4, field=True, isolated=[True])


# --- the services: round robins, knockout rounds and ladder ticks -----------------------


@pytest.fixture
def sybil_field(db):
    """Four sign-up accounts of one person, one bot each, and eight house bots."""
    staff = User.objects.create_user("house-owner", is_staff=True)
    house = [bot_create(owner=staff, name=f"house-{i}", house_bot=("greedy", "heuristic", "random")[i % 3])[0]
             for i in range(8)]
    sybils = [bot_create(owner=User.objects.create_user(f"sybil{i}"), name=f"sybil-{i}")[0] for i in range(4)]
    return house, sybils


def assert_no_group_seats_two_remote_tables(tournament) -> int:
    by_group = defaultdict(list)
    for table in Table.objects.filter(tournament=tournament).prefetch_related("seats__entrant__bot"):
        by_group[table.deal_group].append(table)
    for tables in by_group.values():
        remote = [t for t in tables if not all(bot_isolated(s.entrant.bot) for s in t.seats.all())]
        assert len(remote) <= 1, [t.number for t in remote]
    return sum(len(tables) for tables in by_group.values() if len(tables) > 1)


@pytest.mark.django_db
def test_the_issue_field_round_robin(organiser, sybil_field) -> None:
    """The field of the sybil audit: 12 entrants, 33 tables in 11 rounds; before, the four sybils sat
    in the same deal group in 11 of 11 groups."""
    house, sybils = sybil_field
    t = running_round_robin(organiser, [*sybils, *house], seats_per_table=4, duplicate_sets=1)
    assert t.tables.count() == 33
    shared = assert_no_group_seats_two_remote_tables(t)
    assert shared >= 14  # house tables still give remote tables counterparts
    # Tables carry their round of the schedule (before: every table was round 1).
    assert sorted(set(t.tables.values_list("round", flat=True))) == list(range(1, 12))
    for r in range(1, 12):
        seated = list(t.tables.filter(round=r).values_list("seats__entrant_id", flat=True))
        assert len(seated) == len(set(seated)) == 12


@pytest.mark.django_db
def test_knockout_rounds_and_ladder_ticks_keep_remote_tables_apart(organiser, sybil_field) -> None:
    house, sybils = sybil_field
    ko = tournament_create(organiser=organiser, name="KO", format="knockout", seats_per_table=4)
    for bot in [*sybils, *house]:
        tournament_entrant_add(tournament=ko, bot=bot)
    tournament_start(tournament=ko)
    tournament_schedule(tournament_id=ko.pk)
    assert ko.tables.count() == 3
    assert_no_group_seats_two_remote_tables(ko)
    ladder = tournament_create(organiser=organiser, name="L", format="ladder", seats_per_table=2,
                               ladder_tables_per_tick=6)
    for bot in [*sybils, *house]:
        tournament_entrant_add(tournament=ladder, bot=bot)
    tournament_start(tournament=ladder)
    tournament_schedule(tournament_id=ladder.pk)
    ids = ladder_tick(tournament=ladder, connected={str(b.pk): "1" for b in sybils}, rng=random.Random(3))
    assert len(ids) == 6
    assert_no_group_seats_two_remote_tables(ladder)


@pytest.mark.django_db
def test_bot_isolated_is_the_one_place_that_decides(organiser, sybil_field, monkeypatch) -> None:
    """Hosted bots will be isolated by extending `bot_isolated`: once it says a remote bot
    is isolated, every format lets it share deals, so nothing else decides."""
    house, sybils = sybil_field
    before = running_round_robin(organiser, [*sybils, *house], name="before", seats_per_table=4)
    monkeypatch.setattr("tournaments.services.tournaments.bot_isolated", lambda bot: True)
    after = running_round_robin(organiser, [*sybils, *house], name="after", seats_per_table=4)
    # All "isolated": every round is one group of 3 tables, as for house bots.
    assert after.tables.values("deal_group").distinct().count() == 11
    assert before.tables.values("deal_group").distinct().count() > 11
