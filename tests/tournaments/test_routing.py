"""Routing tables over the referee pool, and failing over when a referee dies.

The choice itself is checked on pool rows as the referees' heartbeats write them; then
with real parts: real referees on loopback ports registered in the pool through the
platform's database, real SDK bots connected over gRPC, a real Celery worker. The failover
test kills a real referee process with SIGKILL in the middle of a table.
"""

from __future__ import annotations

import asyncio
import random
import threading
import time
from collections.abc import Iterator

import pytest
from django.contrib.auth.models import User
from django.db import connection

from referee_service.pool import BotSlots, RefereeReport
from tests.celery_helpers import isolated_celery_worker
from tests.needs import need_postgresql
from tournaments.models import Game, Referee, Table, Tournament
from tournaments.play import routing
from tournaments.play.pool import referee_heartbeat
from tournaments.selectors.tournaments import tournament_progress
from tournaments.services.accounts import bot_create
from tournaments.services.ratings import ratings_recompute
from tournaments.services.tournaments import (
    tournament_create,
    tournament_entrant_add,
    tournament_start,
)

pytestmark = pytest.mark.django_db(transaction=True)

ORGANIZER_TOKEN = "organizer-secret-for-routing-tests"


def beat(referee_id: str, *, active: int = 0, capacity: int = 8, **bots: int) -> None:
    """A heartbeat of `referee_id` with these bots connected (bot id -> free slots)."""
    referee_heartbeat(report=RefereeReport(
        referee_id=referee_id, address=f"{referee_id}.internal:50051", capacity=capacity,
        active_tables=active, bots={b.removeprefix("b"): BotSlots(free, "1.0") for b, free in bots.items()},
        started_at=time.time()))


def route(*bot_ids: int, avoid=(), current="") -> str:
    routing._recent.clear()  # each choice judged on the rows alone, as they are now
    routing.pool_view_forget()
    return routing.referee_route(participants=[f"bot:{b}" for b in bot_ids] + ["house:random"],
                                 avoid=avoid, current=current, rng=random.Random(0)).referee_id


def test_the_route_is_a_referee_with_every_bot_of_the_table_and_the_least_loaded(settings):
    # no pool registered: the configured referee, as in single-referee installs
    fallback = routing.referee_route(participants=["bot:1", "house:random"])
    assert (fallback.target, fallback.referee_id) == (settings.REFEREE_TARGET, "")

    beat("a", active=6, b1=2, b2=2)
    beat("b", active=1, b2=2, b3=2)
    beat("empty", active=0)  # no bots: never chosen for a table with bots
    assert route(1, 2) == "a"  # the only one with both, however loaded
    assert route(2) == "b"  # both have it: the less loaded
    assert route(3) == "b"
    assert route(2, 3) == "b"
    assert route() in {"empty"}  # house bots only: the least loaded of all
    # a bot with no free slot there counts against a referee, as does being full
    beat("b", active=1, b2=0, b3=2)
    assert route(2) == "a"
    beat("b", active=8, b2=2, b3=2)
    assert route(2) == "a"
    # the referee a table was just lost on is avoided while another has the bots
    beat("b", active=0, b2=2, b3=2)
    assert route(2, avoid=["b"]) == "a"
    assert route(3, avoid=["b"]) == "b"  # nobody else has bot 3: back to b
    # a table goes back to the referee it was on while that one qualifies (a second copy
    # of it is refused there instead of played elsewhere at the same time)
    assert route(2, current="a") == "a"
    assert route(2, current="a", avoid=["a"]) == "b"
    assert route(3, current="a") == "b"  # a lacks bot 3
    # a bot connected nowhere: the referee with most of the table, which waits for it
    chosen = routing.referee_route(participants=["bot:1", "bot:9"], rng=random.Random(0))
    assert (chosen.referee_id, chosen.missing) == ("a", ("bot:9",))
    # a draining referee (stopping) gets nothing
    beat("a", active=0, b1=2, b2=2)
    Referee.objects.filter(referee_id="a").update(draining=True)
    assert route(1) != "a"


