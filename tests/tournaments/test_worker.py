"""End to end: a real Celery worker plays a round robin through a real gRPC referee.

The broker is CELERY_BROKER_URL when set (Redis in CI) and an in-process transport
otherwise. The referee runs on a loopback port with `DjangoTokenStore`; house bots fill
most seats and one SDK bot connects over gRPC with the token the platform issued.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Iterator

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command

from tests.celery_helpers import isolated_celery_worker
from tests.platform_referee import ORGANIZER_TOKEN, platform_referee
from tournaments.models import Deal, Game, GameSeat, RatingChange, Table, TableSeat, Tournament
from tournaments.selectors.games import game_replay
from tournaments.selectors.standings import tournament_standings
from tournaments.selectors.tournaments import tournament_progress
from tournaments.services.accounts import bot_create
from tournaments.services.recording import table_games_record
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


@pytest.fixture
def worker(referee) -> Iterator[None]:
    """A real worker on a private queue; the Celery app is restored after the test."""
    with isolated_celery_worker():
        yield


class SdkBot:
    """A real bot process-alike: the SDK's greedy bot connected with its platform token."""

    def __init__(self, target: str, token: str) -> None:
        from bots_sdk.client import BotClient
        from bots_sdk.examples import GreedyBot

        self.client = BotClient(GreedyBot, target=target, token=token, max_tables=2, bot_version="2.1")
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_until_complete, args=(self.client.run(),), daemon=True)

    def __enter__(self) -> SdkBot:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.loop.call_soon_threadsafe(self.client.stop, True)
        self.thread.join(20)


