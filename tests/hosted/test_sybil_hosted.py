"""The sybil audit with hosted bots: four sign-up accounts of one person, each bot hosted,
all running the memorising bot of the audit (tests/tournaments/test_sybil_accounts.py)
and trying every channel to each other — a pooling server on the host's loopback, a file
in /tmp, their own storage. The scheduler treats hosted bots like house bots, so a field
of hosted bots and house bots gets field duplicates in full (each round's tables share
their deals), and yet no game starts with an opponent card known from another table:
sandboxed, with no network and storage of their own, they cannot tell each other anything.

End to end on PostgreSQL and Redis: the platform's referee checking tokens in the
database, a real Celery worker consuming the tables and the runner queue, the real sandbox.
The counts are printed (`-s`) for benchmarks/README.md."""

from __future__ import annotations

import json
import socket
import threading
from collections import defaultdict
from pathlib import Path

import pytest
from django.contrib.auth.models import User

from tests.celery_helpers import isolated_celery_worker
from tests.e2e.test_faults import require_redis_broker
from tests.hosted.gate_helpers import runner_environment, zipped
from tests.needs import need_postgresql
from tests.platform_referee import platform_referee
from tests.waits import wait_until as wait_for
from tournaments.models import BotStorage, Game, GameSeat, HostedSession, Table, Tournament
from tournaments.services import hosting
from tournaments.services.accounts import bot_create
from tournaments.services.tournaments import (
    tournament_create,
    tournament_entrant_add,
    tournament_start,
)

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

HERE = Path(__file__).resolve().parent
ACCOUNTS = 4


