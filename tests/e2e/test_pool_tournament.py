"""A referee pool end to end: a round robin over a pool of referees, on PostgreSQL and Redis, with
real processes: three referees, two Celery workers (and beat), six SDK bot processes each
given ONE referee address. The tournament spreads over every referee; one referee is
SIGKILLed mid-table and a new one joins; one worker is SIGKILLed. It must finish on its
own with every planned game recorded exactly once, ratings equal to a full recompute, and
no bot process restarted (each found the pool, the new referee included, by itself)."""

from __future__ import annotations

import secrets
import time

import pytest
from django.conf import settings

from demo import processes
from tests.e2e.stack import (
    MARKER_VARIABLE,
    broker_clear_stale,
    database_url,
)
from tests.e2e.test_faults import require_redis_broker
from tests.needs import need_postgresql

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

BOTS = 6
SEATS = 2
GAMES_PER_TABLE = 4


def test_a_round_robin_over_a_referee_pool_survives_a_referee_and_a_worker_killed(marker, tmp_path):
    need_postgresql("referees, workers and bots share the pool and the games")
    require_redis_broker()
    broker_clear_stale(settings.CELERY_BROKER_URL)
    from django.contrib.auth import get_user_model
    from django.db import connection

    from tournaments.models import Game, Referee, Table, Tournament
    from tournaments.services.accounts import bot_create
    from tournaments.services.ratings import ratings_recompute
    from tournaments.services.tournaments import (
        tournament_create,
        tournament_entrant_add,
        tournament_start,
    )

    organizer_token = secrets.token_urlsafe(24)
    targets = {f"ref-{n}": f"127.0.0.1:{processes.free_port()}" for n in (1, 2, 3, 4)}
    env = {
        "DATABASE_URL": database_url(connection.settings_dict),
        "DJANGO_SETTINGS_MODULE": "tests.e2e.settings_e2e",
        # outside the pool only: every table here must be routed to a pool referee
        "REFEREE_TARGET": f"127.0.0.1:{processes.free_port()}",
        "REFEREE_ORGANIZER_TOKEN": organizer_token,
        "TIENLEN_ORGANIZER_TOKEN": organizer_token,
        "TIENLEN_TOKEN_STORE": "tournaments.token_store:DjangoTokenStore",
        "TIENLEN_REFEREE_TIMEOUT_S": "3",
        # fast recovery of the killed worker's tables (leases, the beat tick's outer bound)
        "TIENLEN_LEASE_SECONDS": "6", "TIENLEN_LEASE_RENEW_SECONDS": "1.5",
        "TIENLEN_LEASE_REAP_SECONDS": "2", "TIENLEN_STALE_TABLE_SECONDS": "20",
        "TIENLEN_TICK_SECONDS": "2",
        "TIENLEN_E2E_THINK_MS": "25",
        MARKER_VARIABLE: marker,
    }
    organiser = get_user_model().objects.create(username="pool-organiser", is_staff=True)
    bots = [bot_create(owner=get_user_model().objects.create(username=f"owner-{n}"), name=f"pool-bot-{n}")
            for n in range(BOTS)]
    tournament = tournament_create(
        organiser=organiser, name="Pool cup", format=Tournament.Format.ROUND_ROBIN,
        seats_per_table=SEATS, games_per_table=GAMES_PER_TABLE, move_time_ms=1000,
        time_bank_ms=3000, connect_deadline_s=600)
    for bot, _ in bots:
        tournament_entrant_add(tournament=tournament, bot=bot)
    bot_ids = {str(bot.pk) for bot, _ in bots}

    def start_referee(group, name: str) -> None:
        group.start(name, processes.python_argv(
            "-m", "referee_service", "--listen", targets[name], "--referee-id", name,
            "--pool-heartbeat", "0.5", "--shutdown-grace", "1"), env=env)
        processes.wait_until(lambda: processes.referee_healthy(targets[name]), timeout=60,
                             what=f"the referee {name}", group=group)

    def pool() -> dict[str, set[str]]:
        return {r.referee_id: set(r.bots) for r in Referee.objects.all()}

    def games() -> int:
        return Game.objects.filter(table__tournament=tournament).count()

    seen: set[str] = set()  # every referee a table of the tournament was routed to

    def watching(condition):
        def check() -> bool:
            seen.update(Table.objects.filter(tournament=tournament).exclude(referee="")
                        .values_list("referee", flat=True))
            return condition()
        return check

    with processes.ProcessGroup(tmp_path / "logs") as group:
        for name in ("ref-1", "ref-2", "ref-3"):
            start_referee(group, name)
        for n, (_, token) in enumerate(bots):  # ONE address each: two bots per referee
            group.start(f"bot-{n}", processes.python_argv(
                "-m", "bots_sdk.cli", "run", "tests.e2e.slow_bot:SlowGreedyBot",
                "--server", targets[f"ref-{n % 3 + 1}"], "--max-tables", "4"),
                env={**env, "TIENLEN_TOKEN": token})
        bot_pids = {n: group.processes[f"bot-{n}"].pid for n in range(BOTS)}
        processes.wait_until(
            lambda: pool() == {name: bot_ids for name in ("ref-1", "ref-2", "ref-3")},
            timeout=90, what="every bot on every referee", group=group)
        group.start("worker-1", processes.celery_worker_argv(concurrency=2, name="pool1"), env=env)
        group.start("worker-2", processes.celery_worker_argv(concurrency=2, name="pool2"), env=env)
        group.start("beat", processes.python_argv(
            "-m", "celery", "-A", "tienlen_site.celery:app", "beat", "--loglevel", "INFO",
            "-s", str(tmp_path / "beat-schedule")), env=env)
        started = time.monotonic()
        tournament_start(tournament=tournament)

        # the round robin spreads over the three referees
        processes.wait_until(watching(lambda: {"ref-1", "ref-2", "ref-3"} <= seen),
                             timeout=120, what="tables on every referee", group=group, interval=0.1)

        # 1. SIGKILL a referee in the middle of a table (a game recorded, more to come)
        def mid_table_on_ref_1() -> bool:
            return Table.objects.filter(tournament=tournament, referee="ref-1", status="running",
                                        games_recorded__gte=1, games_recorded__lt=GAMES_PER_TABLE).exists()
        processes.wait_until(watching(mid_table_on_ref_1), timeout=120,
                             what="a table half played on ref-1", group=group, interval=0.05)
        victim = Table.objects.filter(tournament=tournament, referee="ref-1", status="running",
                                      games_recorded__gte=1).first()
        group.kill("ref-1")
        assert victim is not None and victim.status == "running"

        # 2. a new referee joins; every bot finds it through the pool, none restarted
        start_referee(group, "ref-4")
        processes.wait_until(lambda: bot_ids <= pool().get("ref-4", set()), timeout=60,
                             what="every bot on the new referee", group=group)
        pending_at_join = Table.objects.filter(tournament=tournament, status="pending").count()
        assert pending_at_join, list(
            Table.objects.filter(tournament=tournament).values_list("status", "referee", "games_recorded", "attempts", "last_error"))

        # 3. SIGKILL a worker while it plays: with three tables running on two workers of
        # two processes each, both workers hold one
        done = games()
        processes.wait_until(watching(lambda: games() >= done + 2 and Table.objects.filter(
            tournament=tournament, status="running").count() >= 3), timeout=120,
            what="games after the new referee joined, three tables running", group=group, interval=0.05)
        group.kill("worker-1")
        killed_at = time.monotonic()

        processes.wait_until(
            watching(lambda: Tournament.objects.get(pk=tournament.pk).status == Tournament.Status.FINISHED),
            timeout=300, what="the tournament to finish", group=group)
        elapsed, after_kill = time.monotonic() - started, time.monotonic() - killed_at
        # no bot process died or was restarted
        for n in range(BOTS):
            process = group.processes[f"bot-{n}"]
            assert process.alive() and process.pid == bot_pids[n], f"bot-{n} restarted or died"

    tournament.refresh_from_db()
    tables = list(Table.objects.filter(tournament=tournament))
    assert len(tables) == 15 and {t.status for t in tables} == {"done"}  # every pair once
    # every planned game exactly once
    for table in tables:
        indexes = sorted(Game.objects.filter(table=table).values_list("index", flat=True))
        assert indexes == list(range(GAMES_PER_TABLE)), (table.pk, indexes)
    assert games() == 15 * GAMES_PER_TABLE
    assert not Game.objects.filter(table__tournament=tournament, seats__forfeited=True).exists()
    # the killed worker's table was resumed by another attempt (the killed referee's
    # failover does not count as one)
    assert max(t.attempts for t in tables) >= 2
    # the killed referee's table finished elsewhere; the new referee took tables
    victim.refresh_from_db()
    assert victim.status == "done" and victim.referee != "ref-1"
    assert "ref-4" in seen, seen
    # ratings: nothing double counted
    report = ratings_recompute(pool=tournament.pool, write=False)
    assert report.games == 15 * GAMES_PER_TABLE and report.max_difference < 1e-6
    print(f"\npool tournament: {games()} games in {elapsed:.0f} s ({after_kill:.0f} s after the worker kill); "
          f"referees used {sorted(seen)}; {pending_at_join} tables pending when ref-4 joined; attempts {sorted(t.attempts for t in tables)}")