def wait_for(predicate, timeout: float = 180.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.fixture
def people(db):
    staff = User.objects.create_user("house", is_staff=True)
    organiser = User.objects.create_user("organiser", is_staff=True)
    owner = User.objects.create_user("author")
    return staff, organiser, owner


def test_a_round_robin_runs_through_worker_and_referee(worker, referee, people) -> None:
    staff, organiser, owner = people
    entrants = [
        bot_create(owner=staff, name=name, house_bot=policy)[0]
        for name, policy in [("house-random", "random"), ("house-greedy", "greedy"),
                             ("house-heuristic", "heuristic"), ("house-random-2", "random")]
    ]
    sdk_bot, token = bot_create(owner=owner, name="sdk-greedy")
    tournament = tournament_create(
        organiser=organiser, name="Worker cup", format="round_robin", seats_per_table=4,
        duplicate_sets=1, move_time_ms=500, time_bank_ms=5000, connect_deadline_s=60,
    )
    for bot in [*entrants, sdk_bot]:
        tournament_entrant_add(tournament=tournament, bot=bot)
    with SdkBot(referee, token):
        tournament_start(tournament=tournament)
        wait_for(lambda: Tournament.objects.get(pk=tournament.pk).status == "finished", what="the finish")
    tournament.refresh_from_db()
    progress = tournament_progress(tournament=tournament)
    assert (progress.tables_done, progress.tables_total) == (5, 5)  # (5,4,3) design: 5 tables
    assert progress.games_done == progress.games_planned == 20
    games = list(Game.objects.filter(table__tournament=tournament).order_by("table_id", "index"))
    assert len(games) == 20
    assert all([g.index for g in games if g.table_id == t] == [0, 1, 2, 3] for t in {g.table_id for g in games})
    # Every stored replay re-simulates in the engine to the stored result.
    from bots_sdk.rules import replay_game

    for game in games:
        replay = game_replay(game_id=game.pk)
        replayed = replay_game(replay)
        assert list(replayed.points) == game.points
    standings = tournament_standings(tournament=tournament)
    assert sum(r.points for r in standings) == 0
    assert {r.games for r in standings} == {16}
    assert RatingChange.objects.count() == 80
    out = __import__("io").StringIO()
    call_command("recompute_ratings", "--check", stdout=out)
    assert "max difference 0" in out.getvalue()
    assert sdk_bot.game_seats.count() == 16
    # The version the SDK bot reported is recorded with each of its games.
    assert set(sdk_bot.game_seats.values_list("version__version", flat=True)) == {"2.1"}


def test_a_killed_table_resumes_from_its_seeds_without_recording_twice(worker, people, monkeypatch) -> None:
    staff, organiser, _ = people
    bots = [bot_create(owner=staff, name=f"h{i}", house_bot=p)[0]
            for i, p in enumerate(["random", "greedy", "heuristic", "random"])]
    tournament = tournament_create(
        organiser=organiser, name="Crash cup", format="round_robin", seats_per_table=4, duplicate_sets=2,
    )
    for bot in bots:
        tournament_entrant_add(tournament=tournament, bot=bot)
    real_record = table_games_record
    calls = {"n": 0}

    def dies_at_the_fourth_game(*, table_id, results, then=None, **lease):
        recorded = []
        for i, result in enumerate(results):
            calls["n"] += 1
            if calls["n"] == 4:
                raise RuntimeError("worker killed")  # like a SIGKILL in the middle of the table
            # The table's close goes with its last game (the attempt's last batch).
            recorded += real_record(table_id=table_id, results=[result], then=then if i == len(results) - 1 else None,
                                    **lease)
        return recorded

    monkeypatch.setattr("tournaments.play.attempt.table_games_record", dies_at_the_fourth_game)
    tournament_start(tournament=tournament)
    table_id = None

    def table_stuck() -> bool:
        nonlocal table_id
        table = Table.objects.filter(tournament=tournament).first()
        table_id = table.pk if table else None
        return table is not None and table.games_recorded == 3 and calls["n"] >= 4

    wait_for(table_stuck, what="the crash")
    time.sleep(0.5)
    assert Tournament.objects.get(pk=tournament.pk).status == "running"
    monkeypatch.setattr("tournaments.play.attempt.table_games_record", real_record)
    # The broker redelivers the unacknowledged task (acks_late); a second copy races it.
    from tournaments.tasks import table_play_task

    table_play_task.delay(table_id)
    wait_for(lambda: Tournament.objects.get(pk=tournament.pk).status == "finished", what="the resume")
    table = Table.objects.get(pk=table_id)
    assert table.games_recorded == 8 and table.attempts >= 2
    assert list(Game.objects.filter(table=table).order_by("index").values_list("index", flat=True)) == list(range(8))
    assert RatingChange.objects.count() == 32
    # Both attempts played the deals committed before play (the worker resent the seeds of
    # games 3..7): every replay is dealt from its own deal's seed, all eight different.
    committed = dict(Deal.objects.filter(tournament=tournament).values_list("index", "seed"))
    played = {g.index: json.loads(g.replay.decoded_text())["seed"]
              for g in Game.objects.filter(table=table).select_related("replay")}
    assert played == committed and len(set(played.values())) == 8
    assert not Deal.objects.filter(tournament=tournament, revealed_at__isnull=True).exists()
    table_play_task.delay(table_id)  # a late duplicate is a no-op
    time.sleep(1.0)
    assert Game.objects.filter(table=table).count() == 8


def test_an_absent_bot_is_waited_for_then_forfeits(worker, people) -> None:
    staff, organiser, owner = people
    present = [bot_create(owner=staff, name=f"h{i}", house_bot="greedy")[0] for i in range(3)]
    absent, _token = bot_create(owner=owner, name="never-connects")
    tournament = tournament_create(
        organiser=organiser, name="Absent cup", format="round_robin", seats_per_table=4,
        duplicate_sets=1, connect_deadline_s=2,
    )
    for bot in [*present, absent]:
        tournament_entrant_add(tournament=tournament, bot=bot)
    tournament_start(tournament=tournament)
    wait_for(lambda: Tournament.objects.get(pk=tournament.pk).status == "finished", timeout=60, what="the forfeit")
    table = Table.objects.get(tournament=tournament)
    assert table.attempts >= 2  # it waited and retried before giving up
    assert "forfeit" in table.last_error
    forfeited = {s.entrant.bot.name: s.forfeited for s in table.seats.select_related("entrant__bot")}
    assert forfeited == {"h0": False, "h1": False, "h2": False, "never-connects": True}
    rows = {r.bot_name: r for r in tournament_standings(tournament=tournament)}
    assert rows["never-connects"].forfeits == 1 and rows["h0"].forfeits == 0
    # The others still play their games: the stand-in house bot takes the forfeited seat.
    assert table.status == "done" and table.games_recorded == table.games_planned == 4
    assert rows["h0"].games == 4
    absent_seats = GameSeat.objects.filter(game__table=table, bot=absent)
    assert absent_seats.count() == 4 and not absent_seats.filter(forfeited=False).exists()
    assert not GameSeat.objects.filter(game__table=table, forfeited=True).exclude(bot=absent).exists()


def test_a_table_waiting_for_an_absent_bot_names_it_until_the_bot_connects(worker, referee, people, client) -> None:
    """The referee waits for a bot that has not connected (up to the connect deadline): the
    tournament's page, its table list and the API say "waiting for <bot>", not "playing
    now"; once the bot connects the table plays and the words go."""
    staff, organiser, owner = people
    present = [bot_create(owner=staff, name=f"h{i}", house_bot="greedy")[0] for i in range(3)]
    late, token = bot_create(owner=owner, name="comes-late")
    tournament = tournament_create(
        organiser=organiser, name="Late cup", slug="late-cup", format="round_robin", seats_per_table=4,
        duplicate_sets=1, connect_deadline_s=120,
    )
    for bot in [*present, late]:
        tournament_entrant_add(tournament=tournament, bot=bot)
    tournament_start(tournament=tournament)
    wait_for(lambda: Table.objects.filter(tournament=tournament, waiting_since__isnull=False)
             .exclude(waiting_for=[]).exists(), timeout=60, what="the attempt's note of the absent bot")
    table = Table.objects.get(tournament=tournament)
    assert table.awaited == ["comes-late"]
    tournament.refresh_from_db()
    progress = tournament_progress(tournament=tournament)
    assert progress.waiting_for == ("comes-late",)
    assert progress.activity.label == "Waiting for comes-late"
    assert client.get("/tournaments/late-cup/progress.json").json()["waiting_for"] == ["comes-late"]
    api_tables = client.get("/api/v1/tournaments/late-cup/tables/").json()["results"]
    assert api_tables[0]["waiting_for"] == ["comes-late"]
    page = client.get("/tournaments/late-cup/").content.decode()
    assert "waiting for <b id=\"waiting-for\">comes-late</b>" in page
    assert 'data-waiting-for="comes-late"' in page and "playing now" not in page
    with SdkBot(referee, token):
        wait_for(lambda: Tournament.objects.get(pk=tournament.pk).status == "finished", timeout=120, what="the finish")
    table.refresh_from_db()
    tournament.refresh_from_db()
    assert table.awaited == [] and not any(s.forfeited for s in table.seats.all())
    assert tournament_progress(tournament=tournament).waiting_for == ()
    assert "waiting for" not in client.get("/tournaments/late-cup/").content.decode()


def test_the_ladder_tick_starts_rated_tables_that_the_worker_plays(worker, referee, people) -> None:
    staff, organiser, owner = people
    house = [bot_create(owner=staff, name=f"lad{i}", house_bot=p)[0]
             for i, p in enumerate(["random", "greedy", "heuristic", "random", "greedy"])]
    sdk_bot, token = bot_create(owner=owner, name="ladder-sdk")
    offline, _ = bot_create(owner=owner, name="ladder-offline")
    ladder = tournament_create(
        organiser=organiser, name="Ladder", format="ladder", seats_per_table=2,
        ladder_tables_per_tick=3, duplicate_sets=1, allow_same_owner=True,
    )
    for bot in [*house, sdk_bot, offline]:
        tournament_entrant_add(tournament=ladder, bot=bot)
    tournament_start(tournament=ladder)
    wait_for(lambda: Tournament.objects.get(pk=ladder.pk).status == "running", what="the ladder to open")
    from tournaments.tasks import tournaments_tick

    with SdkBot(referee, token) as bot:
        wait_for(lambda: bot.client.connected is not None and bot.client.connected.is_set(), what="the SDK bot")
        report = tournaments_tick()  # what Celery beat runs
        assert report["ladder_tables"] == 3
        wait_for(lambda: Table.objects.filter(tournament=ladder, status="done").count() == 3, what="ladder tables")
    seated = {s.entrant.bot.name for s in TableSeat.objects.filter(table__tournament=ladder).select_related("entrant__bot")}
    assert "ladder-offline" not in seated  # never scheduled while not connected
    assert "ladder-sdk" in seated
    assert RatingChange.objects.filter(pool__seats=2).count() == 3 * 2 * 2
    assert sdk_bot.versions.filter(version="2.1").exists()


def test_a_table_already_running_on_the_referee_is_retried_not_failed(worker, referee, people) -> None:
    """A duplicate delivery meets the referee's ALREADY_EXISTS: it backs off and the table
    is played once, never marked failed."""
    from referee_service.organizer_client import OrganizerClient, RefereeError

    staff, organiser, _ = people
    bots = [bot_create(owner=staff, name=f"h{i}", house_bot="greedy")[0] for i in range(4)]
    tournament = tournament_create(
        organiser=organiser, name="Twice cup", format="round_robin", seats_per_table=4, duplicate_sets=1,
    )
    for bot in bots:
        tournament_entrant_add(tournament=tournament, bot=bot)
    # The "first delivery": a call already holding this table's id at the referee (it waits
    # for a bot that never comes, then gives the id back).
    held: dict[str, object] = {}

    def hold() -> None:
        client = OrganizerClient(referee, ORGANIZER_TOKEN)
        try:
            list(client.play_table(table_id=f"t{tournament.pk}-r1-n1", seats=["bot:ghost", "house:random"],
                                   games=1, connect_deadline_ms=4000))
        except RefereeError as exc:
            held["error"] = exc.code

    holder = threading.Thread(target=hold, daemon=True)
    holder.start()
    time.sleep(0.5)
    tournament_start(tournament=tournament)
    table_id = None

    def table_seen_busy() -> bool:
        nonlocal table_id
        table = Table.objects.filter(tournament=tournament).first()
        table_id = table.pk if table else None
        return table is not None and table.status in ("waiting", "running", "failed", "done") and table.attempts >= 1

    wait_for(table_seen_busy, timeout=30, what="the table to be tried")
    holder.join(20)
    assert held.get("error") == "FAILED_PRECONDITION"
    wait_for(lambda: Tournament.objects.get(pk=tournament.pk).status == "finished", timeout=90, what="the retry")
    table = Table.objects.get(pk=table_id)
    assert table.status == "done", table.last_error
    assert table.attempts == 1  # the busy tries did not count as attempts
    assert list(Game.objects.filter(table=table).values_list("index", flat=True)) == [0, 1, 2, 3]


def test_the_beat_tick_resumes_a_table_whose_worker_died(worker, people, monkeypatch, settings) -> None:
    """No redelivery at all (the filesystem broker's case): the tick finds the silent table."""
    staff, organiser, _ = people
    bots = [bot_create(owner=staff, name=f"h{i}", house_bot="greedy")[0] for i in range(4)]
    tournament = tournament_create(
        organiser=organiser, name="Orphan cup", format="round_robin", seats_per_table=4, duplicate_sets=1,
    )
    for bot in bots:
        tournament_entrant_add(tournament=tournament, bot=bot)
    real_record = table_games_record
    calls = {"n": 0}

    def dies_at_the_third_game(*, table_id, results, then=None, **lease):
        recorded = []
        for i, result in enumerate(results):
            calls["n"] += 1
            if calls["n"] == 3:
                raise RuntimeError("worker killed")  # the task ends; nothing redelivers it
            # The table's close goes with its last game (the attempt's last batch).
            recorded += real_record(table_id=table_id, results=[result], then=then if i == len(results) - 1 else None,
                                    **lease)
        return recorded

    monkeypatch.setattr("tournaments.play.attempt.table_games_record", dies_at_the_third_game)
    tournament_start(tournament=tournament)
    wait_for(lambda: calls["n"] >= 3 and Table.objects.filter(tournament=tournament, games_recorded=2).exists(),
             what="the crash")
    monkeypatch.setattr("tournaments.play.attempt.table_games_record", real_record)
    table = Table.objects.get(tournament=tournament)
    # The failed attempt freed its lease (a reaper claims it a lease later: 30 s by default).
    assert table.status == "waiting" and "worker killed" in table.last_error and not table.lease_owner
    from tournaments.tasks import tournaments_tick

    settings.TIENLEN_STALE_TABLE_SECONDS = 300
    assert tournaments_tick()["resumed_stale"] == 0  # recent progress: its worker may be alive
    settings.TIENLEN_STALE_TABLE_SECONDS = 0.5
    time.sleep(0.6)
    assert tournaments_tick()["resumed_stale"] == 1
    wait_for(lambda: Tournament.objects.get(pk=tournament.pk).status == "finished", what="the resume")
    table.refresh_from_db()
    assert table.status == "done" and table.games_recorded == 4
    assert list(Game.objects.filter(table=table).order_by("index").values_list("index", flat=True)) == [0, 1, 2, 3]
