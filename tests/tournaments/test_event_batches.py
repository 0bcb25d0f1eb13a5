"""The recorder's batches: games that arrive close together are recorded in one transaction
(a batch costs about the queries of one game), games far apart are not held back."""

from __future__ import annotations

import time
from types import SimpleNamespace

from tournaments.play import stream


def _stream(gaps_s: list[float]):
    def play(plan, target=None):
        for i, gap in enumerate(gaps_s):
            time.sleep(gap)
            yield f"game {i}"
        yield "outcome"
    return play


def _batches(monkeypatch, gaps_s: list[float]) -> list[list]:
    monkeypatch.setattr("tournaments.play.referee.referee_play_table", _stream(gaps_s))
    return list(stream.event_batches(SimpleNamespace(table_id=1)))


def test_a_tables_games_arriving_within_milliseconds_are_recorded_together(monkeypatch) -> None:
    monkeypatch.setattr(stream, "BATCH_WINDOW_S", 0.5)  # the 100 ms default, with room for a loaded machine
    batches = _batches(monkeypatch, [0.0, 0.002, 0.002, 0.002])
    assert batches == [["game 0", "game 1", "game 2", "game 3", "outcome"]]


def test_a_game_is_not_held_back_waiting_for_a_slow_next_one(monkeypatch) -> None:
    batches = _batches(monkeypatch, [0.0, 0.6])
    assert batches[0] == ["game 0"]  # recorded ~100 ms after it arrived, not with the next
    assert [item for batch in batches for item in batch] == ["game 0", "game 1", "outcome"]


def test_an_error_ends_the_batch_after_the_games_before_it(monkeypatch) -> None:
    def play(plan, target=None):
        yield "game 0"
        raise RuntimeError("stream broke")

    monkeypatch.setattr("tournaments.play.referee.referee_play_table", play)
    seen = []
    try:
        for batch in stream.event_batches(SimpleNamespace(table_id=1)):
            seen.append(batch)
    except RuntimeError as exc:
        assert "stream broke" in str(exc)
    else:
        raise AssertionError("the stream's error was not raised")
    assert seen == [["game 0"]]