def test_tables_routed_there_count_as_load_before_the_heartbeat_says_so(organiser, bots):
    from tests.tournaments.conftest import running_round_robin

    beat("a", b1=4)
    beat("b", b1=4)
    tournament = running_round_robin(organiser, bots[:4], seats_per_table=4)
    table = tournament.tables.get()
    Table.objects.filter(pk=table.pk).update(status=Table.Status.RUNNING, referee="a")
    for _ in range(5):  # other workers' routes are in the database, not in this process
        routing._recent.clear()
        assert route(1) == "b"


def test_a_process_routes_over_one_view_of_the_pool_per_heartbeat_period(monkeypatch):
    """Routing a table costs no pool query while this process's view is younger than a
    referee's heartbeat period; a change in the pool is seen once the view is older, or
    at once after a table was lost (`pool_view_forget`)."""
    from django.test.utils import CaptureQueriesContext

    beat("a", active=0, b1=2)
    beat("b", active=5, b1=2)
    routing.pool_view_forget()
    assert routing.referee_route(participants=["bot:1"]).referee_id == "a"
    with CaptureQueriesContext(connection) as queries:
        for _ in range(3):
            routing._recent.clear()
            assert routing.referee_route(participants=["bot:1"]).referee_id == "a"
    assert len(queries) == 0
    beat("a", active=8, b1=2)  # a fills up: seen after the view's period
    monkeypatch.setattr(routing, "POOL_VIEW_S", 0.0)
    routing._recent.clear()
    assert routing.referee_route(participants=["bot:1"]).referee_id == "b"
    monkeypatch.setattr(routing, "POOL_VIEW_S", 60.0)
    beat("a", active=0, b1=2)
    routing._recent.clear()
    assert routing.referee_route(participants=["bot:1"]).referee_id == "b"  # the view is kept
    routing.pool_view_forget()
    assert routing.referee_route(participants=["bot:1"]).referee_id == "a"
    routing.pool_view_forget()


def test_a_lost_table_fails_over_at_once_only_to_a_live_referee_with_room():
    beat("a", active=8, capacity=8)
    assert not routing.failover_target_exists(lost="")  # outside a pool: no failover
    assert not routing.failover_target_exists(lost="a")  # nobody else
    beat("b", active=8, capacity=8)
    assert not routing.failover_target_exists(lost="a")  # b is full: back off instead
    beat("b", active=7, capacity=8)
    assert routing.failover_target_exists(lost="a")
    Referee.objects.filter(referee_id="b").update(draining=True)
    assert not routing.failover_target_exists(lost="a")


def test_the_ladder_sees_bots_with_a_free_slot_anywhere_in_the_pool():
    beat("a", b1=0, b2=1)
    beat("b", b1=0, b3=2)
    assert routing.pool_bots_available() == {"2": "1.0", "3": "1.0"}


def test_the_ladder_tick_seats_bots_from_every_referee_of_the_pool(organiser, monkeypatch):
    from tests.tournaments.test_ladder import bots_of_owners, running_ladder
    from tournaments import tasks
    from tournaments.models import TableSeat

    bots = bots_of_owners([f"u{i}" for i in range(5)])
    ladder = running_ladder(organiser, bots, seats_per_table=2, ladder_tables_per_tick=2)
    b0, b1, b2, b3, b4 = (str(b.pk) for b in bots)
    # two referees, each with some of the bots; b4's slots are all taken
    referee_heartbeat(report=RefereeReport(
        referee_id="r1", address="r1:1", capacity=8, active_tables=0, started_at=time.time(),
        bots={b0: BotSlots(2, "1.0"), b1: BotSlots(1, "1.0"), b4: BotSlots(0, "1.0")}))
    referee_heartbeat(report=RefereeReport(
        referee_id="r2", address="r2:1", capacity=8, active_tables=0, started_at=time.time(),
        bots={b2: BotSlots(1, "1.0"), b3: BotSlots(3, "1.0"), b4: BotSlots(0, "1.0")}))
    monkeypatch.setattr(tasks.table_play_task, "apply_async", lambda *args, **kwargs: None)  # new tables
    assert tasks.tournaments_tick()["ladder_tables"] == 2
    seated = set(TableSeat.objects.filter(table__tournament=ladder).values_list("entrant__bot_id", flat=True))
    assert seated == {int(b) for b in (b0, b1, b2, b3)}  # from both referees; b4 has no free slot


