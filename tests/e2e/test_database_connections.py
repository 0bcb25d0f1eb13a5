"""A Celery worker whose database connections PostgreSQL dropped (a restart, an
administrator's pg_terminate_backend, an idle timeout) goes on working: every task starts
with a usable connection, whatever the last task left.

Found by the CI soak (benchmarks/README.md, "Soak"): after PostgreSQL restarted, a pool
process that had been idle failed its next beat tick with AdminShutdown and then every tick
after it with "the connection is closed", for good, so the ladder seated no table again.
The worker reuses a process's connection from task to task (CELERY_DB_REUSE_MAX) and
nothing dropped one that had broken: Django does that only at the edges of a web request.

Real processes on the test's PostgreSQL database and Redis: a referee playing four house
bots, one prefork worker of two processes; the test sends the beat tick itself (as beat
would, every second) and drops the worker's connections with pg_terminate_backend, once
while the worker is idle and once in the middle of a task's transaction."""

from __future__ import annotations

import datetime
import secrets
import time

import psycopg
import pytest
from django.utils import timezone

from demo import processes
from tests.e2e.stack import (
    MARKER_VARIABLE,
    broker_clear_stale,
    database_url,
)
from tests.e2e.test_lease_recovery import require_redis

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def test_a_worker_goes_on_after_postgresql_dropped_its_connections_idle_and_mid_task(marker, tmp_path):
    broker = require_redis()
    broker_clear_stale(broker)
    from django.contrib.auth import get_user_model
    from django.db import connection

    from tournaments.models import Game, Tournament
    from tournaments.services.accounts import bot_create
    from tournaments.services.tournaments import (
        tournament_create,
        tournament_entrant_add,
        tournament_start,
    )
    from tournaments.tasks import tournaments_tick

    if connection.vendor != "postgresql":
        pytest.skip("dropping a worker's connections is PostgreSQL's (pg_terminate_backend)")
    url = database_url(connection.settings_dict)
    target = f"127.0.0.1:{processes.free_port()}"
    organizer_token = secrets.token_urlsafe(24)
    env = {
        "DATABASE_URL": url, "CELERY_BROKER_URL": broker, "DJANGO_SETTINGS_MODULE": "tienlen_site.settings",
        "REFEREE_TARGET": target, "REFEREE_ORGANIZER_TOKEN": organizer_token,
        "TIENLEN_ORGANIZER_TOKEN": organizer_token, "TIENLEN_TOKEN_STORE": "tournaments.token_store:DjangoTokenStore",
        MARKER_VARIABLE: marker,
    }
    organiser = get_user_model().objects.create(username="dbconn-organiser", is_staff=True)
    bots = [bot_create(owner=organiser, name=f"dbconn-{kind}-{n}", house_bot=kind)[0]
            for n, kind in enumerate(["random", "greedy", "random", "greedy"])]

    def new_tournament(name: str) -> Tournament:
        tournament = tournament_create(organiser=organiser, name=name, format=Tournament.Format.ROUND_ROBIN,
                                       seats_per_table=4, games_per_table=2, allow_same_owner=True)
        for bot in bots:
            tournament_entrant_add(tournament=tournament, bot=bot)
        return tournament

    def status(tournament: Tournament) -> str:
        return Tournament.objects.filter(pk=tournament.pk).values_list("status", flat=True)[0]

    # the test's own psycopg connection (autocommit), outside Django's
    admin = psycopg.connect(url, autocommit=True)
    others = "datname = current_database() AND pid <> pg_backend_pid() AND pid <> %s"

    def terminate(where: str = "true") -> int:
        rows = admin.execute(f"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE {others} AND {where}",
                             (connection.connection.info.backend_pid,)).fetchall()
        return len(rows)

    def ticks_until(tournament: Tournament, *wanted: str, timeout: float, group) -> float:
        """Send beat's tick every second until the tournament is one of `wanted`; the seconds it took."""
        started = time.monotonic()
        while status(tournament) not in wanted:
            if time.monotonic() - started > timeout:
                worker_log = group.processes["worker"].log_path.read_text(errors="replace")
                raise AssertionError(f"{tournament.name} still {status(tournament)} after {timeout} s of ticks; "
                                     f"the worker's log ends:\n{worker_log[-4000:]}")
            tournaments_tick.delay()
            time.sleep(1)
        return time.monotonic() - started

    try:
        with processes.ProcessGroup(tmp_path / "logs") as group:
            group.start("referee", processes.python_argv(
                "-m", "referee_service", "--listen", target, "--organizer-token", organizer_token,
                "--token-store", "tournaments.token_store:DjangoTokenStore", "--shutdown-grace", "1"), env=env)
            processes.wait_until(lambda: processes.referee_healthy(target), timeout=60, what="the referee",
                                 group=group)
            group.start("worker", processes.celery_worker_argv(concurrency=2, name="worker"), env=env)
            processes.wait_until(lambda: "table reaper started" in group.processes["worker"].log_path.read_text(),
                                 timeout=60, what="the worker", group=group)

            # Warm up: both pool processes hold a connection (ticks, a tournament played).
            first = new_tournament("Before the drop")
            tournament_start(tournament=first)
            ticks_until(first, Tournament.Status.FINISHED, timeout=120, group=group)
            for _ in range(4):
                tournaments_tick.delay()
            time.sleep(2)

            # 1. Idle: every connection of the worker (and the referee) dropped between tasks,
            # as a PostgreSQL restart does.
            assert terminate() >= 1
            idle = new_tournament("After an idle drop")
            tournament_start(tournament=idle, starts_at=timezone.now() + datetime.timedelta(seconds=1))
            started_after = ticks_until(idle, Tournament.Status.RUNNING, Tournament.Status.FINISHED, timeout=30, group=group)
            ticks_until(idle, Tournament.Status.FINISHED, timeout=120, group=group)

            # 2. Mid-task: the tick's scheduling task waits for the tournament's row lock
            # (held here) inside its transaction, and its connection is dropped there.
            mid = new_tournament("After a drop mid-transaction")
            tournament_start(tournament=mid, starts_at=timezone.now() + datetime.timedelta(seconds=1))
            time.sleep(1.2)
            with psycopg.connect(url) as locker:  # a transaction of its own
                locker.execute(f"SELECT id FROM {Tournament._meta.db_table} WHERE id = %s FOR UPDATE", (mid.pk,))
                deadline = time.monotonic() + 30
                while not terminate("wait_event_type = 'Lock'"):
                    assert time.monotonic() < deadline, "no task waited for the tournament's lock"
                    tournaments_tick.delay()
                    time.sleep(0.5)
                locker.rollback()
            ticks_until(mid, Tournament.Status.FINISHED, timeout=120, group=group)
            log = group.processes["worker"].log_path.read_text(errors="replace")
    finally:
        admin.close()

    # The first tick after the drop started the tournament (a second at most, as beat's
    # tick is due every second here), and no task ever ran on a closed connection.
    assert started_after < 10, f"the idle drop delayed the start {started_after:.1f} s"
    assert "the connection is closed" not in log
    for tournament in (first, idle, mid):
        assert Game.objects.filter(table__tournament=tournament).count() == 2
