"""The collusion report: its statistics (tournaments.scoring.collusion), its read
(tournaments.selectors.collusion: sealed, query counts pinned) and who may see it (the
tournament's organiser and staff; a spectator editing URLs gets nothing)."""

from __future__ import annotations

import math
import random
from functools import lru_cache

import pytest
from django.contrib.auth.models import Permission, User
from django.core.cache import cache
from django.test import Client
from hypothesis import given, settings
from hypothesis import strategies as st
from rest_framework.test import APIClient

from tests.tournaments.conftest import make_result, running_round_robin
from tournaments.scheduling.round_robin import round_robin_schedule
from tournaments.scoring.adjusted import GameRow
from tournaments.scoring.collusion import collusion_report, holm
from tournaments.selectors.collusion import tournament_collusion
from tournaments.services.recording import deal_baselines_compute, table_game_record

PLACE_POINTS = [2, 1, -1, -2]


@lru_cache(maxsize=4)
def schedule(n: int):
    # A field of bots that cannot talk (house bots): every deal is shared by the tables of
    # a round, the design the statistics are checked against.
    return round_robin_schedule(n, 4, field=True, isolated=[True] * n)


def simulated(strengths: list[float], *, colluders: tuple[int, int] | None = None, help_rate: float = 0.0,
              sets: int = 2, seed: int = 0) -> list[GameRow]:
    """A round robin of the platform's schedule, finishing orders drawn from a
    Plackett-Luce model of the strengths (no engine: fast). Colluders at one table move
    both ahead of the others with probability `help_rate` (a pair that gains together)."""
    rng = random.Random(seed)
    rows = []
    for t_no, table in enumerate(schedule(len(strengths)).tables):
        for i in range(sets * 4):
            seats = list(table.seats)
            left = list(range(4))
            order = []
            while left:
                weights = [math.exp(strengths[seats[s]]) for s in left]
                pick = rng.choices(left, weights)[0]
                order.append(pick)
                left.remove(pick)
            if colluders and set(colluders) <= set(seats) and rng.random() < help_rate:
                pair = [s for s in order if seats[s] in colluders]
                order = pair + [s for s in order if s not in pair]
            points = [0] * 4
            for place, s in enumerate(order):
                points[s] = PLACE_POINTS[place]
            rows.append(GameRow(deal=(t_no, i), entrants=seats, points=points))
    return rows


def test_holm_adjusts_step_down() -> None:
    assert holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert holm([]) == [] and holm([0.7]) == [0.7]


def test_a_pair_that_gains_together_is_flagged_and_no_other() -> None:
    strengths = [1.0, 0.6, 0.3, 0.0, -0.2, -0.5, -0.8, -1.2]
    report = collusion_report(simulated(strengths, colluders=(3, 4), help_rate=0.5, sets=4, seed=1))
    top = report.pairs[0]
    assert (top.a, top.b, top.flagged) == (3, 4, True)
    assert top.joint_gain > 1.0 and top.gain_a > 0 and top.gain_b > 0
    assert report.flagged == 1 and report.tested == 28


@pytest.mark.parametrize("seed", range(4))
def test_honest_fields_of_unequal_bots_are_not_flagged(seed: int) -> None:
    """Strengths far apart: the weak pair meets weak opponents less often, which the
    strength model accounts for (without it the two weakest looked like colluders)."""
    report = collusion_report(simulated([1.5, 1.0, 0.5, 0.0, -0.5, -1.0, -1.5, -2.0], seed=100 + seed))
    assert report.flagged == 0, [p for p in report.pairs if p.flagged]


def test_only_pairs_that_can_collude_are_tested() -> None:
    games = simulated([0.0] * 8, seed=3)
    remote = {0, 1, 2}
    report = collusion_report(games, can_collude=lambda e: e in remote)
    tested = {(p.a, p.b) for p in report.pairs if p.tested}
    assert tested == {(0, 1), (0, 2), (1, 2)} and report.tested == 3
    others = [p for p in report.pairs if not p.tested]
    assert others and all(p.note == "a house bot: it cannot collude" and p.p_adjusted is None for p in others)


def test_tables_of_two_and_pairs_never_apart_are_not_tested() -> None:
    two = [GameRow(deal=(i,), entrants=[0, 1], points=[2, -2] if i % 2 else [-2, 2]) for i in range(10)]
    report = collusion_report(two)
    assert [(p.games, p.tested, p.note) for p in report.pairs] == [
        (0, False, "only at tables of two, where the pair are the only players")]
    # Four bots that always sit together: nothing apart to compare with.
    together = [GameRow(deal=(i,), entrants=[0, 1, 2, 3], points=[2, 1, -1, -2]) for i in range(10)]
    report = collusion_report(together)
    assert report.pairs and all(not p.tested and p.note == "no games apart to compare with" for p in report.pairs)
    assert collusion_report([]).pairs == []
    with pytest.raises(ValueError):
        collusion_report(together, alpha=1.5)


@settings(max_examples=20)
@given(st.permutations(list(range(8))), st.integers(0, 10**6))
def test_the_report_does_not_depend_on_entrant_ids(perm: list[int], seed: int) -> None:
    games = simulated([0.5, 0.2, 0.0, 0.0, -0.1, -0.3, 0.4, -0.7], sets=1, seed=seed)
    relabelled = [GameRow(deal=g.deal, entrants=[100 + perm[e] for e in g.entrants], points=g.points) for g in games]
    a = {(p.a, p.b): p for p in collusion_report(games).pairs}
    b = {(p.a, p.b): p for p in collusion_report(relabelled).pairs}
    for (x, y), row in a.items():
        other = b[tuple(sorted((100 + perm[x], 100 + perm[y])))]
        assert other.joint_gain == pytest.approx(row.joint_gain, abs=1e-9)
        assert other.p_value == pytest.approx(row.p_value, abs=1e-9)


