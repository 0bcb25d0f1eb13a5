"""Identical bots get indistinguishable luck-adjusted scores.

The schedule cannot give every pair the same number of counterpart games (8 entrants in
2-table deal groups: 0-2 tables per pair), and a counterpart's points on the same cards
carry its own skill and its opponents'. Uncorrected, two identical bots whose
counterparts differed got significantly different adjusted scores; the scoring now
corrects for the counterparts' strength (tournaments.scoring.adjusted).

First a simulation with the platform's schedule, engine games and scoring code (seconds),
then the platform itself: a tournament of house bots played by the real referee and
worker, whose luck-adjusted standings are the corrected ones."""

from __future__ import annotations

import itertools
import math
import random
import statistics
import zlib
from collections import defaultdict

import pytest
from django.contrib.auth.models import User

from tests.tournaments.test_sybil_accounts import platform, play_to_the_end  # noqa: F401 - a fixture
from tournaments.models import Deal, GameSeat
from tournaments.scheduling.round_robin import round_robin_schedule
from tournaments.scoring.adjusted import GameRow, adjusted_standings
from tournaments.scoring.baseline import deal_baseline, house_bot_class, play_deal
from tournaments.selectors.adjusted import tournament_luck_adjusted
from tournaments.services.accounts import bot_create
from tournaments.services.tournaments import tournament_create, tournament_entrant_add

# The field where the design's counterparts are most uneven for two identical bots:
# entrants 0-3 greedy, 4-7 random (8 entrants at tables of 4: 7 rounds of 2 tables).
KINDS = ["greedy"] * 4 + ["random"] * 4


def deal_groups(n: int) -> list[list[tuple[int, ...]]]:
    groups: dict[int, list[tuple[int, ...]]] = defaultdict(list)
    for t in round_robin_schedule(n, 4, field=True, isolated=[True] * n).tables:
        groups[t.deal_group].append(t.seats)
    return list(groups.values())


def strong_counterparts(groups, entrant: int) -> int:
    """Tables at which a greedy bot held `entrant`'s seat of the same deal."""
    return sum(
        1 for tables in groups for a, b in itertools.permutations(tables, 2)
        for x, y in zip(a, b, strict=True) if x == entrant and KINDS[y] == "greedy"
    )


def simulate(tournaments: int, games: int) -> list[list[GameRow]]:
    """Whole tournaments of engine games with fresh deals, baseline greedy x 4."""
    groups = deal_groups(len(KINDS))
    out = []
    for r in range(tournaments):
        rows = []
        for gid, tables in enumerate(groups):
            for i in range(games):
                seed = f"identical/{r}/{gid}/{i}"
                base = deal_baseline(seed, 4, bots=("greedy",))
                for t_no, table in enumerate(tables):
                    random.seed(zlib.crc32(f"{r}/{gid}/{t_no}/{i}".encode()))
                    points = play_deal(seed, [house_bot_class(KINDS[e])() for e in table])
                    rows.append(GameRow(deal=(gid, i), entrants=table, points=points, baseline=base))
        out.append(rows)
    return out


def z_of(values: list[float]) -> tuple[float, float]:
    mean = statistics.fmean(values)
    return mean, mean / (statistics.stdev(values) / math.sqrt(len(values)))


def test_identical_bots_adjusted_scores_are_indistinguishable_over_many_tournaments() -> None:
    groups = deal_groups(len(KINDS))
    randoms = [e for e, kind in enumerate(KINDS) if kind == "random"]
    x, y = max(itertools.combinations(randoms, 2),
               key=lambda p: abs(strong_counterparts(groups, p[0]) - strong_counterparts(groups, p[1])))
    uneven = abs(strong_counterparts(groups, x) - strong_counterparts(groups, y))
    played = simulate(tournaments=40, games=5)
    corrected = [{r.entrant: r.adjusted_mean for r in adjusted_standings(rows)} for rows in played]
    for a, b in itertools.combinations(randoms, 2):
        _, z = z_of([m[a] - m[b] for m in corrected])
        assert abs(z) < 3, (a, b, z)
    for a, b in itertools.combinations([e for e, kind in enumerate(KINDS) if kind == "greedy"], 2):
        _, z = z_of([m[a] - m[b] for m in corrected])
        assert abs(z) < 3, (a, b, z)
    if uneven >= 2:
        # The same games scored without the correction: the bot compared more often with greedy
        # counterparts looks clearly worse than its identical twin.
        old = [{r.entrant: r.adjusted_mean for r in adjusted_standings(rows, correct_counterparts=False)} for rows in played]
        mean, z = z_of([m[x] - m[y] for m in old])
        assert abs(z) > 3 and (mean > 0) == (strong_counterparts(groups, x) < strong_counterparts(groups, y)), (mean, z)


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_the_platforms_luck_adjusted_standings_correct_for_counterparts(platform) -> None:  # noqa: F811
    """A default round robin of eight house bots (four greedy, four random) played by the
    referee and the worker: the standings the site shows are the corrected scores of its
    own games, and the identical bots are within their intervals of each other."""
    staff = User.objects.create_user("house", is_staff=True)
    organiser = User.objects.create_user("organiser", is_staff=True)
    bots = [bot_create(owner=staff, name=f"{kind}-{i}", house_bot=kind)[0] for i, kind in enumerate(KINDS)]
    tournament = tournament_create(organiser=organiser, name="Twins", format="round_robin", seats_per_table=4,
                                   games_per_table=12, connect_deadline_s=60)
    for bot in bots:  # entry order is the seeding of unrated bots: entrant i is KINDS[i]
        tournament_entrant_add(tournament=tournament, bot=bot)
    play_to_the_end(tournament)
    shown = {r.bot_name: r for r in tournament_luck_adjusted(tournament=tournament).rows}
    baselines = dict(Deal.objects.filter(tournament=tournament).values_list("pk", "baseline"))
    games: dict[int, tuple[int, list[int], list[int]]] = {}
    for game_id, deal_id, name, points in (
        GameSeat.objects.filter(game__table__tournament=tournament).order_by("game_id", "seat")
        .values_list("game_id", "game__deal_id", "bot__name", "points")
    ):
        games.setdefault(game_id, (deal_id, [], []))
        games[game_id][1].append(bots.index(next(b for b in bots if b.name == name)))
        games[game_id][2].append(points)
    rows = [GameRow(deal=d, entrants=e, points=p, baseline=baselines[d]) for d, e, p in games.values()]
    assert len(rows) == 14 * 12 and len({g.deal for g in rows}) == 7 * 12  # 2 tables a deal
    expected = {bots[r.entrant].name: r for r in adjusted_standings(rows)}
    for name, row in shown.items():
        assert row.adjusted_mean == pytest.approx(expected[name].adjusted_mean, abs=1e-9)
        assert row.adjusted_ci == pytest.approx(expected[name].adjusted_ci, abs=1e-9)
    for kind in ("greedy", "random"):
        twins = [shown[b.name] for b in bots if b.house_bot == kind]
        for a, b in itertools.combinations(twins, 2):
            z = (a.adjusted_mean - b.adjusted_mean) / (math.hypot(a.adjusted_ci, b.adjusted_ci) / 1.96)
            assert abs(z) < 4, (a.bot_name, b.bot_name, z)
    # And greedy beats random, the difference the adjusted column is for.
    assert min(shown[b.name].adjusted_mean for b in bots[:4]) > max(shown[b.name].adjusted_mean for b in bots[4:])
