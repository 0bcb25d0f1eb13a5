"""Sign-up accounts of one person never learn a deal from another table.

Sign-up is open and the owner rule sees accounts, not people: one person with two or four
free accounts, one bot each, and one process pooling what every bot is sent. Before, in
the default format (field duplicates) those bots sat at different tables of one deal
group and started 35-55 % of their games knowing opponents' cards. Now every remote bot
is presumed to talk to every other (tournaments.isolation), so no deal is played by
remote bots at two tables.

End to end, as deployed: PostgreSQL, the referee checking tokens in the database, a real
Celery worker at the deployment's concurrency (2), and the sybils as SDK clients over
gRPC sharing one memory (tests/tournaments/memorising_bot.py: it remembers every hand and
every play and predicts opponents' cards at each game start). Over whole tournaments they
predict no card at all; a field of remote bots only gets independent deals, each compared
with the house-bot baseline (luck-adjusted standings)."""

from __future__ import annotations

import asyncio
import gc
import threading
from collections import Counter, defaultdict

import pytest
from django.contrib.auth.models import User

from tests.needs import need_postgresql
from tests.tournaments.memorising_bot import Memory, memorising_bot
from tournaments.isolation import bot_isolated
from tournaments.models import Deal, Game, GameSeat, Table, Tournament
from tournaments.selectors.adjusted import tournament_luck_adjusted
from tournaments.services.accounts import bot_create
from tournaments.services.tournaments import (
    tournament_create,
    tournament_entrant_add,
    tournament_start,
)

ORGANIZER_TOKEN = "organizer-secret-for-sybil-accounts"
DEPLOYED_CONCURRENCY = 2  # docker/compose.yml's worker (docs/deployment.md)


class SdkBot:
    """An SDK client connected with its platform token, on a thread of its own."""

    def __init__(self, factory, target: str, token: str, max_tables: int = 3) -> None:
        from bots_sdk.client import BotClient

        self.client = BotClient(factory, target=target, token=token, max_tables=max_tables)
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_until_complete, args=(self.client.run(),), daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.loop.call_soon_threadsafe(self.client.stop, True)
        self.thread.join(20)
        assert not self.thread.is_alive(), "an SDK client did not stop within 20 s"
        self.loop.close()


@pytest.fixture
def platform(settings):
    """The referee (tokens checked in the database) and a worker at the deployment's
    concurrency; yields the referee's address."""
    from referee_service.server import RefereeThread
    from tests.celery_helpers import isolated_celery_worker
    from tournaments.token_store import DjangoTokenStore

    need_postgresql("a worker plays two tables at once while the referee checks tokens")
    referee = RefereeThread(DjangoTokenStore(), organizer_token=ORGANIZER_TOKEN).start()
    settings.REFEREE_TARGET = referee.target
    settings.REFEREE_ORGANIZER_TOKEN = ORGANIZER_TOKEN
    try:
        with isolated_celery_worker(concurrency=DEPLOYED_CONCURRENCY):
            yield referee.target
    finally:
        referee.stop()
        # The worker's and the referee's threads are gone; their database connections
        # are closed when collected (else the next test's teardown finds them open).
        gc.collect()


def play_to_the_end(tournament: Tournament) -> None:
    from tests.tournaments.test_worker import wait_for

    tournament_start(tournament=tournament)
    wait_for(lambda: Tournament.objects.get(pk=tournament.pk).status == "finished", 600, "the tournament's finish")
    wait_for(lambda: not Deal.objects.filter(tournament=tournament, baseline__isnull=True).exists(),
             180, "the luck baselines of every deal")


def default_round_robin(organiser: User, bots) -> Tournament:
    tournament = tournament_create(
        organiser=organiser, name="Open cup", format="round_robin", seats_per_table=4,
        duplicate_sets=1, move_time_ms=500, time_bank_ms=5000, connect_deadline_s=120,
    )
    assert tournament.deal_format == Tournament.DealFormat.FIELD  # the default format
    for bot in bots:
        tournament_entrant_add(tournament=tournament, bot=bot)
    return tournament


def deal_tables(tournament: Tournament) -> dict[int, set[int]]:
    """Deal id -> the tables that played it."""
    out: dict[int, set[int]] = defaultdict(set)
    for deal_id, table_id in Game.objects.filter(table__tournament=tournament).values_list("deal_id", "table_id"):
        out[deal_id].add(table_id)
    return out


