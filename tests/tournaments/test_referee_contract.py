"""The typed contract from the referee to the worker (tournaments.referee): the request
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
from tournaments.referee import GameResult, TableOutcome, TablePlan
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


def record(replay_json: str, *, points=(2, 1, -1, -2), order=(0, 1, 2, 3), timing_json: str = "",
           instant_winner: int | None = None, index: int = 0) -> org.GameRecord:
    return org.GameRecord(
        game_index=index, seat_participants=[0, 1, 2, 3], replay_json=replay_json, timing_json=timing_json,
        result=pb.GameResult(points=points, finishing_order=order, instant_winner=instant_winner),
    )


def test_a_record_is_read_once_and_its_json_kept_as_it_came() -> None:
    # Spacing and escapes that re-encoding would change: the stored bytes are the referee's.
    replay_json = '{ "schema": "tienlen.replay/1",\n "seed": "s\\u00e9", "result": {"points": [2, 1, -1, -2], "finishing_order": [0, 1, 2, 3], "tied": []} }'
    timing_json = '{"schema": "tienlen.timing/1", "moves": [ {"seat": 1, "elapsed_ms": 2.5} ]}'
    result = GameResult.from_record(record(replay_json, timing_json=timing_json))
    assert result.replay_text == replay_json and result.timing_text == timing_json
    assert result.points == [2, 1, -1, -2] and result.finishing_order == [0, 1, 2, 3]
    assert result.schema == "tienlen.replay/1" and result.replay["seed"] == "sé"
    assert result.places() == [1, 2, 3, 4] and result.problem(4) is None


def test_places_share_last_after_an_instant_win_and_when_the_replay_says_tied() -> None:
    instant = {"result": {"points": [-4, 12, -4, -4], "finishing_order": [1], "tied": [0, 2, 3]}}
    result = GameResult.from_record(record(json.dumps(instant), points=(-4, 12, -4, -4), order=(1,), instant_winner=1))
    assert result.instant_winner == 1 and result.places() == [4, 1, 4, 4]
    tied = {"result": {"points": [4, -2, -2, 0], "finishing_order": [0, 3, 1, 2], "tied": [1, 2]}}
    result = GameResult.from_record(record(json.dumps(tied), points=(4, -2, -2, 0), order=(0, 3, 1, 2)))
    assert result.instant_winner is None and result.places() == [1, 4, 4, 2]


def test_a_replay_that_disagrees_with_the_reported_points_is_a_problem() -> None:
    replay = {"result": {"points": [2, 1, -1, -2], "finishing_order": [0, 1, 2, 3]}}
    result = GameResult.from_record(record(json.dumps(replay), points=(1, 2, -1, -2)))
    assert result.points == [1, 2, -1, -2]  # the protobuf result is the one source
    assert "differs from the result the referee reported" in result.problem(4)


def test_a_record_whose_json_does_not_parse_raises_a_clear_error() -> None:
    with pytest.raises(ValueError, match="game 3: its replay or timing is not JSON"):
        GameResult.from_record(record("{not json", index=3))
    with pytest.raises(ValueError, match="must be JSON objects"):
        GameResult.from_record(record("[1, 2]"))


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
    result = GameResult.from_record(org.GameRecord(
        game_index=0, seat_participants=[0, 1, 2, 3], replay_json=text, timing_json='{"moves": [ ]}',
        result=pb.GameResult(points=made.points, finishing_order=made.finishing_order),
    ))
    game = table_game_record(table_id=table.pk, result=result)
    stored = Replay.objects.get(game=game)
    assert zlib.decompress(bytes(stored.data)).decode() == text
    assert zlib.decompress(bytes(stored.timing)).decode() == '{"moves": [ ]}'
    assert stored.raw_size == len(text.encode())


@pytest.mark.django_db
def test_a_game_whose_replay_contradicts_its_points_is_refused(organiser, bots) -> None:
    tournament = running_round_robin(organiser, bots[:4], seats_per_table=4)
    table = tournament.tables.order_by("round", "number").first()
    good = make_result(0, [0, 1, 2, 3])
    lying = GameResult.from_record(org.GameRecord(
        game_index=1, seat_participants=[0, 1, 2, 3], replay_json=make_result(1, [0, 1, 2, 3]).replay_text,
        result=pb.GameResult(points=[-2, -1, 1, 2], finishing_order=[3, 2, 1, 0]),
    ))
    with pytest.raises(ValueError, match="game 1: its replay's result differs"):
        table_games_record(table_id=table.pk, results=[good, lying])
    assert list(Game.objects.filter(table=table).values_list("index", flat=True)) == [0]


@pytest.mark.django_db
def test_games_that_arrived_before_a_broken_record_are_recorded(organiser, bots, monkeypatch) -> None:
    """The reader thread hands the task what arrived before an error, then the error."""
    from tournaments import tasks

    tournament = running_round_robin(organiser, bots[:4], seats_per_table=4)
    table = tournament.tables.order_by("round", "number").first()

    def referee(plan, **_):
        yield make_result(0, [0, 1, 2, 3])
        yield make_result(1, [1, 2, 3, 0])
        GameResult.from_record(record("{truncated", index=2))  # raises, as the real path does

    monkeypatch.setattr(tasks, "referee_play_table", referee)
    assert tasks.table_play_task(table.pk) == "failed"
    table = Table.objects.get(pk=table.pk)
    assert table.status == "failed" and "game 2: its replay or timing is not JSON" in table.last_error
    assert list(Game.objects.filter(table=table).values_list("index", flat=True)) == [0, 1]
