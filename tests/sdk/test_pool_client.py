"""The SDK client on a pool of referees: given one address, it keeps a stream to every
live referee, follows referees joining, leaving and dying, moves a table with its bot to
the referee that resumes it, and shares its table capacity between the referees.

Real referees on loopback ports (one process, one in-memory pool registry), the real
client over gRPC, tables played through the organiser API.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import grpc
import pytest

from bots_sdk import Bot
from bots_sdk.client import BotClient
from referee_service.auth import BotIdentity, StaticTokenStore
from referee_service.pool import MemoryPoolRegistry
from referee_service.server import Referee, running_referee
from tests.waits import within

from .helpers import ORGANIZER, TOKEN, play_table, result_of

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def store() -> StaticTokenStore:
    return StaticTokenStore({TOKEN: BotIdentity("sdk-bot", "SDK bot")})


@contextlib.asynccontextmanager
async def pool_referee(store: StaticTokenStore, pool: MemoryPoolRegistry) -> AsyncIterator[Referee]:
    async with running_referee(store, organizer_token=ORGANIZER, pool=pool,
                               pool_heartbeat_s=0.05) as referee:
        yield referee


async def crash(referee: Referee) -> None:
    """The referee dies (as under SIGKILL): no leaving the pool, no TableEnd, streams cut."""
    assert referee.heartbeat is not None and referee.heartbeat._task is not None
    referee.heartbeat._task.cancel()
    # and its reporting thread, which a SIGKILL would take with the process (it would
    # otherwise wait here for work for as long as the test process lives)
    referee.heartbeat._executor.shutdown(wait=False)
    referee.heartbeat = None  # stop() must not leave the pool for it
    assert referee.server is not None
    await referee.server.stop(None)
    for runner in list(referee.registry.tables.values()):
        runner.abort("crashed")


def linked(client: BotClient) -> set[str]:
    return {link.referee_id for link in client.links if link.connected.is_set()}


async def until(predicate, timeout: float = 15.0, what: str = "") -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not predicate():
        assert loop.time() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.02)


class Player(Bot):
    """Plays its weakest play; remembers which instance played which game of which table."""

    played: list[tuple[int, str, int]] = []
    tables_started: list[str] = []
    delay_s = 0.0

    def on_table_start(self, table):
        Player.tables_started.append(table.table_id)

    async def play(self, view):
        if Player.delay_s:
            await asyncio.sleep(Player.delay_s)
        Player.played.append((id(self), view.table_id, view.game_index))
        plays = view.legal_plays()
        if view.can_pass and view.offer:
            return view.pass_turn()
        return min(plays, key=lambda p: (max(p), len(p))) if plays else view.pass_turn()


@pytest.fixture(autouse=True)
def fresh_player():
    Player.played, Player.tables_started, Player.delay_s = [], [], 0.0


async def start_client(target: str, **kw: Any) -> tuple[BotClient, asyncio.Task]:
    client = BotClient(Player, target=target, token=TOKEN, backoff_initial_s=0.05,
                       backoff_max_s=0.2, **kw)
    task = asyncio.create_task(client.run())
    return client, task


async def test_one_address_reaches_every_referee_and_follows_the_pool(store):
    pool = MemoryPoolRegistry(timeout_s=1.0)
    async with pool_referee(store, pool) as a, pool_referee(store, pool) as b, \
            pool_referee(store, pool) as c:
        client, task = await start_client(a.target, max_tables=3)
        await until(lambda: linked(client) == {a.referee_id, b.referee_id, c.referee_id},
                    what="streams to the three referees")
        results = await within(asyncio.gather(*(play_table(r, f"each-{i}", games=1)
                                                for i, r in enumerate((a, b, c)))),
                               "a table on each of the three referees")
        assert [result_of(e).games_played for e in results] == [1, 1, 1]
        assert all(list(result_of(e).strikes) == [0, 0, 0, 0] for e in results)

        await within(c.stop(grace=0), "referee c to stop")  # leaves the pool: stream let go
        await until(lambda: linked(client) == {a.referee_id, b.referee_id}, what="c dropped")
        await until(lambda: len(client.links) == 2, what="c's stream closed for good")
        async with pool_referee(store, pool) as d:  # a new referee joins: found, played on
            await until(lambda: d.referee_id in linked(client), what="d found")
            events = await within(play_table(d, "on-d", games=1), "the table on d")
            assert result_of(events).games_played == 1
        await until(lambda: d.referee_id not in linked(client), what="d dropped")
        assert not task.done()  # one process all along, never restarted
        client.stop(force=True)
        await within(task, "the client to stop", 10)
    assert client.stats.tables_done == 4


async def test_a_table_whose_referee_dies_moves_on_with_its_bot(store):
    pool = MemoryPoolRegistry(timeout_s=0.5)
    async with pool_referee(store, pool) as a, pool_referee(store, pool) as b:
        client, task = await start_client(a.target, max_tables=2)
        await until(lambda: linked(client) == {a.referee_id, b.referee_id}, what="both")
        table = asyncio.create_task(play_table(b, "moving", games=3, move_time_ms=5000))
        await until(lambda: any(g == 1 for _, t, g in Player.played), what="game 1 on b")
        await crash(b)
        with contextlib.suppress(grpc.aio.AioRpcError):
            await within(table, "the organiser's call to the crashed referee to end")
        # the platform resumes the table on a live referee at its first unrecorded game
        events = await within(play_table(a, "moving", games=3, first_game_index=1),
                              "the table resumed on a")
        result = result_of(events)
        assert result.games_played == 2 and list(result.strikes) == [0, 0, 0, 0]
        instances = {i for i, t, _ in Player.played if t == "moving"}
        assert len(instances) == 1  # the same bot played the whole table
        assert Player.tables_started == ["moving"]  # started once, moved, not restarted
        await until(lambda: "moving" not in client.tables, what="the table to end")
        await until(lambda: linked(client) == {a.referee_id} and len(client.links) == 1,
                    what="the dead referee dropped")
        client.stop(force=True)
        await within(task, "the client to stop", 10)


async def test_a_referee_that_leaves_the_pool_before_closing_its_streams_is_dropped(store):
    """A graceful stop leaves the pool first (the other referees announce it), then closes
    the bot streams. The client's pool is the union of what its connected referees list, and
    the leaving referee's own list still names itself until its stream closes, so the
    client must take the union again when that stream goes, or it would reconnect to a
    referee that left for ever (seen: 'c's stream closed for good' timed out under load)."""
    pool = MemoryPoolRegistry(timeout_s=5.0)
    async with pool_referee(store, pool) as a, pool_referee(store, pool) as b, \
            pool_referee(store, pool) as c:
        client, task = await start_client(a.target, max_tables=1)
        await until(lambda: linked(client) == {a.referee_id, b.referee_id, c.referee_id},
                    what="streams to the three referees")
        assert c.heartbeat is not None
        await within(c.heartbeat.stop(c.referee_id), "c to leave the pool")
        c.heartbeat = None
        others = [link for link in client.links if link.referee_id in (a.referee_id, b.referee_id)]
        await until(lambda: all(link.view and c.referee_id not in dict(link.view)
                                for link in others), what="a and b to announce c's leaving")
        await within(c.stop(grace=0), "referee c to stop")
        await until(lambda: linked(client) == {a.referee_id, b.referee_id}
                    and len(client.links) == 2, timeout=5, what="c's stream given up")
        client.stop(force=True)
        await within(task, "the client to stop", 10)


@pytest.mark.parametrize("leaves", ["stops", "crashes"])
async def test_after_a_referee_goes_with_tables_in_flight_a_new_one_gets_every_slot(store, leaves):
    """The tables in flight on a referee that stops (grace 0) or dies are given up by the
    client, so a referee joining later gets all of the process's max_tables: the bot does
    not silently stop playing after its pool changes."""
    pool = MemoryPoolRegistry(timeout_s=0.5)
    async with pool_referee(store, pool) as a, pool_referee(store, pool) as b:
        client, task = await start_client(a.target, max_tables=2)
        await until(lambda: linked(client) == {a.referee_id, b.referee_id}, what="both")
        Player.delay_s = 0.02
        in_flight = [asyncio.create_task(play_table(b, f"gone-{i}", games=50)) for i in range(2)]
        await until(lambda: {"gone-0", "gone-1"} <= set(client.tables), what="two tables on b")
        if leaves == "stops":
            await within(b.stop(grace=0), "referee b to stop")
        else:
            await crash(b)
        for call in in_flight:
            with contextlib.suppress(grpc.aio.AioRpcError):
                await within(call, "the organiser's call to b to end")
        await until(lambda: not client.tables, what="the client to give up b's tables")
        Player.delay_s = 0.0
        async with pool_referee(store, pool) as d:
            await until(lambda: d.referee_id in linked(client), what="d found")
            results = await within(
                asyncio.gather(*(play_table(d, f"on-d-{i}", games=1) for i in range(2))),
                "both tables on the new referee d (the client's whole capacity)")
            assert [result_of(e).games_played for e in results] == [1, 1]
            assert all(list(result_of(e).strikes) == [0, 0, 0, 0] for e in results)
        client.stop(force=True)
        await within(task, "the client to stop", 10)


async def test_the_tables_the_process_takes_stay_within_max_tables(store):
    pool = MemoryPoolRegistry(timeout_s=1.0)
    async with pool_referee(store, pool) as a, pool_referee(store, pool) as b:
        client, task = await start_client(a.target, max_tables=1)
        await until(lambda: linked(client) == {a.referee_id, b.referee_id}, what="both")
        Player.delay_s = 0.05
        busy = asyncio.create_task(within(play_table(a, "first", games=2), "the first table"))
        await until(lambda: "first" in client.tables, what="the first table")
        # b was told the process is full: it cannot seat the bot now
        # (a heartbeat may not have reported the bot yet: a referee without it is not done)
        await until(lambda: {r.referee_id: getattr(r.bots.get("sdk-bot"), "free", None)
                             for r in pool.live()}
                    == {a.referee_id: 0, b.referee_id: 0}, what="no free slot anywhere")
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await within(play_table(b, "second", games=1, connect_deadline_ms=300),
                         "b to refuse the second table")
        assert "no free table slot: sdk-bot" in refused.value.details()
        assert result_of(await busy).games_played == 2
        # once the first table is over, b may seat it again
        events = await within(play_table(b, "third", games=1), "the third table")
        assert result_of(events).games_played == 1
        client.stop(force=True)
        await within(task, "the client to stop", 10)


async def test_a_client_told_not_to_follow_the_pool_stays_on_its_referee(store):
    pool = MemoryPoolRegistry(timeout_s=1.0)
    async with pool_referee(store, pool) as a, pool_referee(store, pool):
        client, task = await start_client(a.target, follow_pool=False)
        await until(lambda: linked(client) == {a.referee_id}, what="a")
        await asyncio.sleep(0.3)
        assert len(client.links) == 1
        client.stop(force=True)
        await within(task, "the client to stop", 10)