# --- real referees, bots and a worker --------------------------------------------------------


class Bots:
    """SDK bot clients (the greedy example), each on the referees it is given, all on one
    event loop in a background thread: real gRPC streams, as bot processes would open."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.clients: list = []
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

    def connect(self, token: str, target: str, *, follow_pool: bool, bot_factory=None) -> None:
        from bots_sdk.client import BotClient
        from bots_sdk.examples import GreedyBot

        client = BotClient(bot_factory or GreedyBot, target=target, token=token, max_tables=4,
                           follow_pool=follow_pool, retry_first_connection=True, backoff_max_s=1.0)
        self.clients.append(client)
        asyncio.run_coroutine_threadsafe(client.run(), self.loop)

    def close(self) -> None:
        for client in self.clients:
            self.loop.call_soon_threadsafe(client.stop, True)
        time.sleep(0.5)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)


def wait_for(predicate, timeout: float = 120.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def pool_bots() -> dict[str, set[str]]:
    return {r.referee_id: set(r.bots) for r in Referee.objects.all()}


@pytest.fixture
def pool_referees(settings) -> Iterator[dict]:
    """Three referees on loopback ports, registered in the pool in the test database."""
    need_postgresql("referees, bots and a worker write the pool and the games at once")
    from referee_service.server import RefereeThread
    from tournaments.play.pool import DjangoRefereePool
    from tournaments.token_store import DjangoTokenStore

    settings.REFEREE_ORGANIZER_TOKEN = ORGANIZER_TOKEN
    settings.REFEREE_TARGET = "127.0.0.1:1"  # nothing there: every table must be routed
    threads = {}
    try:
        for name in ("ref-a", "ref-b", "ref-c"):
            threads[name] = RefereeThread(
                DjangoTokenStore(), organizer_token=ORGANIZER_TOKEN, pool=DjangoRefereePool(),
                referee_id=name, pool_heartbeat_s=0.2).start()
        yield threads
    finally:
        for thread in threads.values():
            thread.stop()


@pytest.fixture
def people(db):
    return User.objects.create_user("organiser", is_staff=True), User.objects.create_user("author")


def test_tables_go_to_referees_where_their_bots_are_and_none_where_no_bot_is(pool_referees, people):
    organiser, author = people
    a, b = pool_referees["ref-a"].target, pool_referees["ref-b"].target
    made = [bot_create(owner=User.objects.create_user(f"owner{i}"), name=f"bot{i}")
            for i in range(5)]
    bots = Bots()
    try:
        # bot0 reaches only ref-a; the others ref-a and ref-b; nobody reaches ref-c
        bots.connect(made[0][1], a, follow_pool=False)
        for _, token in made[1:]:
            bots.connect(token, a, follow_pool=False)
            bots.connect(token, b, follow_pool=False)
        ids = {str(bot.pk) for bot, _ in made}
        wait_for(lambda: pool_bots() == {"ref-a": ids, "ref-b": ids - {str(made[0][0].pk)},
                                         "ref-c": set()}, what="the bots in the pool")
        tournament = tournament_create(
            organiser=organiser, name="Routed cup", format="round_robin", seats_per_table=4,
            duplicate_sets=1, move_time_ms=500, time_bank_ms=5000, connect_deadline_s=60)
        for bot, _ in made:
            tournament_entrant_add(tournament=tournament, bot=bot)
        with isolated_celery_worker():
            tournament_start(tournament=tournament)
            wait_for(lambda: Tournament.objects.get(pk=tournament.pk).status == "finished",
                     what="the tournament to finish")
    finally:
        bots.close()
    tables = list(Table.objects.filter(tournament=tournament).prefetch_related("seats__entrant"))
    assert len(tables) == 5 and all(t.status == "done" for t in tables)
    with_bot0 = [t for t in tables if made[0][0].pk in {s.entrant.bot_id for s in t.seats.all()}]
    assert len(with_bot0) == 4
    # the bot that reaches one referee got all its tables, there; nobody's went to ref-c
    assert {t.referee for t in with_bot0} == {"ref-a"}
    assert {t.referee for t in tables} <= {"ref-a", "ref-b"}
    progress = tournament_progress(tournament=tournament)
    assert progress.games_done == progress.games_planned == 20
    assert made[0][0].game_seats.count() == 16 and not made[0][0].game_seats.filter(forfeited=True).exists()
    assert Game.objects.filter(table__tournament=tournament).count() == 20


def test_a_burst_of_tables_spreads_over_the_least_loaded_referees(pool_referees, people):
    organiser, _ = people
    a = pool_referees["ref-a"].target
    made = [bot_create(owner=User.objects.create_user(f"owner{i}"), name=f"bot{i}")
            for i in range(4)]
    bots = Bots()
    try:
        for _, token in made:  # one address each: the SDK finds the other referees
            bots.connect(token, a, follow_pool=True)
        ids = {str(bot.pk) for bot, _ in made}
        wait_for(lambda: all(v == ids for v in pool_bots().values()) and len(pool_bots()) == 3,
                 what="every bot on every referee")
        routing._recent.clear()
        seen = set()
        for _ in range(6):  # six tables routed at once, before any heartbeat
            chosen = routing.referee_route(participants=[f"bot:{b}" for b in sorted(ids)])
            seen.add(chosen.referee_id)
        assert seen == {"ref-a", "ref-b", "ref-c"}
    finally:
        bots.close()


def test_a_bot_connected_to_no_referee_of_the_pool_forfeits_and_the_others_play(pool_referees, people):
    organiser, _ = people
    a = pool_referees["ref-a"].target
    made = [bot_create(owner=User.objects.create_user(f"owner{i}"), name=f"bot{i}") for i in range(3)]
    bots = Bots()
    try:
        for _, token in made[:2]:  # bot2 never connects anywhere
            bots.connect(token, a, follow_pool=False)
        wait_for(lambda: len(pool_bots()["ref-a"]) == 2, what="two bots on ref-a")
        tournament = tournament_create(
            organiser=organiser, name="Absent cup", format="round_robin", seats_per_table=3,
            games_per_table=2, connect_deadline_s=2)
        for bot, _ in made:
            tournament_entrant_add(tournament=tournament, bot=bot)
        with isolated_celery_worker():
            tournament_start(tournament=tournament)
            wait_for(lambda: Tournament.objects.get(pk=tournament.pk).status == "finished",
                     timeout=90, what="the forfeit and the games")
    finally:
        bots.close()
    table = Table.objects.get(tournament=tournament)
    # the referee with most of the table waited for the absent bot, which alone forfeits
    assert (table.status, table.referee, table.games_recorded) == ("done", "ref-a", 2)
    forfeited = {s.entrant.bot.name: s.forfeited for s in table.seats.select_related("entrant__bot")}
    assert forfeited == {"bot0": False, "bot1": False, "bot2": True}


@pytest.mark.slow
@pytest.mark.parametrize("fault", ["killed", "hung"])
def test_a_table_whose_referee_dies_finishes_on_another_without_a_game_twice(fault, settings, people, tmp_path):
    """killed: SIGKILL, the worker's stream breaks at once. hung: SIGSTOP, the connection
    stays open and only the referee's heartbeat stops; the worker notices that within a few
    seconds (gRPC keepalive alone would take 10 to 30 s)."""
    need_postgresql("referee processes, bots and a worker write the pool and the games at once")
    import os
    import signal

    from demo import processes
    from tests.e2e.slow_bot import SlowGreedyBot
    from tests.e2e.stack import database_url

    organiser, _ = people
    settings.REFEREE_ORGANIZER_TOKEN = ORGANIZER_TOKEN
    settings.REFEREE_TARGET = "127.0.0.1:1"
    settings.TIENLEN_REFEREE_TIMEOUT_S = 2
    made = [bot_create(owner=User.objects.create_user(f"owner{i}"), name=f"bot{i}")
            for i in range(4)]
    tournament = tournament_create(
        organiser=organiser, name="Failover cup", format="round_robin", seats_per_table=4,
        duplicate_sets=4, move_time_ms=1000, time_bank_ms=5000, connect_deadline_s=60)
    for bot, _ in made:
        tournament_entrant_add(tournament=tournament, bot=bot)
    env = {
        "DATABASE_URL": database_url(connection.settings_dict),
        "TIENLEN_TOKEN_STORE": "tournaments.token_store:DjangoTokenStore",
        "TIENLEN_ORGANIZER_TOKEN": ORGANIZER_TOKEN,
        "TIENLEN_REFEREE_TIMEOUT_S": "2",
    }
    targets = {name: f"127.0.0.1:{processes.free_port()}" for name in ("ref-a", "ref-b")}
    bots = Bots()
    victim = ""
    with processes.ProcessGroup(tmp_path / "logs") as group:
        for name, target in targets.items():
            group.start(name, processes.python_argv(
                "-m", "referee_service", "--listen", target, "--referee-id", name,
                "--pool-heartbeat", "0.3"), env=env)
        ids = {str(bot.pk) for bot, _ in made}
        try:
            for _, token in made:  # each bot is given ref-a's address and finds ref-b itself
                bots.connect(token, targets["ref-a"], follow_pool=True, bot_factory=SlowGreedyBot)
            wait_for(lambda: pool_bots() == {"ref-a": ids, "ref-b": ids}, what="the bots on both referees")
            with isolated_celery_worker():
                tournament_start(tournament=tournament)
                wait_for(lambda: Game.objects.filter(table__tournament=tournament).exists(), what="a game")
                table = Table.objects.get(tournament=tournament)
                wait_for(lambda: Game.objects.filter(table=table).count() >= 2, what="two games")
                table.refresh_from_db()
                victim = table.referee
                assert victim in targets
                survivor = ({"ref-a", "ref-b"} - {victim}).pop()
                if fault == "killed":
                    group.kill(victim)  # SIGKILL mid-table: no goodbye, its pool row still fresh
                else:
                    os.kill(group.processes[victim].pid, signal.SIGSTOP)  # hung, sockets open
                killed_at, recorded = time.monotonic(), Game.objects.filter(table=table).count()
                wait_for(lambda: Table.objects.get(pk=table.pk).referee == survivor, timeout=60,
                         what="the table on the other referee")
                resumed_in = time.monotonic() - killed_at
                wait_for(lambda: Game.objects.filter(table=table).count() > recorded + 1,
                         timeout=60, what="games after the kill")
                wait_for(lambda: Table.objects.get(pk=table.pk).status == "done", what="the table to finish")
        finally:
            bots.close()
            if victim:
                group.kill(victim)  # a hung referee would ignore SIGTERM
    table.refresh_from_db()
    assert table.referee == survivor
    planned = table.games_planned
    assert sorted(Game.objects.filter(table=table).values_list("index", flat=True)) == list(range(planned))
    # promptly, and not as a failing referee: the failover attempt did not count
    print(f"\n{fault}: on the other referee {resumed_in:.1f} s after the fault")
    assert resumed_in < 10, resumed_in
    assert table.attempts == 1
    assert not Game.objects.filter(table=table, seats__forfeited=True).exists()
    report = ratings_recompute(pool=tournament.pool, write=False)
    assert report.games == planned and report.max_difference < 1e-6
