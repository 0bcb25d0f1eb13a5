"""The luck baselines run on their own queue: a worker that records games never computes them,
and the luck-adjusted standings get them once a worker consumes the analysis queue.

Real Celery workers (Redis when CELERY_BROKER_URL is set, else the in-process transport), a
real referee on a loopback port, house bots, the database of the test run.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.conf import settings
from django.contrib.auth.models import User

from tests.celery_helpers import isolated_celery_worker
from tests.needs import need_postgresql
from tests.platform_referee import platform_referee
from tests.tournaments.test_worker import wait_for
from tournaments.models import Deal, Game, Tournament
from tournaments.selectors.adjusted import tournament_luck_adjusted
from tournaments.services.accounts import bot_create
from tournaments.services.tournaments import (
    tournament_create,
    tournament_entrant_add,
    tournament_start,
)

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def referee(settings) -> Iterator[str]:
    with platform_referee(settings) as thread:
        yield thread.target


def test_the_recording_worker_leaves_the_baselines_to_the_analysis_queue(referee) -> None:
    # Two workers' threads write at once (tables, then baselines while the first is up):
    # SQLite's shared in-memory test database locks whole tables across threads.
    need_postgresql("a tables worker and an analysis worker run at once")
    staff = User.objects.create_user("house", is_staff=True)
    organiser = User.objects.create_user("organiser", is_staff=True)
    tournament = tournament_create(
        organiser=organiser, name="Analysis cup", format="round_robin", seats_per_table=4,
        duplicate_sets=1, move_time_ms=500, time_bank_ms=5000, connect_deadline_s=60,
    )
    for i, policy in enumerate(["random", "greedy", "heuristic", "random", "greedy"]):
        tournament_entrant_add(tournament=tournament, bot=bot_create(owner=staff, name=f"house-{i}", house_bot=policy)[0])
    with isolated_celery_worker(analysis=False):  # a worker of tables only, as compose's `worker`
        analysis_queue = settings.TIENLEN_ANALYSIS_QUEUE  # where the baselines are sent
        tournament_start(tournament=tournament)
        wait_for(lambda: Tournament.objects.get(pk=tournament.pk).status == "finished", what="the finish")
        deals = Deal.objects.filter(tournament=tournament)
        # Every game recorded and every deal revealed, but no simulation ran on that worker.
        assert Game.objects.filter(table__tournament=tournament).count() == 20
        assert deals.count() and not deals.filter(revealed_at__isnull=True).exists()
        assert not deals.filter(baseline__isnull=False).exists()
        before = tournament_luck_adjusted(tournament=tournament)
        assert before.games_scored == 20 and before.deals_with_baseline == 0
    # The baselines wait on the analysis queue; a worker consuming it computes them. (A
    # second worker of its own, as compose's `analysis`: a bare celery test worker started
    # inside the first one changed the app's queues under it and at times never stopped.)
    with isolated_celery_worker(analysis=False, concurrency=1, also=[analysis_queue]):
        wait_for(lambda: not deals.filter(baseline__isnull=True).exists(), 120, "the luck baselines")
    after = tournament_luck_adjusted(tournament=tournament)
    assert after.games_scored == 20 and after.deals_with_baseline == deals.count()
    assert all(row.compared == row.games for row in after.rows)
