"""Tables that go wrong midway: forfeits during a table, connect deadlines on resumed
tables, and tables whose worker died (re-enqueued by the beat tick)."""

from __future__ import annotations

import dataclasses
from datetime import timedelta

import pytest
from django.utils import timezone

from tests.tournaments.conftest import make_result
from tournaments.models import GameSeat, Table, TableSeat, Tournament
from tournaments.play.lifecycle import table_wait, tables_claim_stale
from tournaments.selectors.standings import tournament_standings
from tournaments.services.recording import table_game_record
from tournaments.services.tables import table_complete, table_plan, table_seats_forfeit
from tournaments.services.tournaments import (
    tournament_cancel,
    tournament_create,
    tournament_entrant_add,
    tournament_schedule,
)

pytestmark = pytest.mark.django_db


def start(tournament) -> None:
    Tournament.objects.filter(pk=tournament.pk).update(status="scheduled")
    tournament_schedule(tournament_id=tournament.pk)
    tournament.refresh_from_db()


def knockout(organiser, bots, **fields) -> Tournament:
    tournament = tournament_create(
        organiser=organiser, name="KO", format="knockout", seats_per_table=4, advance_per_table=2, **fields
    )
    for bot in bots[:4]:
        tournament_entrant_add(tournament=tournament, bot=bot)
    start(tournament)
    return tournament


def best_first(table: Table, best: int) -> list[int]:
    """A finishing order (of seats) where participant `best` wins every game."""
    n = table.seats.count()
    return [best, *[p for p in range(n) if p != best]]


# --- 1. forfeits during a table -----------------------------------------------------------


def test_a_bot_forfeited_mid_table_never_advances_even_with_the_most_points(organiser, bots) -> None:
    tournament = knockout(organiser, bots)
    table = tournament.tables.get()
    seats = {s.seat: s.entrant.bot_id for s in table.seats.select_related("entrant")}
    # Seat 0 wins the first three games, then collects strikes and is forfeited by the
    # referee in the last: it still has the most points, but it forfeited the table.
    for i in range(table.games_planned):
        result = make_result(i, best_first(table, 0 if i < 3 else 1))
        if i >= 3:
            result = dataclasses.replace(result, forfeited=[0], strikes=[3, 0, 0, 0])
        table_game_record(table_id=table.pk, result=result)
    # The seat is marked at once (the table is still running): standings show it live.
    assert TableSeat.objects.get(table=table, seat=0).forfeited
    table_complete(table_id=table.pk)
    by_seat = {s.seat: s for s in TableSeat.objects.filter(table=table)}
    assert by_seat[0].forfeited and by_seat[0].advanced is False and by_seat[0].place == 4
    # The only table is the final: its winner, the best seat that did not forfeit, alone
    # goes through.
    assert [s for s in range(4) if by_seat[s].advanced] == [1]
    rows = {r.bot_id: r for r in tournament_standings(tournament=tournament, with_strength=False)}
    assert rows[seats[0]].forfeits == 1  # one forfeited table, not one per game after it
    assert all(rows[seats[s]].forfeits == 0 for s in (1, 2, 3))


def test_a_forfeit_only_in_the_table_result_is_recorded_too(organiser, bots) -> None:
    tournament = knockout(organiser, bots)
    table = tournament.tables.get()
    for i in range(table.games_planned):
        table_game_record(table_id=table.pk, result=make_result(i, best_first(table, 3)))
    # The referee forfeited seat 3 after its last game: only the table result says so.
    table_complete(table_id=table.pk, forfeited=[3])
    seat = TableSeat.objects.get(table=table, seat=3)
    assert seat.forfeited and not seat.advanced


def test_a_forfeit_seen_in_an_earlier_attempt_survives_the_resume(organiser, bots) -> None:
    tournament = knockout(organiser, bots)
    table = tournament.tables.get()
    table_game_record(
        table_id=table.pk, result=dataclasses.replace(make_result(0, [2, 0, 1, 3]), forfeited=[2])
    )
    # The resumed attempt starts afresh at the referee: its games no longer show it.
    for i in range(1, table.games_planned):
        table_game_record(table_id=table.pk, result=make_result(i, [2, 0, 1, 3]))
    table_complete(table_id=table.pk, forfeited=[])
    assert TableSeat.objects.get(table=table, seat=2).forfeited


# --- 2. the connect deadline counts per run of attempts -------------------------------


def test_a_table_resumed_long_after_it_started_gets_the_whole_connect_deadline(organiser, bots) -> None:
    tournament = knockout(organiser, bots, connect_deadline_s=300)
    table = tournament.tables.get()
    plan = table_plan(table_id=table.pk)
    table_game_record(table_id=table.pk, result=make_result(0, [0, 1, 2, 3]))
    # An hour later (a referee restart), the table is retried: the bots are reconnecting.
    Table.objects.filter(pk=table.pk).update(started_at=timezone.now() - timedelta(hours=1))
    table_wait(table_id=table.pk, error="referee unavailable")
    plan = table_plan(table_id=table.pk)
    assert plan.first_game_index == 1
    assert not plan.deadline_passed
    assert plan.connect_deadline_ms == 60_000  # one call waits at most a minute


