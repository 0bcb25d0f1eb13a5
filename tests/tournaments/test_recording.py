"""Recording games: idempotent under retries, ratings applied once and in order, exactly
reproducible by `recompute_ratings`."""

from __future__ import annotations

import io
import random
import zlib

import pytest
from django.core.management import call_command

from tests.tournaments.conftest import make_result, running_round_robin
from tournaments.models import Game, GameSeat, Rating, RatingChange, RatingPool, Replay, Table
from tournaments.selectors.tournaments import tournament_progress
from tournaments.services.recording import table_game_record
from tournaments.services.tables import table_plan

pytestmark = pytest.mark.django_db


def first_table(tournament) -> Table:
    return tournament.tables.order_by("round", "number").first()


def test_recording_a_game_stores_seats_replay_and_ratings(organiser, bots) -> None:
    tournament = running_round_robin(organiser, bots[:4], seats_per_table=4)
    table = first_table(tournament)
    game = table_game_record(table_id=table.pk, result=make_result(0, [2, 0, 3, 1]))
    assert game is not None
    seats = list(GameSeat.objects.filter(game=game).order_by("seat"))
    starting = [s.entrant.bot_id for s in table.seats.order_by("seat")]
    assert [s.bot_id for s in seats] == starting
    assert [s.place for s in seats] == [2, 4, 1, 3]
    assert [s.points for s in seats] == [1, -2, 2, -1]
    replay = Replay.objects.get(game=game)
    assert replay.schema == "tienlen.replay/1"
    assert zlib.decompress(bytes(replay.data)).decode() == make_result(0, [2, 0, 3, 1]).replay_text
    assert replay.raw_size > len(bytes(replay.data))  # compressed
    pool = RatingPool.objects.get(preset="south", seats=4)
    ratings = {r.bot_id: r.rating for r in Rating.objects.filter(pool=pool)}
    k = pool.k_factor
    assert ratings[starting[2]] == pytest.approx(1500 + k / 3 * 1.5)
    assert ratings[starting[0]] == pytest.approx(1500 + k / 3 * 0.5)
    assert ratings[starting[1]] == pytest.approx(1500 - k / 3 * 1.5)
    table.refresh_from_db()
    assert table.games_recorded == 1


def test_a_retried_task_records_each_game_once(organiser, bots) -> None:
    tournament = running_round_robin(organiser, bots[:4], seats_per_table=4)
    table = first_table(tournament)
    results = [make_result(i, [i % 4, (i + 1) % 4, (i + 2) % 4, (i + 3) % 4]) for i in range(4)]
    for r in results[:3]:
        table_game_record(table_id=table.pk, result=r)
    snapshot = dict(Rating.objects.values_list("bot_id", "rating"))
    # The worker died after game 2 and the table is replayed from its seeds: games 0-2 are
    # streamed again; only game 3 is new.
    again = [table_game_record(table_id=table.pk, result=r) for r in results[:3]]
    assert again == [None, None, None]
    assert dict(Rating.objects.values_list("bot_id", "rating")) == snapshot
    assert table_game_record(table_id=table.pk, result=results[3]) is not None
    assert Game.objects.filter(table=table).count() == 4
    assert RatingChange.objects.count() == 16
    table.refresh_from_db()
    assert table.games_recorded == 4
    assert table_plan(table_id=table.pk).first_game_index == 4


def test_bad_game_records_are_refused_and_nothing_is_written(organiser, bots) -> None:
    tournament = running_round_robin(organiser, bots[:4], seats_per_table=4)
    table = first_table(tournament)
    bad = make_result(0, [0, 1, 2, 3], seat_participants=[0, 0, 1, 2])
    with pytest.raises(ValueError, match="seat_participants"):
        table_game_record(table_id=table.pk, result=bad)
    assert not Game.objects.exists()
    assert not RatingChange.objects.exists()


def test_instant_win_shares_last_place(organiser, bots) -> None:
    tournament = running_round_robin(organiser, bots[:4], seats_per_table=4)
    table = first_table(tournament)
    game = table_game_record(table_id=table.pk, result=make_result(0, [1, 0, 2, 3], instant_winner=1))
    places = list(GameSeat.objects.filter(game=game).order_by("seat").values_list("place", flat=True))
    assert places == [4, 1, 4, 4]


def test_recompute_ratings_reproduces_the_stored_values_exactly(organiser, bots) -> None:
    tournament = running_round_robin(organiser, bots[:8], seats_per_table=4)
    rng = random.Random(7)
    for table in tournament.tables.all():
        for i in range(table.games_planned):
            order = [0, 1, 2, 3]
            rng.shuffle(order)
            rotation = i % 4
            table_game_record(
                table_id=table.pk,
                result=make_result(i, order, seat_participants=[(s + rotation) % 4 for s in range(4)]),
            )
    stored = dict(Rating.objects.values_list("bot_id", "rating"))
    history = list(RatingChange.objects.order_by("seq", "bot_id").values_list("rating_before", "rating_after"))
    # Wreck the stored values, then rebuild them from the games.
    Rating.objects.update(rating=1234.5, games=0)
    out = io.StringIO()
    call_command("recompute_ratings", stdout=out)
    assert dict(Rating.objects.values_list("bot_id", "rating")) == stored  # exact floats
    assert list(RatingChange.objects.order_by("seq", "bot_id").values_list("rating_before", "rating_after")) == history
    assert "south-4" in out.getvalue()
    # A second run finds nothing to change.
    out = io.StringIO()
    call_command("recompute_ratings", "--check", stdout=out)
    assert "max difference 0" in out.getvalue()


def test_unrated_tournaments_leave_ratings_alone(organiser, bots) -> None:
    tournament = running_round_robin(organiser, bots[:4], seats_per_table=4, rated=False)
    table = first_table(tournament)
    table_game_record(table_id=table.pk, result=make_result(0, [0, 1, 2, 3]))
    assert not Rating.objects.exists()
    assert tournament_progress(tournament=tournament).games_done == 1
