"""A real referee process started with the platform's token store joins the pool in the
database, reports the bots connected to it, and leaves it when stopped."""

from __future__ import annotations

import secrets

import pytest
from django.db import connection

from tournaments.models import Referee


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_referee_process_with_the_platforms_token_store_joins_reports_and_leaves(tmp_path):
    from django.contrib.auth import get_user_model

    from demo import processes
    from tests.e2e.stack import database_url
    from tournaments.services.accounts import bot_create

    owner = get_user_model().objects.create(username="pool-owner")
    bot, token = bot_create(owner=owner, name="pool-bot")
    target = f"127.0.0.1:{processes.free_port()}"
    env = {
        "DATABASE_URL": database_url(connection.settings_dict),
        "TIENLEN_TOKEN_STORE": "tournaments.token_store:DjangoTokenStore",
        "TIENLEN_ORGANIZER_TOKEN": secrets.token_urlsafe(16),
    }
    with processes.ProcessGroup(tmp_path / "logs") as group:
        group.start("referee", processes.python_argv(
            "-m", "referee_service", "--listen", target, "--advertise", "referee-a.internal:7000",
            "--referee-id", "referee-a", "--capacity", "12"), env=env)
        processes.wait_until(lambda: Referee.objects.filter(referee_id="referee-a").exists(),
                             timeout=60, what="the referee's row", group=group)
        row = Referee.objects.get()
        assert (row.address, row.capacity, row.bots) == ("referee-a.internal:7000", 12, {})
        group.start("bot", processes.python_argv(
            "-m", "bots_sdk.cli", "run", "random", "--server", target, "--max-tables", "3"),
            env={**env, "TIENLEN_TOKEN": token})
        processes.wait_until(
            lambda: str(bot.pk) in Referee.objects.get().bots, timeout=60,
            what="the bot in the referee's report", group=group)
        assert Referee.objects.get().bots[str(bot.pk)]["free"] == 3
        group.stop("referee")  # SIGTERM: a graceful stop leaves the pool at once
        assert not Referee.objects.exists()
