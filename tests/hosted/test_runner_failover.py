"""A runner killed mid-table, on PostgreSQL and Redis with real processes: a referee (the
platform's token store), a worker playing tables, and two runners (Celery workers of the
runner queue). The hosted bot's runner is SIGKILLed while its table is half played; its
session's lease expires, a reaper queues it again, the other runner starts the bot, the
referee hands it its seat back, and the table finishes: every game recorded once, no
forfeit, no strike counted against the bot."""

from __future__ import annotations

import pytest
from django.conf import settings

from demo import processes
from tests.e2e.stack import (
    MARKER_VARIABLE,
    broker_clear_stale,
    database_url,
)
from tests.e2e.test_faults import require_redis_broker
from tests.hosted.support import (
    hosted_with_version,
    runner_config,
    runner_env,
    runner_worker_argv,
    sandbox_clean_up,
    slot_processes_left,
)
from tests.needs import need_postgresql

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

GAMES = 16
SLOW_BOT = b'''\
import time

from bots_sdk.examples import GreedyBot


class SlowGreedy(GreedyBot):
    """Greedy, 40 ms a move: the table lasts long enough to kill its runner mid-way."""

    def play(self, view):
        time.sleep(0.04)
        return super().play(view)
'''


def test_a_runner_killed_mid_table_is_replaced_and_the_table_finishes_without_a_forfeit(marker, tmp_path) -> None:
    need_postgresql("the runners, the worker and the referee share the table")
    require_redis_broker()
    config = runner_config(prefix="tlh-f-")
    broker_clear_stale(settings.CELERY_BROKER_URL)
    from django.contrib.auth import get_user_model
    from django.db import connection

    from tournaments.models import Game, HostedSession, Table, TableSeat, Tournament
    from tournaments.services.accounts import bot_create, house_bot_for
    from tournaments.services.tournaments import (
        tournament_create,
        tournament_entrant_add,
        tournament_start,
    )

    User = get_user_model()
    author = User.objects.create(username="failover-author")
    bot, _ = bot_create(owner=author, name="failover-bot")
    hosted_with_version(bot, author, SLOW_BOT)

    organizer_token = "failover-organizer-token"
    target = f"127.0.0.1:{processes.free_port()}"
    env = {
        "DATABASE_URL": database_url(connection.settings_dict),
        "DJANGO_SETTINGS_MODULE": "tests.e2e.settings_e2e",
        "CELERY_BROKER_URL": settings.CELERY_BROKER_URL,
        "REFEREE_TARGET": target, "REFEREE_ORGANIZER_TOKEN": organizer_token,
        "TIENLEN_ORGANIZER_TOKEN": organizer_token,
        "TIENLEN_LEASE_SECONDS": "6", "TIENLEN_LEASE_RENEW_SECONDS": "1.5", "TIENLEN_LEASE_REAP_SECONDS": "2",
        **runner_env(config),
        MARKER_VARIABLE: marker,
    }
    organiser = User.objects.create(username="failover-organiser", is_staff=True)
    tournament = tournament_create(organiser=organiser, name="Failover cup", format=Tournament.Format.ROUND_ROBIN,
                                   seats_per_table=2, games_per_table=GAMES, move_time_ms=1000, time_bank_ms=5000,
                                   connect_deadline_s=120)
    for entrant in (bot, house_bot_for(kind="greedy")):
        tournament_entrant_add(tournament=tournament, bot=entrant)

    with processes.ProcessGroup(tmp_path / "logs") as group:
        group.start("referee", processes.python_argv(
            "-m", "referee_service", "--listen", target, "--token-store", "tournaments.token_store:DjangoTokenStore"),
            env=env)
        processes.wait_until(lambda: processes.referee_healthy(target), timeout=60, what="the referee", group=group)
        group.start("worker", processes.celery_worker_argv(concurrency=2, name="tables"), env=env)
        group.start("runner-1", runner_worker_argv("runner1"), env=env)
        tournament_start(tournament=tournament)

        def session() -> HostedSession | None:
            return HostedSession.objects.filter(bot=bot).order_by("id").first()

        def half_played() -> bool:
            table = Table.objects.filter(tournament=tournament).first()
            return table is not None and 2 <= table.games_recorded < GAMES // 2
        processes.wait_until(half_played, timeout=120, what="the table half played on runner-1", group=group,
                             interval=0.05)
        first = session()
        assert first is not None and first.status == "running"
        assert f":{group.processes['runner-1'].pid}:" in first.runner
        group.start("runner-2", runner_worker_argv("runner2"), env=env)
        group.kill("runner-1")

        processes.wait_until(lambda: Tournament.objects.get(pk=tournament.pk).status == "finished", timeout=240,
                             what="the tournament to finish on runner-2", group=group)
        processes.wait_until(lambda: session().status == "ended", timeout=60, what="the session's end", group=group)
        final = session()
        runner_2 = group.processes["runner-2"].pid

    table = Table.objects.get(tournament=tournament)
    assert table.status == "done" and table.games_recorded == GAMES
    assert Game.objects.filter(table=table).count() == GAMES  # nothing recorded twice
    assert not TableSeat.objects.filter(table=table, forfeited=True).exists()
    assert HostedSession.objects.filter(bot=bot).count() == 1  # the same session, started again
    assert final.starts == 2 and f":{runner_2}:" in final.runner
    assert final.reason == "stopped" and final.fault == "none"
    left = slot_processes_left()
    sandbox_clean_up(config.state_dir)
    assert not any(left.values()), f"sandboxed processes left: {left}"
