"""Tournament life cycles without the referee: knockout rounds, forfeits, ladders, cancel."""

from __future__ import annotations

import random

import pytest
from django.core.exceptions import ValidationError

from tests.tournaments.conftest import make_result
from tournaments.models import Entrant, Rating, Table, Tournament
from tournaments.selectors.tournaments import tournament_progress
from tournaments.services.ladder import ladder_tick
from tournaments.services.ratings import rating_pool_get
from tournaments.services.recording import table_game_record
from tournaments.services.tables import table_complete, table_plan
from tournaments.services.tournaments import (
    tournament_cancel,
    tournament_create,
    tournament_entrant_add,
    tournament_schedule,
    tournament_start,
)

pytestmark = pytest.mark.django_db


def start(tournament) -> None:
    Tournament.objects.filter(pk=tournament.pk).update(status="scheduled")
    tournament_schedule(tournament_id=tournament.pk)
    tournament.refresh_from_db()


def play_table(table: Table, strength: dict[int, int]) -> None:
    """Record a table's games; the stronger bot (higher number) always finishes higher."""
    participants = [s.entrant.bot_id for s in table.seats.select_related("entrant").order_by("seat")]
    n = len(participants)
    for i in range(table.games_planned):
        seat_participants = [(s + i) % n for s in range(n)]
        order = sorted(range(n), key=lambda s: -strength[participants[seat_participants[s]]])
        table_game_record(table_id=table.pk, result=make_result(i, order, seat_participants))


def test_knockout_seeds_by_rating_and_advances_the_best_to_a_final(organiser, bots) -> None:
    strength = {b.pk: i for i, b in enumerate(bots)}
    # Ratings seed the bracket: bot3 is rated best.
    pool = rating_pool_get(preset="south", seats=4)
    Rating.objects.create(pool=pool, bot=bots[3], rating=1700)
    tournament = tournament_create(organiser=organiser, name="KO", format="knockout", seats_per_table=4, advance_per_table=2)
    for bot in bots:
        tournament_entrant_add(tournament=tournament, bot=bot)
    start(tournament)
    assert Entrant.objects.get(tournament=tournament, bot=bots[3]).seed_rank == 1
    round1 = list(tournament.tables.filter(round=1))
    assert len(round1) == 2
    progress = tournament_progress(tournament=tournament)
    assert (progress.tables_total, progress.games_planned) == (3, 12)  # the final is counted
    for table in round1:
        play_table(table, strength)
    steps = [table_complete(table_id=t.pk) for t in round1]
    assert steps[0].tables_to_play == [] and not steps[0].tournament_finished
    final_ids = steps[1].tables_to_play
    assert len(final_ids) == 1
    final = Table.objects.get(pk=final_ids[0])
    assert final.round == 2
    finalists = {s.entrant.bot.name for s in final.seats.select_related("entrant__bot")}
    assert finalists == {"bot4", "bot5", "bot6", "bot7"}
    assert Entrant.objects.filter(tournament=tournament, status="eliminated").count() == 4
    play_table(final, strength)
    done = table_complete(table_id=final.pk)
    assert done.tournament_finished
    again = table_complete(table_id=final.pk)  # a retried completion is a no-op
    assert not again.tournament_finished and again.tables_to_play == []
    tournament.refresh_from_db()
    assert tournament.status == "finished"
    progress = tournament_progress(tournament=tournament)
    assert (progress.tables_done, progress.tables_total, progress.games_done) == (3, 3, 12)
    winner = final.seats.get(place=1)
    assert winner.entrant.bot.name == "bot7"


def test_an_absent_bot_forfeits_and_cannot_advance(organiser, bots) -> None:
    tournament = tournament_create(organiser=organiser, name="KO", format="knockout", seats_per_table=4, advance_per_table=1)
    for bot in bots[:4]:
        tournament_entrant_add(tournament=tournament, bot=bot)
    start(tournament)
    table = tournament.tables.get()
    absent = f"bot:{bots[0].pk}"
    table_complete(table_id=table.pk, absent=[absent], error="forfeit: not connected")
    seats = {s.entrant.bot_id: s for s in table.seats.select_related("entrant")}
    assert seats[bots[0].pk].forfeited
    assert seats[bots[0].pk].place == 4
    tournament.refresh_from_db()
    assert tournament.status == "finished"


def test_round_robin_finishes_exactly_once_whatever_the_completion_order(organiser, bots) -> None:
    tournament = tournament_create(organiser=organiser, name="RR", format="round_robin", seats_per_table=2)
    for bot in bots[:4]:
        tournament_entrant_add(tournament=tournament, bot=bot)
    start(tournament)
    tables = list(tournament.tables.all())
    assert len(tables) == 6
    random.Random(5).shuffle(tables)
    finished = [table_complete(table_id=t.pk).tournament_finished for t in tables]
    finished += [table_complete(table_id=t.pk).tournament_finished for t in tables]
    assert finished.count(True) == 1 and finished[5] is True


