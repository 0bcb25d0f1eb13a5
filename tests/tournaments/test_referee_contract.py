"""The typed contract from the referee to the worker (tournaments.play.referee): the request
built from the table plan, each GameRecord read once, the JSON stored as it came, points
from the protobuf result and checked against the replay once."""

from __future__ import annotations

import json
import zlib

import pytest

from bots_sdk.protocol.tienlen.v1 import game_pb2 as pb
from bots_sdk.protocol.tienlen.v1 import organizer_pb2 as org
from tests.tournaments.conftest import make_result, running_round_robin
from tournaments.models import Game, Replay, Table
from tournaments.play.referee import FinishedGame, TableOutcome, TablePlan
from tournaments.services.recording import table_game_record, table_games_record


def plan(**fields) -> TablePlan:
    values = dict(
        table_id=7, referee_table_id="t1-r1-n7", participants=["bot:3", "house:greedy", "bot:12"],
        preset="hue", options={"instant_win_points": 6}, games=5, duplicate_sets=0,
        move_time_ms=800, time_bank_ms=9000, house_seed="h" * 32, first_game_index=2,
        resume_leader=1, resume_starting=False, connect_deadline_ms=30_000, deadline_passed=False,
        games_planned=7, attempts=2, deal_seeds=["a" * 32, "b" * 32, "c" * 32, "d" * 32, "e" * 32],
        starting_games=False,
    )
    values.update(fields)
    return TablePlan(**values)


def test_the_request_carries_every_field_of_the_plan() -> None:
    request = plan().request()
    assert request.table_id == "t1-r1-n7"
    assert [s.WhichOneof("player") for s in request.seats] == ["bot_id", "house_bot", "bot_id"]
    assert [s.bot_id or s.house_bot for s in request.seats] == ["3", "greedy", "12"]
    assert request.preset == "hue" and json.loads(request.options_json) == {"instant_win_points": 6}
    assert (request.games, request.duplicate_sets, request.first_game_index) == (5, 0, 2)
    assert (request.move_time_ms, request.time_bank_ms, request.connect_deadline_ms) == (800, 9000, 30_000)
    assert request.seed == "h" * 32 and list(request.deal_seeds) == plan().deal_seeds
    assert request.HasField("resume_leader") and request.resume_leader == 1
    assert request.HasField("resume_starting") and request.resume_starting is False
    assert not request.starting_games


def test_a_fresh_table_leaves_the_resume_fields_unset() -> None:
    request = plan(resume_leader=None, resume_starting=None, first_game_index=0, options={}).request()
    assert not request.HasField("resume_leader") and not request.HasField("resume_starting")
    assert request.options_json == ""  # the referee's preset as it is


def record(replay_json: str = '{"schema": "tienlen.replay/1"}', *, points=(2, 1, -1, -2), order=(0, 1, 2, 3),
           timing_json: str = "", instant_winner: int | None = None, tied=(), index: int = 0,
           schema: str = "tienlen.replay/1", timing: org.GameTiming | None = None) -> org.GameRecord:
    return org.GameRecord(
        game_index=index, seat_participants=[0, 1, 2, 3], replay_json=replay_json, timing_json=timing_json,
        result=pb.GameResult(points=points, finishing_order=order, instant_winner=instant_winner, tied=tied),
        replay_schema=schema, timing=timing,
    )


