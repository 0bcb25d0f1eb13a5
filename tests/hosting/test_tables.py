"""Real tables against sandboxed bots: the project's referee plays a sandboxed Python SDK
bot and a sandboxed JavaScript bot (the example, on the Node runtime) through the relay,
with no strike and no fallback; and a pool of two referees, one of which dies mid-table:
the hosted bot, which has no network of its own, follows the pool through its relay
sockets and the table finishes on the other referee."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Iterator

import pytest

from bots_sdk.protocol.tienlen.v1 import organizer_pb2 as org
from referee_service.auth import BotIdentity, StaticTokenStore
from referee_service.organizer_client import OrganizerClient
from referee_service.pool import MemoryPoolRegistry
from referee_service.server import Referee, RefereeThread
from tournaments.hosting import BotSpec, ExitReason, Host
from tournaments.hosting.process import HostedBot

from .conftest import ORGANIZER, ROOT, TOKEN

pytestmark = pytest.mark.timeout(300)

PYTHON_BOT = '''
from bots_sdk import Bot


class Shedder(Bot):
    """The weakest legal play first; passes when it cannot play."""

    name = "shedder"

    def play(self, view):
        plays = view.legal_plays()
        if view.can_pass and view.offer:
            return view.pass_turn()
        return min(plays, key=lambda p: (max(p), -len(p))) if plays else view.pass_turn()
'''
JS_BOT = (ROOT / "bots_sdk" / "examples" / "javascript" / "bot.js").read_text()


def start_bot(host: Host, code, runtime: str, referees: list[str], **kw) -> HostedBot:
    folder = code(JS_BOT, name="bot.js") if runtime == "node20" else code(PYTHON_BOT)
    return host.start(BotSpec(runtime=runtime, code_dir=folder, token=TOKEN, referees=referees,
                              bot_version="s1", **kw))


def until_connected(bot: HostedBot, *targets: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    for target in targets:
        with OrganizerClient(target, ORGANIZER, timeout=30) as client:
            while "hosted" not in {b.bot_id for b in client.list_bots()}:
                if not bot.running or time.monotonic() > deadline:
                    end = bot.wait(0) or bot.stop(0)
                    pytest.fail(f"the hosted bot never reached {target}: {end.detail}\n{end.log[-3000:]}")
                time.sleep(0.05)


def my_moves(events, bot_id: str = "hosted") -> list[dict]:
    moves = []
    for event in events:
        if isinstance(event, org.GameRecord):
            seat = list(event.seat_participants).index(0)
            moves += [m for m in json.loads(event.timing_json)["moves"] if m["seat"] == seat]
    return moves


@pytest.mark.parametrize("runtime", ["python3.11", "node20"])
def test_the_referee_plays_sandboxed_bots_through_the_relay_without_a_strike(
        runtime, request, host, code, referee):
    request.getfixturevalue("node_runtime" if runtime == "node20" else "python_runtime")
    bot = start_bot(host, code, runtime, [referee.target], max_tables=2)
    try:
        until_connected(bot, referee.target)
        with OrganizerClient(referee.target, ORGANIZER, timeout=240) as client:
            listed = {b.bot_id: b for b in client.list_bots()}["hosted"]
            assert listed.bot_version == "s1"  # the version the platform gave it
            results: dict[str, list] = {}

            def play(table_id: str, seats: list[str]) -> None:
                with OrganizerClient(referee.target, ORGANIZER, timeout=240) as c:
                    results[table_id] = list(c.play_table(table_id=table_id, seats=seats, games=12))

            tables = [threading.Thread(target=play, args=(f"{runtime}-{n}", seats)) for n, seats in
                      enumerate([["hosted", "house:greedy", "house:random", "house:heuristic"],
                                 ["hosted", "house:heuristic"]])]
            for t in tables:  # two tables at once on one stream
                t.start()
            for t in tables:
                t.join(240)
        assert len(results) == 2
        moves = []
        for events in results.values():
            result = events[-1]
            assert result.status == org.TABLE_STATUS_COMPLETED and result.strikes[0] == 0
            assert not result.forfeited
            mine = my_moves(events)
            assert all(m["attempts"] == 1 and m["fallback"] is None for m in mine)
            moves += mine
        assert len(moves) > 100
        assert "connected to unix:/run/tienlen/referee/seed.sock" in bot.log.text()
    finally:
        end = bot.stop(grace_s=20)
    assert end.reason is ExitReason.STOPPED and end.exit_code == 0, end.log[-2000:]
    assert "0 rejected, 0 strikes" in end.log


def crash(thread: RefereeThread) -> None:
    """The referee dies as under SIGKILL: no leaving the pool, no TableEnd, streams cut."""
    referee = thread.referee
    assert referee is not None

    async def die(referee: Referee) -> None:
        assert referee.heartbeat is not None and referee.heartbeat._task is not None
        referee.heartbeat._task.cancel()
        # and its reporting thread, which a SIGKILL would take with the process (it would
        # otherwise wait here for work for as long as the test process lives)
        referee.heartbeat._executor.shutdown(wait=False)
        referee.heartbeat = None  # its stop() must not leave the pool for it
        assert referee.server is not None
        await referee.server.stop(None)
        for runner in list(referee.registry.tables.values()):
            runner.abort("crashed")

    asyncio.run_coroutine_threadsafe(die(referee), thread._loop).result(30)

def table_moves_off_a_crashed_referee(a: RefereeThread, b: RefereeThread) -> None:
    """A hosted bot (`hosted`, connected to both referees) plays table "moving" on `b`,
    which crashes after its first game; the platform's resume on `a` at the first
    unrecorded game completes the table with no strike and no fallback move."""
    first: list = []
    seen_game = threading.Event()

    def play_on_b() -> None:
        try:
            with OrganizerClient(b.target, ORGANIZER, timeout=120) as client:
                for event in client.play_table(table_id="moving", games=3, move_time_ms=5000,
                                               seats=["hosted", "house:greedy"]):
                    first.append(event)
                    if isinstance(event, org.GameRecord):
                        seen_game.set()
        except Exception as exc:
            first.append(exc)
        seen_game.set()

    player = threading.Thread(target=play_on_b)
    player.start()
    assert seen_game.wait(120), "game 1 on referee b never finished"
    crash(b)
    player.join(60)
    played = [e for e in first if isinstance(e, org.GameRecord)]
    assert played and not any(isinstance(e, org.TableResult) for e in first)
    # the platform resumes the table on the live referee at its first unrecorded game
    with OrganizerClient(a.target, ORGANIZER, timeout=120) as client:
        rest = list(client.play_table(table_id="moving", games=3, move_time_ms=5000,
                                      first_game_index=len(played),
                                      seats=["hosted", "house:greedy"]))
    result = rest[-1]
    assert result.status == org.TABLE_STATUS_COMPLETED
    assert result.games_played == 3 - len(played) and list(result.strikes) == [0, 0]
    assert all(m["fallback"] is None for m in my_moves(rest))



@pytest.fixture
def pool() -> Iterator[tuple[RefereeThread, RefereeThread]]:
    store = StaticTokenStore({TOKEN: BotIdentity("hosted", "Hosted bot")})
    registry = MemoryPoolRegistry(timeout_s=1.0)
    threads = [RefereeThread(store, organizer_token=ORGANIZER, pool=registry, pool_heartbeat_s=0.05)
               for _ in range(2)]
    for thread in threads:
        thread.start()
    try:
        yield threads[0], threads[1]
    finally:
        for thread in threads:
            thread.stop()


@pytest.mark.parametrize("runtime", ["python3.11", "node20"])
def test_a_hosted_bot_follows_the_pool_when_its_referee_dies_mid_table(runtime, request, host,
                                                                       code, pool):
    request.getfixturevalue("node_runtime" if runtime == "node20" else "python_runtime")
    a, b = pool
    bot = start_bot(host, code, runtime, [a.target, b.target], max_tables=2)
    try:
        until_connected(bot, a.target, b.target)  # one stream to each, from the one relay
        table_moves_off_a_crashed_referee(a, b)
        assert bot.running  # one process all along: it followed the pool, no restart
    finally:
        end = bot.stop(grace_s=0)
    log = end.log
    assert "moved" in log, log[-3000:]  # "table moving moved from referee ... to ..."
    # the pool's other referee was dialled at its relay socket, never at its TCP address
    assert f"at {b.target} through unix:/run/tienlen/referee/" in log or \
        f"at {a.target} through unix:/run/tienlen/referee/" in log, log[-3000:]
    assert end.relay is not None and end.relay.accepted >= 2