class PoolServer:
    """The person's pooling server, on the host's loopback: any bot that reaches it sends
    the games it saw and gets everyone's. It counts who ever reached it."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.address = f"127.0.0.1:{self.sock.getsockname()[1]}"
        self.connections = 0
        self.games: list = []
        # A blocked accept() is not woken by closing the socket from another thread: the
        # loop looks at `stopping` between short waits instead.
        self.sock.settimeout(0.2)
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)

    def _serve(self) -> None:
        while not self.stopping.is_set():
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            conn.settimeout(10)
            with conn:
                self.connections += 1
                message = json.loads(conn.makefile().readline() or "{}")
                self.games += message.get("games", [])
                conn.sendall(json.dumps(self.games).encode() + b"\n")

    def __enter__(self) -> PoolServer:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stopping.set()
        self.thread.join(5)
        self.sock.close()


@pytest.fixture
def runner_env(monkeypatch):
    need_postgresql("the worker, the runner, the referee and the test share the tables")
    require_redis_broker()
    with runner_environment(monkeypatch, uid_base=1_660_000, slots=12, cgroup="tienlen-sandbox-sybil") as config:
        yield config


def hosted_sybil(n: int, pool: str):
    person = User.objects.create_user(f"signup-{n}")
    bot, _ = bot_create(owner=person, name=f"sybil-{n}")
    source = (HERE / "sybil_hosted_bot.py").read_text().replace('POOL_ADDRESS = "127.0.0.1:0"',
                                                                 f'POOL_ADDRESS = "{pool}"')
    data = zipped(("bot.py", source.encode()),
                  ("memorising_bot.py", (HERE.parent / "tournaments" / "memorising_bot.py").read_bytes()))
    submission = hosting.submission_create(bot=bot, user=person, data=data, runtime="python3.11")
    # its validation is the runner's (tests/hosted/test_hosted_e2e.py); here it plays at once
    assert hosting.submission_validation_begin(submission_id=submission.pk)
    hosting.submission_validation_finish(submission_id=submission.pk, ok=True, log="", detail="")
    bot.refresh_from_db()
    hosting.bot_hosting_set(bot=bot, user=person, hosting="hosted")
    return bot


def test_hosted_sybil_accounts_share_deals_across_tables_and_never_know_a_card_from_another(
        runner_env, settings) -> None:
    staff = User.objects.create_user("house", is_staff=True)
    organiser = User.objects.create_user("organiser", is_staff=True)
    kinds = ("greedy", "heuristic", "random", "greedy")
    with PoolServer() as pool, platform_referee(settings):
        sybils = [hosted_sybil(n, pool.address) for n in range(ACCOUNTS)]
        house = [bot_create(owner=staff, name=f"house-{i}", house_bot=kind)[0] for i, kind in enumerate(kinds)]
        tournament = tournament_create(organiser=organiser, name="Open cup", format="round_robin",
                                       seats_per_table=4, duplicate_sets=1, move_time_ms=500, time_bank_ms=5000,
                                       connect_deadline_s=120)
        assert tournament.deal_format == Tournament.DealFormat.FIELD  # the default format
        for bot in [*sybils, *house]:
            tournament_entrant_add(tournament=tournament, bot=bot)
        with isolated_celery_worker(runner=True, concurrency=16, analysis=False):
            tournament_start(tournament=tournament)
            wait_for(lambda: Tournament.objects.get(pk=tournament.pk).status == "finished", 1200, "the tournament")
            wait_for(lambda: not HostedSession.objects.exclude(status="ended").exists(), 120, "the sessions' ends")
    sybil_ids = {b.pk for b in sybils}
    tables = list(Table.objects.filter(tournament=tournament))
    games = Game.objects.filter(table__tournament=tournament)
    sybil_games = GameSeat.objects.filter(game__table__tournament=tournament, bot_id__in=sybil_ids)
    assert len(tables) == 14 and games.count() == 56 and sybil_games.count() == ACCOUNTS * 7 * 4
    assert not sybil_games.filter(forfeited=True).exists()
    # Field duplicates in full: each round's two tables share one deal group, as for house bots.
    per_round: dict[int, set[int]] = defaultdict(set)
    for t in tables:
        per_round[t.round].add(t.deal_group)
    assert all(len(groups) == 1 for groups in per_round.values()), per_round
    # Exposure: sybil games on a deal another sybil played at another table (what pooling would reveal).
    seats = list(sybil_games.values_list("bot_id", "game__deal_id", "game__table_id"))
    by_deal: dict[int, set[tuple[int, int]]] = defaultdict(set)
    for bot_id, deal_id, table_id in seats:
        by_deal[deal_id].add((bot_id, table_id))
    exposed = sum(1 for bot_id, deal_id, table_id in seats
                  if any(b != bot_id and t != table_id for b, t in by_deal[deal_id]))
    assert exposed > 0
    # What the bots themselves knew: their own lines, from their sessions' logs.
    lines = [json.loads(line[len("SYBIL "):]) for log in HostedSession.objects.filter(bot_id__in=sybil_ids)
             .values_list("log", flat=True) for line in log.splitlines() if line.startswith("SYBIL ")]
    assert len(lines) == sybil_games.count()  # one per game start
    predicted = sum(line["predicted"] for line in lines)
    assert predicted == 0, [line for line in lines if line["predicted"]][:3]
    assert pool.connections == 0 and all(line["pool"] != "ok" for line in lines)
    # their own storage did survive between their sessions (so the channel they had was to themselves)
    assert BotStorage.objects.filter(bot_id__in=sybil_ids).count() == ACCOUNTS
    assert max(line["stored_games"] for line in lines) >= 4
    print(f"\nhosted sybil audit: {ACCOUNTS} hosted sybil accounts + 4 house bots, {len(tables)} tables, "
          f"{games.count()} games; deal groups per round: 1 (field duplicates in full); sybil games "
          f"{sybil_games.count()}, of which on a deal another sybil played at another table: {exposed} "
          f"({100 * exposed / sybil_games.count():.0f} %); opponent cards predicted at game starts: {predicted}; "
          f"pool connections: {pool.connections}; pool errors seen: {sorted({line['pool'] for line in lines})}; "
          f"most games remembered from its own storage: {max(line['stored_games'] for line in lines)}")
