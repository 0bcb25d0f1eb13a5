"""Faults in the middle of a real tournament: the Celery worker is killed and another
started, the referee restarts mid-table, a bot process dies mid-game. The tournament must
still complete, with every game recorded exactly once, nothing lost, ratings equal to a
recompute, and the standings saying what happened (the dead bot's strikes and forfeit)."""

from __future__ import annotations

import json
import secrets
import socket
from collections import Counter
from urllib.parse import urlparse

import pytest
from django.conf import settings

from demo import processes, run
from tests.e2e.stack import (
    MARKER_VARIABLE,
    broker_clear_stale,
    database_url,
)
from tests.needs import unavailable

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

SEATS = 4
DUPLICATE_SETS = 3
VICTIM = "e2e-bot-3"


def require_redis_broker() -> None:
    """The fault test needs a broker that redelivers a killed worker's task (Redis)."""
    url = settings.CELERY_BROKER_URL
    reason = None
    if not url.startswith(("redis://", "rediss://")):
        reason = (
            f"CELERY_BROKER_URL={url!r}: kombu's filesystem transport cannot redeliver a killed "
            "worker's task; set CELERY_BROKER_URL=redis://... to run the fault test"
        )
    else:
        parsed = urlparse(url)
        try:
            socket.create_connection((parsed.hostname, parsed.port or 6379), timeout=2).close()
        except OSError as exc:
            reason = f"Redis at {parsed.hostname}:{parsed.port or 6379} unreachable: {exc}"
    if reason:
        unavailable(reason)


def games_recorded(tournament_id: int) -> int:
    return run.tournament_progress(tournament_id=tournament_id).games_done


def wait_for_games(group, tournament_id: int, more_than: int, *, timeout: float, what: str) -> int:
    processes.wait_until(
        lambda: games_recorded(tournament_id) > more_than,
        timeout=timeout, what=what, group=group, interval=0.2,
    )
    return games_recorded(tournament_id)


