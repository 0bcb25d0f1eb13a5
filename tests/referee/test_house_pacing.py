"""Where the referee paces its house bots, and where it must not.

Pacing costs time, so it applies only while someone can observe it: a remote seat still
playing. A table of house bots only (the benchmarks, the demo's house tables) keeps its
full speed, and so does a table whose last remote seat has forfeited. Every hold goes
through the one release clock (bots_sdk.pacing), which the tests count; the statistical
test that the holds hide the hands is tests/referee/test_house_timing.py.
"""

from __future__ import annotations

import asyncio
import json
import random
import threading
import time
from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bots_sdk.pacing import RELEASE_CLOCK
from bots_sdk.rules import Game
from referee_service.house import HousePacer
from referee_service.server import Referee

from .harness import games_of, play_table, result_of, start_bots


@pytest.fixture
def holds(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[float]]:
    """The release times of every hold made while the test runs."""
    made: list[float] = []
    real = RELEASE_CLOCK.until

    async def counting(when: float) -> None:
        made.append(when)
        await real(when)

    monkeypatch.setattr(RELEASE_CLOCK, "until", counting)
    yield made


def house_moves(records) -> list[dict]:
    return [m for r in records for m in json.loads(r.timing_json)["moves"] if m["house"]]


async def test_a_table_of_house_bots_only_is_never_held(referee: Referee, holds) -> None:
    events = await play_table(referee.target, table_id="house-only", games=4, seed="ho",
                              seats=["house:heuristic", "house:random", "house:greedy",
                                     "house:search"])
    assert result_of(events).games_played == 4
    assert house_moves(games_of(events)) and holds == []


async def test_every_house_decision_is_held_while_a_remote_seat_plays(
        referee: Referee, holds) -> None:
    bots = await start_bots(referee.target, ["alice"])
    events = await play_table(referee.target, table_id="mixed", games=3, seed="mx",
                              seats=["alice", "house:random", "house:greedy",
                                     "house:heuristic"])
    await bots[0].close()
    moves = house_moves(games_of(events))
    # a house decision may finish after its pace (then it is not held): on a loaded
    # machine, rarely; never most of them
    assert len(moves) / 2 < len(holds) <= len(moves)


async def test_once_the_last_remote_seat_forfeits_the_house_seats_play_at_full_speed(
        referee: Referee, holds) -> None:
    silent = await start_bots(referee.target, ["alice"], policy=lambda request, bot: None)
    events = await play_table(referee.target, table_id="forfeit", games=3, seed="ff",
                              seats=["alice", "house:random", "house:greedy",
                                     "house:heuristic"],
                              move_time_ms=50, time_bank_ms=0, max_strikes=1)
    await silent[0].close()
    result = result_of(events)
    assert list(result.forfeited) == [0] and result.games_played == 3
    records = games_of(events)
    # the house decisions before alice's first (forfeiting) move are the only ones held
    first = json.loads(records[0].timing_json)["moves"]
    before = next(i for i, m in enumerate(first) if not m["house"])
    assert len(holds) <= before
    assert len(house_moves(records)) > 3 * before  # ... and most of the table played on


def declined_offer_position() -> Game:
    """A real south_extended game at an out-of-turn chop offer (found by random play)."""
    for g in range(200):
        rng = random.Random(g)
        game = Game.from_seed(f"offer-{g}", 4, preset="south_extended")
        while not game.is_over:
            if game.offer is not None:
                return game
            plays = game.legal_plays()
            if plays and (not game.view(game.to_move).can_pass or rng.random() < 0.7):
                game.play(list(plays[rng.randrange(len(plays))]))
            else:
                game.pass_turn()
    raise AssertionError("no offer in 200 games")


async def test_a_declined_offer_adds_no_hold_and_the_next_pace_counts_from_it() -> None:
    """A declined offer is in no seat's history: a hold of its own would show that a
    house seat was offered (so held a chop). It is released at once, and the next house
    decision's pace counts from the offer's start, so the seats see one decision's time."""
    pace = 0.05
    for move_between in (False, True):
        game = declined_offer_position()
        pacer = HousePacer()
        since = pacer.begin(game)
        game.pass_turn()  # declines the offer
        hold = pacer.hold(game, since, pace, declined_offer=True)
        with pytest.raises(StopIteration):  # finished without waiting for anything
            hold.send(None)
        if not move_between:
            assert pacer.begin(game) == since  # the next decision counts from the offer
            await pacer.hold(game, since, pace, declined_offer=False)
            assert time.monotonic() >= since + pace
        else:  # a remote seat (say) moved between: its request ended the gap
            plays = game.legal_plays()
            game.play(list(plays[0])) if plays else game.pass_turn()
            assert pacer.begin(game) > since


async def test_the_release_clock_never_releases_early_and_stops_cleanly() -> None:
    start = time.monotonic()
    for delay in (0.03, 0.01, 0.02, 0.0, -1.0):  # out of order, one already past
        when = start + delay
        await RELEASE_CLOCK.until(when)
        assert time.monotonic() >= when
    RELEASE_CLOCK.stop(wait_s=5)
    assert RELEASE_CLOCK._thread is None  # no thread left behind
    await RELEASE_CLOCK.until(time.monotonic() + 0.005)  # and it starts again
    RELEASE_CLOCK.stop(wait_s=5)
    assert not any(t.name == "release-clock" for t in threading.enumerate())


@settings(max_examples=25, deadline=None)
@given(st.lists(st.floats(min_value=-0.01, max_value=0.02), min_size=1, max_size=12))
def test_concurrent_holds_each_end_at_or_after_their_time(delays: list[float]) -> None:
    """Holds of many tables at once, in any order: none is released early."""

    async def main() -> list[tuple[float, float]]:
        start = time.monotonic()

        async def one(delay: float) -> tuple[float, float]:
            await RELEASE_CLOCK.until(start + delay)
            return start + delay, time.monotonic()

        return await asyncio.gather(*(one(d) for d in delays))

    for when, released in asyncio.run(main()):
        assert released >= when