def test_the_deadline_runs_across_retries_that_wait_for_bots(organiser, bots) -> None:
    tournament = knockout(organiser, bots, connect_deadline_s=300)
    table = tournament.tables.get()
    table_plan(table_id=table.pk)
    table_wait(table_id=table.pk, error="not connected: 7", waiting_for_bots=True)
    Table.objects.filter(pk=table.pk).update(waiting_since=timezone.now() - timedelta(seconds=299))
    plan = table_plan(table_id=table.pk)
    assert not plan.deadline_passed and plan.connect_deadline_ms == 1000
    table_wait(table_id=table.pk, error="not connected: 7", waiting_for_bots=True)
    Table.objects.filter(pk=table.pk).update(waiting_since=timezone.now() - timedelta(seconds=301))
    assert table_plan(table_id=table.pk).deadline_passed
    # Once the referee accepted the table and games were recorded, a new wait starts afresh.
    table_game_record(table_id=table.pk, result=make_result(0, [0, 1, 2, 3]))
    assert Table.objects.get(pk=table.pk).waiting_since is None
    assert not table_plan(table_id=table.pk).deadline_passed


def test_a_seat_forfeited_for_absence_is_played_by_the_stand_in_for_the_rest(organiser, bots, settings) -> None:
    settings.TIENLEN_STAND_IN_HOUSE_BOT = "random"
    tournament = knockout(organiser, bots)
    table = tournament.tables.get()
    table_game_record(table_id=table.pk, result=make_result(0, [0, 1, 2, 3]))
    seat1 = TableSeat.objects.select_related("entrant").get(table=table, seat=1)
    # After a resume, seat 1's bot stayed away past the deadline: it forfeits, the rest play.
    assert table_seats_forfeit(table_id=table.pk, absent=[f"bot:{seat1.entrant.bot_id}"]) == 3
    plan = table_plan(table_id=table.pk)
    assert plan.first_game_index == 1
    assert plan.participants[1] == "house:random"
    assert [p.startswith("bot:") for p in plan.participants] == [True, False, True, True]
    for i in range(1, table.games_planned):
        table_game_record(table_id=table.pk, result=make_result(i, [1, 0, 2, 3]))
    table_complete(table_id=table.pk)
    table.refresh_from_db()
    assert "forfeit" in table.last_error
    forfeits = dict(GameSeat.objects.filter(game__table=table, seat=1).values_list("game__index", "forfeited"))
    assert forfeits == {0: False, 1: True, 2: True, 3: True}
    seat1.refresh_from_db()
    assert seat1.forfeited and not seat1.advanced  # the stand-in's wins do not carry it through


# --- 4. stale tables are claimed once ------------------------------------------------------


def test_tables_silent_past_the_stale_timeout_are_claimed_once(organiser, bots) -> None:
    tournament = knockout(organiser, bots)
    table = tournament.tables.get()
    table_plan(table_id=table.pk)
    now = timezone.now()
    assert tables_claim_stale(stale_after_s=600, now=now) == []  # progress just now
    later = now + timedelta(seconds=601)
    assert tables_claim_stale(stale_after_s=600, now=later) == [table.pk]
    # A second tick (or a racing beat) finds it claimed: nothing is enqueued twice.
    assert tables_claim_stale(stale_after_s=600, now=later) == []
    assert tables_claim_stale(stale_after_s=600, now=later + timedelta(seconds=601)) == [table.pk]
    # Recording a game is progress; finished tables and cancelled tournaments are left alone.
    table_game_record(table_id=table.pk, result=make_result(0, [0, 1, 2, 3]))
    assert tables_claim_stale(stale_after_s=600, now=timezone.now() + timedelta(seconds=300)) == []
    tournament_cancel(tournament=tournament)
    assert tables_claim_stale(stale_after_s=600, now=timezone.now() + timedelta(days=1)) == []


def test_the_beat_tick_re_enqueues_a_stale_table(organiser, bots, settings, monkeypatch) -> None:
    from tournaments import tasks

    settings.TIENLEN_STALE_TABLE_SECONDS = 60
    tournament = knockout(organiser, bots)
    table = tournament.tables.get()
    table_plan(table_id=table.pk)  # a worker took it, then died
    Table.objects.filter(pk=table.pk).update(progress_at=timezone.now() - timedelta(seconds=61))
    enqueued: list[int] = []
    monkeypatch.setattr(tasks.table_play_task, "delay", enqueued.append)
    monkeypatch.setattr("tournaments.play.routing.pool_bots_available", lambda: {})
    report = tasks.tournaments_tick()
    assert report["resumed_stale"] == 1 and enqueued == [table.pk]
    assert tasks.tournaments_tick()["resumed_stale"] == 0 and enqueued == [table.pk]