def test_tournament_survives_worker_kill_referee_restart_and_bot_crash(marker, tmp_path):
    require_redis_broker()
    broker_clear_stale(settings.CELERY_BROKER_URL)
    from django.contrib.auth import get_user_model
    from django.db import connection

    from bots_sdk.rules import replay_game
    from tournaments.models import Game, GameSeat, Table, Tournament
    from tournaments.selectors.standings import tournament_standings
    from tournaments.services.accounts import bot_create
    from tournaments.services.ratings import ratings_recompute
    from tournaments.services.tournaments import (
        tournament_create,
        tournament_entrant_add,
        tournament_start,
    )

    target = f"127.0.0.1:{processes.free_port()}"
    organizer_token = secrets.token_urlsafe(24)
    env = {
        "DATABASE_URL": database_url(connection.settings_dict),
        "DJANGO_SETTINGS_MODULE": "tests.e2e.settings_e2e",
        "REFEREE_TARGET": target,
        "REFEREE_ORGANIZER_TOKEN": organizer_token,
        "TIENLEN_ORGANIZER_TOKEN": organizer_token,
        "TIENLEN_TOKEN_STORE": "tournaments.token_store:DjangoTokenStore",
        MARKER_VARIABLE: marker,
    }
    organiser = get_user_model().objects.create(username="e2e-organiser", is_staff=True)
    bots = []
    for number in range(SEATS):
        bot, token = bot_create(owner=organiser, name=f"e2e-bot-{number}")
        bots.append((bot, token))
    tournament = tournament_create(
        organiser=organiser, name="Fault tolerance", format=Tournament.Format.ROUND_ROBIN,
        seats_per_table=SEATS, duplicate_sets=DUPLICATE_SETS, move_time_ms=1000,
        # A generous connect deadline: bots reconnecting after the referee restart must
        # never make the table forfeit; only the process killed mid-game does.
        time_bank_ms=2000, connect_deadline_s=600,
    )
    for bot, _ in bots:
        tournament_entrant_add(tournament=tournament, bot=bot)
    planned = SEATS * DUPLICATE_SETS

    def start_referee(group):
        group.start(
            "referee",
            processes.python_argv("-m", "referee_service", "--listen", target,
                             "--shutdown-grace", "1"),
            env=env,
        )
        processes.wait_until(lambda: processes.referee_healthy(target), timeout=60,
                        what="the referee", group=group)

    with processes.ProcessGroup(tmp_path / "logs") as group:
        start_referee(group)
        for bot, token in bots:
            group.start(
                f"bot-{bot.name}",
                processes.python_argv("-m", "bots_sdk.cli", "run", "tests.e2e.slow_bot:SlowGreedyBot",
                                 "--server", target),
                env={**env, "TIENLEN_TOKEN": token},
            )
        wanted = {str(bot.pk) for bot, _ in bots}
        processes.wait_until(lambda: wanted <= processes.referee_connected_bot_ids(target, organizer_token),
                        timeout=60, what="the bots to connect", group=group)
        group.start("worker-1", processes.celery_worker_argv(concurrency=1, name="e2e1"), env=env)
        tournament_start(tournament=tournament)

        # 1. kill the worker in the middle of the table; another worker takes over
        wait_for_games(group, tournament.pk, 0, timeout=120, what="a first game")
        group.kill("worker-1")
        done = games_recorded(tournament.pk)  # a dead worker records nothing more
        group.start("worker-2", processes.celery_worker_argv(concurrency=1, name="e2e2"), env=env)
        wait_for_games(group, tournament.pk, done, timeout=150,
                       what="the table to resume on the second worker")

        # 2. restart the referee mid-table; bots reconnect, the worker resumes the table
        group.stop("referee")
        start_referee(group)
        done = games_recorded(tournament.pk)  # counted once the new referee is up
        wait_for_games(group, tournament.pk, done, timeout=150,
                       what="the table to resume after the referee restart")

        # 3. a bot process dies mid-game (the next game starts as soon as one is recorded):
        # strikes, then a forfeit; the table goes on without it
        done = wait_for_games(group, tournament.pk, games_recorded(tournament.pk),
                              timeout=120, what="a game after the referee restart")
        assert done < planned, "the table finished before the bot could be killed"
        group.kill(f"bot-{VICTIM}")
        processes.wait_until(
            lambda: Tournament.objects.get(pk=tournament.pk).status == Tournament.Status.FINISHED,
            timeout=240, what="the tournament to finish", group=group,
        )

    tournament.refresh_from_db()
    games = list(Game.objects.filter(table__tournament=tournament).select_related("replay"))
    # every game once, none lost
    assert sorted(g.index for g in games) == list(range(planned))
    assert len({(g.table_id, g.index) for g in games}) == planned
    for game in games:
        replay = json.loads(game.replay.decoded_text())
        replay_game(replay)  # re-simulates to the stored result or raises
        assert game.points == replay["result"]["points"]

    table = Table.objects.get(tournament=tournament)
    assert table.status == Table.Status.DONE
    assert table.games_recorded == planned
    assert table.attempts >= 3  # first run, after the worker kill, after the referee restart

    # the standings say what happened: the dead bot forfeited, with strikes; nobody else
    victim_seats = GameSeat.objects.filter(game__table=table, bot__name=VICTIM)
    assert victim_seats.filter(strikes__gt=0).exists()
    assert victim_seats.filter(forfeited=True).exists()
    assert not GameSeat.objects.filter(game__table=table, forfeited=True).exclude(
        bot__name=VICTIM
    ).exists()
    standings = {r.bot_name: r for r in tournament_standings(tournament=tournament)}
    assert standings[VICTIM].forfeits > 0
    assert all(standings[f"e2e-bot-{n}"].forfeits == 0 for n in range(SEATS - 1))
    assert Counter(r.games for r in standings.values()) == Counter({planned: SEATS})

    # ... and so does the API
    from django.test import Client

    served = Client().get(f"/api/v1/tournaments/{tournament.slug}/standings/").json()
    assert {r["bot_name"]: r["forfeits"] > 0 for r in served} == {
        f"e2e-bot-{n}": f"e2e-bot-{n}" == VICTIM for n in range(SEATS)
    }

    # ratings: nothing double-counted
    report = ratings_recompute(pool=tournament.pool, write=False)
    assert report.games == planned
    assert report.max_difference < 1e-6