def test_a_record_is_read_from_its_typed_fields_and_its_json_kept_as_it_came() -> None:
    # Spacing and escapes that re-encoding would change: the stored bytes are the referee's.
    replay_json = '{ "schema": "tienlen.replay/1",\n "seed": "s\\u00e9", "result": {"points": [2, 1, -1, -2]} }'
    timing_json = '{"schema": "tienlen.timing/1", "moves": [ {"seat": 1, "elapsed_ms": 2.5} ]}'
    timing = org.GameTiming(moves=1, elapsed_ms=2.5, seats=[
        org.SeatTiming(), org.SeatTiming(moves=1, thinking_ms=2.5, max_ms=2.5), org.SeatTiming(), org.SeatTiming()])
    result = FinishedGame.from_record(record(replay_json, timing_json=timing_json, timing=timing))
    assert result.replay_text == replay_json and result.timing_text == timing_json
    assert result.points == [2, 1, -1, -2] and result.finishing_order == [0, 1, 2, 3]
    assert result.schema == "tienlen.replay/1"
    assert (result.moves, result.elapsed_ms) == (1, 2.5)
    assert [(t.moves, t.max_ms) for t in result.seat_timing] == [(0, 0.0), (1, 2.5), (0, 0.0), (0, 0.0)]
    assert result.places() == [1, 2, 3, 4] and result.problem(4) is None


def test_places_share_last_after_an_instant_win_and_when_the_result_says_tied() -> None:
    result = FinishedGame.from_record(record(points=(-4, 12, -4, -4), order=(1,), instant_winner=1, tied=(0, 2, 3)))
    assert result.instant_winner == 1 and result.places() == [4, 1, 4, 4]
    result = FinishedGame.from_record(record(points=(4, -2, -2, 0), order=(0, 3, 1, 2), tied=(1, 2)))
    assert result.instant_winner is None and result.places() == [1, 4, 4, 2]


@pytest.mark.parametrize(("fields", "problem"), [
    ({"points": (1, 2, -1, -1)}, "not a zero-sum list"),
    ({"points": (1, -1)}, "not a zero-sum list per seat"),
    ({"order": (0, 0, 1, 2)}, "not a list of distinct seats"),
    ({"order": (0, 1, 2, 9)}, "not a list of distinct seats"),
    ({"replay_json": ""}, "carries no replay"),
    ({"schema": ""}, "no replay schema"),
    ({"timing": org.GameTiming(seats=[org.SeatTiming()] * 3)}, "timing totals name 3 seats for 4 players"),
])
def test_a_record_that_contradicts_itself_or_the_table_is_a_problem(fields, problem) -> None:
    assert problem in (FinishedGame.from_record(record(**fields)).problem(4) or "")


def test_the_worker_parses_no_json_of_a_record(monkeypatch) -> None:
    """The worker's CPU is the pipeline's bottleneck: everything it needs is typed."""
    monkeypatch.setattr(json, "loads", lambda *a, **k: pytest.fail("the worker parsed JSON"))
    result = FinishedGame.from_record(record("{not even JSON: the worker never looks}"))
    assert result.problem(4) is None and result.places() == [1, 2, 3, 4]


@pytest.mark.parametrize(("status", "completed"), [
    (org.TABLE_STATUS_COMPLETED, True), (org.TABLE_STATUS_ABORTED, False), (org.TABLE_STATUS_UNSPECIFIED, False),
])
def test_a_table_outcome_is_completed_only_when_the_referee_says_so(status, completed) -> None:
    outcome = TableOutcome.from_result(org.TableResult(
        status=status, next_game_index=3, detail="why", totals=[1, -1], forfeited=[1]))
    assert outcome == TableOutcome(completed=completed, next_game_index=3, detail="why", totals=[1, -1], forfeited=[1])


@pytest.mark.django_db
def test_the_stored_replay_and_timing_are_the_bytes_the_referee_sent(organiser, bots) -> None:
    tournament = running_round_robin(organiser, bots[:4], seats_per_table=4)
    table = tournament.tables.order_by("round", "number").first()
    made = make_result(0, [2, 0, 3, 1])
    text = made.replay_text.replace(",", ", ")  # still the same JSON, not as json.dumps writes it
    result = FinishedGame.from_record(org.GameRecord(
        game_index=0, seat_participants=[0, 1, 2, 3], replay_json=text, timing_json='{"moves": [ ]}',
        result=pb.GameResult(points=made.points, finishing_order=made.finishing_order), replay_schema=made.schema,
    ))
    game = table_game_record(table_id=table.pk, result=result)
    stored = Replay.objects.get(game=game)
    assert zlib.decompress(bytes(stored.data)).decode() == text
    assert zlib.decompress(bytes(stored.timing)).decode() == '{"moves": [ ]}'
    assert stored.raw_size == len(text.encode())


