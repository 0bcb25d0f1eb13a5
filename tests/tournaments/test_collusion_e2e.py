"""End to end: a colluding pair in a real tournament is flagged by the collusion report.

Two accounts run bots that tell each other their hands through a test hook
(tests/tournaments/colluding_bot.py) and play for the pair when they meet; the other six
entrants are house bots. A real referee (the platform's token store), a real Celery worker
and PostgreSQL play the default round robin; the report, read by the organiser through
the API, flags the pair and no other. The tournament has a seed (its deals are then
reproducible) so the run is the same every time; benchmarks/collusion_bench.py measures
how often such a pair is flagged over fresh deals, and how often honest pairs are."""

from __future__ import annotations

import asyncio
import threading

import pytest
from django.contrib.auth.models import User
from rest_framework.test import APIClient

from tests.needs import need_postgresql
from tests.tournaments.colluding_bot import Channel, colluding_bot
from tournaments.models import Deal, Game, Tournament
from tournaments.services.accounts import bot_create
from tournaments.services.tournaments import (
    tournament_create,
    tournament_entrant_add,
    tournament_start,
)

ORGANIZER_TOKEN = "organizer-secret-for-collusion"


class ColludingClient:
    """An SDK client running one colluder with its platform token."""

    def __init__(self, target: str, token: str, channel: Channel, seed: str) -> None:
        from bots_sdk.client import BotClient

        bot = colluding_bot(channel, apart="greedy", seed=seed)
        self.client = BotClient(bot, target=target, token=token, max_tables=2)
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_until_complete, args=(self.client.run(),), daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.loop.call_soon_threadsafe(self.client.stop, True)
        self.thread.join(20)
        assert not self.thread.is_alive(), "the colluding client did not stop"
        self.loop.close()


@pytest.mark.timeout(900)  # 112 games, the colluders searching: ~3 minutes, more on a loaded machine
@pytest.mark.django_db(transaction=True)
def test_a_colluding_pair_is_flagged_in_a_real_tournament(settings) -> None:
    from referee_service.server import RefereeThread
    from tests.celery_helpers import isolated_celery_worker
    from tests.tournaments.test_worker import wait_for
    from tournaments.token_store import DjangoTokenStore

    need_postgresql("a worker plays tables at once while the referee checks tokens")
    staff = User.objects.create_user("house", is_staff=True)
    organiser = User.objects.create_user("organiser", is_staff=True)
    kinds = ["heuristic", "greedy", "random", "heuristic", "greedy", "random"]
    house = [bot_create(owner=staff, name=f"house-{k}-{i}", house_bot=k)[0] for i, k in enumerate(kinds)]
    # Two accounts (the owner rule keeps one owner's bots apart: colluders use two).
    colluders = [bot_create(owner=User.objects.create_user(f"sybil{i}"), name=f"sybil-{i}") for i in range(2)]
    tournament = tournament_create(
        organiser=organiser, name="Collusion cup", slug="collusion-cup", format="round_robin",
        seats_per_table=4, duplicate_sets=2, move_time_ms=2000, time_bank_ms=20000,
        connect_deadline_s=60, seed="collusion-e2e-1",
    )
    for bot in [*house, *(b for b, _ in colluders)]:
        tournament_entrant_add(tournament=tournament, bot=bot)
    channel = Channel()
    referee = RefereeThread(DjangoTokenStore(), organizer_token=ORGANIZER_TOKEN).start()
    settings.REFEREE_TARGET = referee.target
    settings.REFEREE_ORGANIZER_TOKEN = ORGANIZER_TOKEN
    try:
        with isolated_celery_worker(concurrency=2), \
                ColludingClient(referee.target, colluders[0][1], channel, "a"), \
                ColludingClient(referee.target, colluders[1][1], channel, "b"):
            tournament_start(tournament=tournament)
            wait_for(lambda: Tournament.objects.get(pk=tournament.pk).status == "finished", 600, "the finish")
            wait_for(lambda: not Deal.objects.filter(tournament=tournament, baseline__isnull=True).exists(),
                     180, "the luck baselines")
    finally:
        referee.stop()
    assert Game.objects.filter(table__tournament=tournament).count() == 14 * 8
    assert channel.moves_together > 100  # they did meet, and played for each other
    client = APIClient()
    client.force_authenticate(organiser)
    body = client.get("/api/v1/tournaments/collusion-cup/collusion/").json()
    assert body["games_scored"] == 112 and body["games_withheld"] == 0
    assert body["tested"] == 1  # only the two remote bots can collude
    pair = next(p for p in body["pairs"] if {p["bot_a"], p["bot_b"]} == {"sybil-0", "sybil-1"})
    print("collusion pair:", pair)
    assert pair["games"] == 24 and pair["tested"] and pair["flagged"], pair
    assert pair["joint_gain"] > 0.5
    assert [p for p in body["pairs"] if p["flagged"]] == [pair]
    # A spectator gets nothing of it.
    spectator = APIClient()
    spectator.force_authenticate(User.objects.create_user("spectator"))
    assert spectator.get("/api/v1/tournaments/collusion-cup/collusion/").status_code == 403
