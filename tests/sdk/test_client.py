"""The gRPC bot client against a real referee on a loopback port.

Each test starts the referee in-process (`running_referee`), connects the SDK's
`BotClient` over real gRPC, and has the organiser API play tables against house bots.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import re
import threading
import time
from typing import Any

import pytest

from bots_sdk import Bot
from bots_sdk.client import BotClient, ClientError
from referee_service.server import Referee

from .helpers import TOKEN, play_table, result_of

pytestmark = pytest.mark.timeout(120)


async def connected(bot_cls: type[Bot], referee: Referee, **kw: Any) -> tuple[BotClient, asyncio.Task]:
    kw.setdefault("backoff_initial_s", 0.05)
    client = BotClient(bot_cls, target=referee.target, token=TOKEN, **kw)
    task = asyncio.create_task(client.run())
    for _ in range(250):
        if client.connected is not None and client.connected.is_set():
            return client, task
        if task.done():
            await task
        await asyncio.sleep(0.02)
    raise AssertionError("client did not connect")


async def finish(client: BotClient, task: asyncio.Task, tables: int = 1) -> None:
    """Wait for the client to see its TableEnd messages (the organiser's stream may end
    first), then leave."""
    for _ in range(500):
        if client.stats.tables_done >= tables:
            break
        await asyncio.sleep(0.01)
    client.stop(force=True)
    await asyncio.wait_for(task, 10)


class Recorder(Bot):
    """An async bot recording its hooks; plays its weakest play."""

    events: list[tuple] = []

    async def on_table_start(self, table):
        self.events.append(("table_start", table.table_id, table.players, table.preset))

    def on_game_start(self, game):
        self.events.append(("game_start", game.game_index, len(game.hand)))

    async def play(self, view):
        await asyncio.sleep(0)
        assert view.time_left_ms and view.time_left_ms > 0
        plays = view.legal_plays()
        if view.can_pass and view.offer:
            return view.pass_turn()
        return min(plays, key=lambda p: (max(p), len(p))) if plays else view.pass_turn()

    def on_game_end(self, result):
        self.events.append(("game_end", result.game_index, result.my_points))

    def on_table_end(self, result):
        self.events.append(("table_end", result.games_played, result.totals))


async def test_an_async_bot_plays_a_whole_table_with_its_hooks(referee):
    Recorder.events = []
    client, task = await connected(Recorder, referee)
    events = await play_table(referee, "hooks", games=3)
    await finish(client, task)
    result = result_of(events)
    assert result.games_played == 3 and list(result.strikes) == [0, 0, 0, 0]
    kinds = [e[0] for e in Recorder.events]
    assert kinds == ["table_start"] + ["game_start", "game_end"] * 3 + ["table_end"]
    assert Recorder.events[0] == ("table_start", "hooks", 4, "south")
    assert Recorder.events[1] == ("game_start", 0, 13)
    my_points = sum(e[2] for e in Recorder.events if e[0] == "game_end")
    assert my_points == result.totals[0]
    assert client.stats.games_done == 3 and client.stats.rejected == 0


class Clumsy(Bot):
    """Raises on some moves, answers others with cards it does not hold."""

    def __init__(self):
        self.n = 0

    def play(self, view):
        self.n += 1
        if self.n % 4 == 1:
            raise KeyError("bug in my bot")
        if self.n % 4 == 2:
            missing = next(c for c in ("2H", "2D", "2C", "2S") if c not in map(str, view.hand))
            return [missing]
        plays = view.legal_plays()
        return plays[0] if plays else view.pass_turn()


async def test_bot_errors_are_logged_with_the_referees_reason_and_cost_no_strike(referee, caplog):
    caplog.set_level(logging.WARNING, logger="bots_sdk.client")
    client, task = await connected(Clumsy, referee)
    events = await play_table(referee, "clumsy", games=2)
    await finish(client, task)
    result = result_of(events)
    assert result.games_played == 2
    assert result.strikes[0] == 0 and not result.forfeited
    text = caplog.text
    assert "play() raised KeyError: 'bug in my bot' (at test_client.py:" in text
    assert "not in your hand (MOVE_ERROR_CODE_NOT_IN_HAND); sending the fallback" in text
    assert re.search(r"table clumsy, move \d+ of game [12]: ", text)
    assert client.stats.rejected > 0 and client.stats.fallbacks >= client.stats.rejected


class Broken(Bot):
    """Raises on every move, at the same line."""

    def play(self, view):
        raise ValueError("always broken")


LINE_OF_BROKEN = inspect.getsourcelines(Broken.play)[1] + 1  # the raise


async def test_a_raising_bot_shows_its_traceback_once_then_counts(referee, caplog):
    caplog.set_level(logging.INFO, logger="bots_sdk.client")
    client, task = await connected(Broken, referee)
    events = await play_table(referee, "broken", games=3)
    await finish(client, task)
    assert result_of(events).strikes[0] == 0  # the fallback went in time every move
    raised = [r for r in caplog.records if "play() raised ValueError" in r.getMessage()]
    failures = client.errors.counts[("play() raised ValueError", f"test_client.py:{LINE_OF_BROKEN}")]
    assert failures == client.stats.moves > 8
    first = raised[0]
    assert first.exc_info is not None  # the traceback: file and line of the bug
    assert re.match(r"table broken, move \d+ of game 1: play\(\) raised ValueError: always broken "
                    rf"\(at test_client.py:{LINE_OF_BROKEN}\)", first.getMessage())
    assert "raise ValueError" in caplog.text  # the traceback's source line, once
    assert caplog.text.count("Traceback") == 1
    repeats = raised[1:]
    assert [r.exc_info for r in repeats] == [None] * len(repeats)
    # counted, with a line at 2, 4, 8, ... times
    assert [int(re.search(r"\((\d+) times so far\)", r.getMessage())[1]) for r in repeats] == [
        2 ** k for k in range(1, failures.bit_length())]


class Sleepy(Bot):
    """Thinks far too long on its first move."""

    def __init__(self):
        self.first = True

    def play(self, view):
        if self.first:
            self.first = False
            time.sleep(2.0)
        plays = view.legal_plays()
        return plays[0] if plays else view.pass_turn()


async def test_a_slow_bot_answers_with_the_fallback_before_the_deadline(referee, caplog):
    caplog.set_level(logging.WARNING, logger="bots_sdk.client")
    client, task = await connected(Sleepy, referee)
    events = await play_table(referee, "sleepy", games=1, move_time_ms=1000, time_bank_ms=0)
    await finish(client, task)
    assert result_of(events).strikes[0] == 0
    assert "play() took longer than the 99" in caplog.text or "longer than the 1000 ms" in caplog.text
    assert "ms left; sending the fallback" in caplog.text
    # The hung first call does not make the following moves late too.
    assert caplog.text.count("took longer than") == 1


class WhereItRuns(Bot):
    """Records which thread each play() ran on."""

    threads: list[str] = []

    def play(self, view):
        type(self).threads.append(threading.current_thread().name)
        plays = view.legal_plays()
        return plays[0] if plays else view.pass_turn()


class OnTheLoop(WhereItRuns):
    threads: list[str] = []
    threaded = False


@pytest.mark.parametrize(("bot_cls", "in_worker"), [(WhereItRuns, True), (OnTheLoop, False)])
async def test_a_plain_play_runs_in_a_worker_thread_unless_the_bot_opts_out(
        referee, bot_cls, in_worker):
    bot_cls.threads = []
    client, task = await connected(bot_cls, referee)
    events = await play_table(referee, f"where-{in_worker}", games=1)
    await finish(client, task)
    assert result_of(events).strikes[0] == 0 and bot_cls.threads
    loop_thread = threading.current_thread().name
    assert all((name != loop_thread) == in_worker for name in bot_cls.threads), bot_cls.threads


def test_the_example_bots_play_on_the_event_loop():
    """They answer in well under a millisecond; a thread hop per move would cost more."""
    from bots_sdk.examples.greedy import GreedyBot
    from bots_sdk.examples.heuristic import HeuristicBot
    from bots_sdk.examples.random_bot import RandomBot

    assert not any(b.threaded for b in (GreedyBot, HeuristicBot, RandomBot))
    assert Bot.threaded


async def test_a_refused_token_is_a_clear_error(referee):
    client = BotClient(Recorder, target=referee.target, token="wrong-token")
    with pytest.raises(ClientError, match="UNAUTHENTICATED"):
        await asyncio.wait_for(client.run(), 10)


async def test_unreachable_referee_gives_up_after_the_allowed_attempts():
    client = BotClient(
        Recorder, target="127.0.0.1:1", token=TOKEN, backoff_initial_s=0.01, max_connect_attempts=2,
        retry_first_connection=True,
    )
    with pytest.raises(ClientError, match="after 2 attempts"):
        await asyncio.wait_for(client.run(), 20)


async def test_a_first_connection_that_cannot_work_fails_at_once():
    client = BotClient(Recorder, target="127.0.0.1:1", token=TOKEN, backoff_initial_s=0.01)
    started = time.monotonic()
    with pytest.raises(ClientError) as refused:
        await asyncio.wait_for(client.run(), 20)
    assert str(refused.value) == (
        "cannot connect to the referee at 127.0.0.1:1: nothing accepts connections there "
        "(connection refused); check the host and port"
    )
    assert time.monotonic() - started < 5 and client.stats.reconnects == 0


async def test_after_a_connection_that_worked_the_client_keeps_retrying():
    """The referee goes away (a restart): the bot waits for it instead of giving up."""
    from referee_service.auth import BotIdentity, StaticTokenStore
    from referee_service.server import Referee, RefereeConfig

    from .helpers import ORGANIZER

    store = StaticTokenStore({TOKEN: BotIdentity("sdk-bot", "SDK bot")})
    port = free_port()

    async def start() -> Referee:
        referee = Referee(RefereeConfig(listen=f"127.0.0.1:{port}", organizer_token=ORGANIZER), store)
        await referee.start()
        return referee

    referee = await start()
    client, task = await connected(Recorder, referee)
    await referee.stop(grace=0)
    while client.stats.reconnects < 2:  # retrying, with backoff
        assert not task.done(), task
        await asyncio.sleep(0.02)
    referee = await start()  # back on the same address
    while not (client.connected.is_set() and client.welcome.session_id):
        await asyncio.sleep(0.02)
    events = await play_table(referee, "after-restart", games=1)
    assert result_of(events).games_played == 1
    await finish(client, task)
    await referee.stop(grace=0)


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Counter(Bot):
    moves = 0

    def play(self, view):
        Counter.moves += 1
        plays = view.legal_plays()
        return plays[0] if plays else view.pass_turn()


async def test_the_client_reconnects_and_the_referee_resumes_its_seat(referee):
    Counter.moves = 0
    client, task = await connected(Counter, referee)
    table = asyncio.create_task(play_table(referee, "resume", games=2))
    while Counter.moves < 3:
        await asyncio.sleep(0.01)
    client._call.cancel()  # the connection drops mid-table
    events = await asyncio.wait_for(table, 60)
    await finish(client, task)
    result = result_of(events)
    assert result.games_played == 2 and not result.forfeited
    assert client.stats.reconnects >= 1
    assert client.stats.tables_done == 1


async def test_stop_finishes_the_running_table_then_leaves(referee):
    Counter.moves = 0
    client, task = await connected(Counter, referee)
    table = asyncio.create_task(play_table(referee, "graceful", games=3))
    while Counter.moves < 2:
        await asyncio.sleep(0.01)
    client.stop()  # what Ctrl-C does
    await asyncio.wait_for(task, 60)  # run() returns once the table is over
    result = result_of(await table)
    assert result.games_played == 3 and list(result.strikes) == [0, 0, 0, 0]
    assert client.stats.tables_done == 1


async def test_several_tables_at_once_up_to_the_declared_concurrency(referee):
    client, task = await connected(Counter, referee, max_tables=3)
    assert client.welcome.max_tables == 3
    results = await asyncio.gather(
        *(play_table(referee, f"many-{i}", games=2, house=("random",)) for i in range(3))
    )
    await finish(client, task, tables=3)
    for events in results:
        res = result_of(events)
        assert res.games_played == 2 and res.strikes[0] == 0
    assert client.stats.tables_done == 3


class Blocker(Bot):
    """An async bot that blocks the event loop on its first move: nothing can answer in
    time, so the referee plays the fallback and records a strike."""

    def __init__(self):
        self.first = True

    async def play(self, view):
        if self.first:
            self.first = False
            time.sleep(0.8)  # wrong in async code, on purpose
            # The test's referee shares this event loop, so the block froze its clock too:
            # let it see its move timer expire before the late answer goes out.
            await asyncio.sleep(0.05)
        plays = view.legal_plays()
        return plays[0] if plays else view.pass_turn()


async def test_strikes_are_logged_for_the_author(referee, caplog):
    caplog.set_level(logging.WARNING, logger="bots_sdk.client")
    client, task = await connected(Blocker, referee)
    events = await play_table(referee, "strike", games=1, move_time_ms=300, time_bank_ms=0)
    await finish(client, task)
    assert result_of(events).strikes[0] == 1
    assert re.search(r"STRIKE 1/3, table strike, move \d+ of game 1: ", caplog.text)
    assert "STRIKE_REASON_TIMEOUT" in caplog.text
    assert client.stats.strikes == 1