@pytest.mark.django_db
def test_a_game_whose_points_do_not_add_up_is_refused_after_the_good_ones(organiser, bots) -> None:
    tournament = running_round_robin(organiser, bots[:4], seats_per_table=4)
    table = tournament.tables.order_by("round", "number").first()
    good = make_result(0, [0, 1, 2, 3])
    lying = FinishedGame.from_record(org.GameRecord(
        game_index=1, seat_participants=[0, 1, 2, 3], replay_json=make_result(1, [0, 1, 2, 3]).replay_text,
        result=pb.GameResult(points=[-2, -1, 1, 3], finishing_order=[3, 2, 1, 0]), replay_schema="tienlen.replay/1",
    ))
    with pytest.raises(ValueError, match="game 1: points .* are not a zero-sum list"):
        table_games_record(table_id=table.pk, results=[good, lying])
    assert list(Game.objects.filter(table=table).values_list("index", flat=True)) == [0]


@pytest.mark.django_db
def test_games_that_arrived_before_a_broken_record_are_recorded(organiser, bots, monkeypatch) -> None:
    """The reader thread hands the task what arrived before an error, then the error."""
    from tournaments import tasks

    broken = FinishedGame.from_record(record(index=2, schema=""))  # as the real path reads it
    tournament = running_round_robin(organiser, bots[:4], seats_per_table=4)
    table = tournament.tables.order_by("round", "number").first()

    def referee(plan, **_):
        yield make_result(0, [0, 1, 2, 3])
        yield make_result(1, [1, 2, 3, 0])
        yield broken

    monkeypatch.setattr("tournaments.play.referee.referee_play_table", referee)
    assert tasks.table_play_task(table.pk) == "failed"
    table = Table.objects.get(pk=table.pk)
    assert table.status == "failed" and "game 2: it carries no replay" in table.last_error
    assert list(Game.objects.filter(table=table).values_list("index", flat=True)) == [0, 1]


def test_a_seat_clock_goes_on_its_seat_only() -> None:
    """A casual table's person (tournaments.play.casual): that seat's own clock; the others
    keep the table's."""
    request = plan(seat_clocks={1: (30_000, 60_000)}).request()
    assert request.seats[1].HasField("move_time_ms") and request.seats[1].move_time_ms == 30_000
    assert request.seats[1].time_bank_ms == 60_000
    assert not any(request.seats[i].HasField("move_time_ms") or request.seats[i].HasField("time_bank_ms")
                   for i in (0, 2))
    assert (request.move_time_ms, request.time_bank_ms) == (800, 9000)


@pytest.mark.django_db
def test_a_tournament_table_gives_every_seat_the_tournaments_clock(organiser, bots) -> None:
    """Tournament tables are as before the seat clocks: no seat has a clock of its own, so
    the referee gives each the tournament's move time and bank."""
    from tournaments.services.tables import table_plan

    tournament = running_round_robin(organiser, bots[:4], seats_per_table=4, move_time_ms=1500, time_bank_ms=4000)
    table = tournament.tables.get()
    request = table_plan(table_id=table.pk).request()
    assert len(request.seats) == 4
    assert not any(s.HasField("move_time_ms") or s.HasField("time_bank_ms") for s in request.seats)
    assert (request.move_time_ms, request.time_bank_ms) == (1500, 4000)
    from referee_service.spec import table_spec

    spec = table_spec(request, {"greedy", "random", "heuristic"})
    assert [(spec.move_time_of(i), spec.time_bank_of(i)) for i in range(4)] == [(1500, 4000)] * 4