def test_ladder_starts_tables_among_connected_bots_only(organiser, bots) -> None:
    ladder = tournament_create(organiser=organiser, name="Ladder", format="ladder", seats_per_table=2, ladder_tables_per_tick=3)
    for bot in bots[:6]:
        tournament_entrant_add(tournament=ladder, bot=bot)
    tournament_start(tournament=ladder)
    tournament_schedule(tournament_id=ladder.pk)
    connected = {str(b.pk): "1.0" for b in bots[:4]}
    ids = ladder_tick(tournament=ladder, connected=connected, rng=random.Random(2))
    assert len(ids) == 2
    seated = {s.entrant.bot_id for t in Table.objects.filter(pk__in=ids) for s in t.seats.select_related("entrant")}
    assert seated == {b.pk for b in bots[:4]}
    for table in Table.objects.filter(pk__in=ids):
        owners = {s.entrant.bot.owner_id for s in table.seats.select_related("entrant__bot")}
        assert len(owners) == 2  # never one owner's bots at one table
    # Busy bots are not scheduled again until their tables finish.
    assert ladder_tick(tournament=ladder, connected=connected) == []
    assert bots[0].versions.get().version == "1.0"


def test_cancel_stops_unplayed_tables_and_keeps_games(organiser, bots) -> None:
    tournament = tournament_create(organiser=organiser, name="RR", format="round_robin", seats_per_table=4)
    for bot in bots[:5]:
        tournament_entrant_add(tournament=tournament, bot=bot)
    start(tournament)
    table = tournament.tables.first()
    table_game_record(table_id=table.pk, result=make_result(0, [0, 1, 2, 3]))
    tournament_cancel(tournament=tournament, reason="server move")
    assert set(tournament.tables.values_list("status", flat=True)) == {"cancelled"}
    assert table.games.count() == 1
    assert table_plan(table_id=table.pk) is None
    with pytest.raises(ValidationError):
        tournament_cancel(tournament=tournament)


def test_entrants_are_fixed_once_running(organiser, bots) -> None:
    tournament = tournament_create(organiser=organiser, name="RR", format="round_robin", seats_per_table=2)
    for bot in bots[:2]:
        tournament_entrant_add(tournament=tournament, bot=bot)
    start(tournament)
    with pytest.raises(ValidationError) as info:
        tournament_entrant_add(tournament=tournament, bot=bots[2])
    assert "status" in info.value.message_dict


def test_unknown_preset_and_options_are_refused(organiser) -> None:
    with pytest.raises(ValidationError) as info:
        tournament_create(organiser=organiser, name="X", format="round_robin", preset="atlantis")
    assert "preset" in info.value.message_dict
    with pytest.raises(ValidationError) as info:
        tournament_create(organiser=organiser, name="X", format="round_robin", options={"no_such_option": True})
    assert "options" in info.value.message_dict
    # A known option with a value of the wrong type is refused before anything is saved.
    with pytest.raises(ValidationError) as info:
        tournament_create(organiser=organiser, name="X", format="round_robin", options={"steal_lead": "yes"})
    assert "steal_lead must be true or false" in info.value.message_dict["options"][0]
    assert not Tournament.objects.filter(name="X").exists()


def test_a_malformed_game_record_fails_the_table_with_the_reason(organiser, bots, monkeypatch) -> None:
    from tournaments import tasks

    tournament = tournament_create(organiser=organiser, name="Bad", format="round_robin", seats_per_table=4)
    for bot in bots[:4]:
        tournament_entrant_add(tournament=tournament, bot=bot)
    start(tournament)
    table = tournament.tables.get()

    def misbehaving_referee(plan, **_):
        yield make_result(0, [0, 1, 2, 3])
        yield make_result(1, [0, 1, 2, 3], seat_participants=[0, 0, 0, 0])

    monkeypatch.setattr("tournaments.play.referee.referee_play_table", misbehaving_referee)
    assert tasks.table_play_task(table.pk) == "failed"
    table.refresh_from_db()
    assert table.status == "failed"
    assert "seat_participants" in table.last_error
    assert table.games.count() == 1  # what was recorded stays


def test_a_delayed_start_is_picked_up_by_the_beat_tick(organiser, bots, monkeypatch, django_capture_on_commit_callbacks) -> None:
    from datetime import timedelta

    from django.utils import timezone

    from tournaments import tasks

    queued: list[int] = []
    monkeypatch.setattr(tasks.tournament_schedule_task, "delay", lambda pk: queued.append(pk))
    monkeypatch.setattr("tournaments.play.routing.pool_bots_available", lambda: None)
    tournament = tournament_create(organiser=organiser, name="Later", format="round_robin", seats_per_table=2)
    for bot in bots[:2]:
        tournament_entrant_add(tournament=tournament, bot=bot)
    soon = timezone.now() + timedelta(hours=1)
    with django_capture_on_commit_callbacks(execute=True):
        tournament_start(tournament=tournament, starts_at=soon)
    assert queued == []  # not yet
    assert tasks.tournaments_tick()["started"] == 0
    Tournament.objects.filter(pk=tournament.pk).update(starts_at=timezone.now() - timedelta(seconds=1))
    assert tasks.tournaments_tick()["started"] == 1
    assert queued == [tournament.pk]