def remote_tables(tournament: Tournament) -> set[int]:
    return {
        t.pk for t in Table.objects.filter(tournament=tournament).prefetch_related("seats__entrant__bot")
        if not all(bot_isolated(s.entrant.bot) for s in t.seats.all())
    }


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("accounts", [2, 4])
def test_sign_up_accounts_pooling_what_they_see_never_know_a_card_from_another_table(platform, accounts) -> None:
    """The field of the sybil audit: 12 entrants at tables of 4 (33 tables in 11 rounds, 4 games a
    table): `accounts` sybils of one person, an honest remote bot, house bots."""
    from bots_sdk.examples.greedy import GreedyBot

    staff = User.objects.create_user("house", is_staff=True)
    organiser = User.objects.create_user("organiser", is_staff=True)
    kinds = ("greedy", "heuristic", "random")
    house = [bot_create(owner=staff, name=f"house-{i}", house_bot=kinds[i % 3])[0] for i in range(11 - accounts)]
    sybils = [bot_create(owner=User.objects.create_user(f"signup-{i}"), name=f"sybil-{i}") for i in range(accounts)]
    honest, honest_token = bot_create(owner=User.objects.create_user("honest"), name="honest-remote")
    tournament = default_round_robin(organiser, [*(b for b, _ in sybils), honest, *house])
    memory = Memory()  # one process pooling what every sybil bot is sent
    with SdkBot(GreedyBot, platform, honest_token) as _honest:
        clients = [SdkBot(memorising_bot(memory), platform, token) for _, token in sybils]
        for client in clients:
            client.__enter__()
        try:
            play_to_the_end(tournament)
        finally:
            for client in clients:
                client.__exit__(None, None, None)
    games = Game.objects.filter(table__tournament=tournament)
    assert games.count() == 33 * 4
    sybil_ids = {b.pk for b, _ in sybils}
    sybil_games = GameSeat.objects.filter(game__table__tournament=tournament, bot_id__in=sybil_ids).count()
    assert sybil_games == accounts * 11 * 4  # every sybil played its 11 tables
    # They remembered everything and knew nothing: not one opponent card at any game start.
    assert memory.games_started == sybil_games and len(memory.games) == sybil_games
    assert memory.predicted_cards == 0, memory.predictions[:3]
    # Why: no deal was played at two tables that seat remote bots (sybils or honest).
    remote = remote_tables(tournament)
    for deal, tables in deal_tables(tournament).items():
        assert len(tables & remote) <= 1, (deal, tables)
    # Remote tables still share deals with tables of house bots where the field allows.
    shared = [tables for tables in deal_tables(tournament).values() if len(tables) > 1]
    assert shared and any(tables & remote for tables in shared)
    # No bot played a deal twice; every deal is revealed and has a baseline.
    per_bot_deal = Counter(GameSeat.objects.filter(game__table__tournament=tournament).values_list("bot_id", "game__deal_id"))
    assert max(per_bot_deal.values()) == 1
    adjusted = tournament_luck_adjusted(tournament=tournament)
    assert adjusted.games_withheld == 0 and adjusted.games_scored == 33 * 4
    assert all(r.compared == r.games == 44 for r in adjusted.rows)


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_field_of_remote_bots_only_gets_independent_deals_and_luck_adjusted_standings(platform) -> None:
    """Eight remote bots of eight accounts (all one person, pooling): nobody may share a
    deal, so every table plays deals of its own, compared with the house-bot baseline.
    (Before, each round's two tables shared their deals.)"""
    organiser = User.objects.create_user("organiser", is_staff=True)
    memory = Memory()
    remote = [bot_create(owner=User.objects.create_user(f"signup-{i}"), name=f"remote-{i}") for i in range(8)]
    tournament = default_round_robin(organiser, [b for b, _ in remote])
    clients = [SdkBot(memorising_bot(memory), platform, token) for _, token in remote]
    for client in clients:
        client.__enter__()
    try:
        play_to_the_end(tournament)
    finally:
        for client in clients:
            client.__exit__(None, None, None)
    tables = list(Table.objects.filter(tournament=tournament))
    assert len(tables) == 14 and len({t.deal_group for t in tables}) == 14  # a deal group per table
    # Every deal played once, at one table: independent secret deals.
    assert all(len(t) == 1 for t in deal_tables(tournament).values())
    assert Game.objects.filter(table__tournament=tournament).values("deal_id").distinct().count() == 56
    assert memory.predicted_cards == 0 and memory.games_started == 56 * 4
    # Luck-adjusted standings: every game compared with its deal's baseline (no counterparts).
    adjusted = tournament_luck_adjusted(tournament=tournament)
    assert adjusted.deals_with_baseline == 56 and adjusted.games_scored == 56
    assert all(r.compared == r.games == 28 for r in adjusted.rows)
    baselines = dict(Deal.objects.filter(tournament=tournament).values_list("pk", "baseline"))
    seats = GameSeat.objects.filter(game__table__tournament=tournament).values_list("bot__name", "points", "seat", "game__deal_id")
    expected: dict[str, list[float]] = defaultdict(list)
    for name, points, seat, deal_id in seats:
        expected[name].append(points - baselines[deal_id][seat])
    for row in adjusted.rows:
        assert row.adjusted_mean == pytest.approx(sum(expected[row.bot_name]) / 28)