# --- the read: sealed, cached, query counts ----------------------------------------------


@pytest.fixture(autouse=True)
def _fresh_cache():
    cache.clear()
    yield
    cache.clear()


def groups(tournament):
    out: dict[int, list] = {}
    for t in tournament.tables.order_by("round", "number"):
        out.setdefault(t.deal_group, []).append(t)
    return out


def play(table, orders) -> None:
    for i in range(table.games_planned):
        table_game_record(table_id=table.pk, result=make_result(i, orders[i % len(orders)]))


@pytest.fixture
def field(bots, house_bots):
    """One remote bot (`owner`'s bot0) among seven house bots: each round's remote table
    shares its deals with the round's table of house bots (remote tables never share with
    each other, tournaments.isolation), so every deal group has two tables."""
    return [bots[0], *house_bots[:7]]


@pytest.mark.django_db
def test_the_report_counts_revealed_games_only_and_its_queries_are_pinned(organiser, field, django_assert_num_queries) -> None:
    tournament = running_round_robin(organiser, field, seats_per_table=4, duplicate_sets=1)
    first, second = next(iter(groups(tournament).values()))
    play(first, [[0, 1, 2, 3], [1, 0, 3, 2]])
    sealed = tournament_collusion(tournament=tournament)
    # During play: the group's other table has not played these deals, so nothing counts.
    assert (sealed.games_scored, sealed.games_withheld, sealed.pairs) == (0, 4, [])
    play(second, [[3, 2, 1, 0]])
    deal_baselines_compute(tournament_id=tournament.pk)
    cache.clear()
    with django_assert_num_queries(4):  # the key, the entrants, the baselines, the seats
        report = tournament_collusion(tournament=tournament)
    assert report.games_scored == 8 and report.games_withheld == 0
    assert len(report.pairs) == 12  # two tables of four: 6 pairs each
    assert all(p.games == 4 for p in report.pairs)
    with django_assert_num_queries(2):  # cached: the key and the entrants
        assert tournament_collusion(tournament=tournament) == report
    names = {p.bot_a for p in report.pairs} | {p.bot_b for p in report.pairs}
    assert names == {s.entrant.bot.name for t in (first, second) for s in t.seats.select_related("entrant__bot")}


# --- who may see it ----------------------------------------------------------------------


@pytest.fixture
def finished(organiser, field):
    tournament = running_round_robin(organiser, field, seats_per_table=4, duplicate_sets=1, name="Report cup")
    first, second = next(iter(groups(tournament).values()))
    play(first, [[0, 1, 2, 3]])
    play(second, [[0, 1, 2, 3]])
    return tournament


@pytest.mark.django_db
def test_only_the_organiser_and_staff_see_the_report(finished, organiser, owner) -> None:
    url = f"/api/v1/tournaments/{finished.slug}/collusion/"
    page = f"/organise/{finished.slug}/collusion/"
    other_organiser = User.objects.create_user("org2")
    other_organiser.user_permissions.add(Permission.objects.get(codename="organise_tournaments"))
    staff = User.objects.create_user("admin", is_staff=True)

    def api(user):
        client = APIClient()
        if user is not None:
            client.force_authenticate(user)
        return client

    def web(user):
        client = Client()
        if user is not None:
            client.force_login(user)
        return client

    # A spectator, a competitor (a bot owner in it) and another organiser get nothing,
    # whatever they add to the URL.
    assert api(None).get(url).status_code in (401, 403)
    for who in (owner, User.objects.get(pk=other_organiser.pk)):
        for suffix in ("", "?alpha=0.5", "?format=json", "?alpha=0.99&format=api"):
            response = api(who).get(url + suffix)
            assert response.status_code == 403, (who, suffix)
            assert "pairs" not in response.content.decode()
        assert web(who).get(page).status_code == 403
        assert "collusion-link" not in web(who).get(f"/tournaments/{finished.slug}/").content.decode()
    anonymous = web(None).get(page)
    assert anonymous.status_code == 302 and "/accounts/login/" in anonymous["Location"]
    assert api(owner).get("/api/v1/tournaments/no-such-cup/collusion/").status_code == 404
    assert "collusion" not in api(None).get(f"/api/v1/tournaments/{finished.slug}/").content.decode()
    # The organiser and staff do.
    for who in (organiser, staff):
        response = api(who).get(url)
        assert response.status_code == 200 and response["Cache-Control"] == "private, no-store"
        body = response.json()
        assert body["games_scored"] == 8 and body["correction"] == "holm" and len(body["pairs"]) == 12
        html = web(who).get(page)
        assert html.status_code == 200 and 'id="collusion"' in html.content.decode()
    assert "collusion-link" in web(organiser).get(f"/tournaments/{finished.slug}/").content.decode()
    # Bad input: a clear error.
    assert api(organiser).get(url + "?alpha=2").json() == {"alpha": ["A number between 0 and 1 (exclusive), e.g. 0.01."]}
    assert api(organiser).get(url + "?alpha=abc").status_code == 400
    assert web(organiser).get(page + "?alpha=nan").status_code == 400
