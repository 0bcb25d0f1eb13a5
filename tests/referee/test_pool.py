"""Referee pools on the referee side: registration, the RefereePool message bots get, the
Capacity message, the referee's own capacity, and a registry that fails.

Real referees on loopback ports sharing one in-memory registry, with raw protocol bots.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator

import grpc
import pytest

from bots_sdk.protocol.tienlen.v1 import bot_gateway_pb2 as gw
from referee_service.auth import StaticTokenStore
from referee_service.pool import (
    MemoryPoolRegistry,
    PoolHeartbeat,
    RefereeReport,
    load_pool_registry,
)
from referee_service.server import Referee, running_referee

from .harness import ORGANIZER_TOKEN, RawBot, play_table, result_of

pytestmark = pytest.mark.timeout(60)


@contextlib.asynccontextmanager
async def pool_referee(store: StaticTokenStore, pool: MemoryPoolRegistry,
                       **config: object) -> AsyncIterator[Referee]:
    async with running_referee(store, organizer_token=ORGANIZER_TOKEN, pool=pool,
                               pool_heartbeat_s=0.05, **config) as referee:
        yield referee


def pools(bot: RawBot) -> list[list[tuple[str, str]]]:
    return [[(r.referee_id, r.address) for r in p.referees] for p in bot.of_kind("pool")]


async def until(predicate, timeout: float = 10.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not predicate():
        assert loop.time() < deadline, "timed out"
        await asyncio.sleep(0.02)


async def test_a_bot_learns_every_referee_of_the_pool_and_each_change(token_store):
    pool = MemoryPoolRegistry(timeout_s=1.0)
    async with pool_referee(token_store, pool) as a, pool_referee(token_store, pool) as b:
        bot = await RawBot(a.target, "alice").start().connected()
        assert bot.of_kind("welcome")[0].referee_id == a.referee_id
        # the pool comes right after the Welcome (once both referees have reported)
        await until(lambda: pools(bot) and len(pools(bot)[-1]) == 2)
        assert bot.received[1].WhichOneof("body") == "pool"
        assert dict(pools(bot)[-1]) == {a.referee_id: a.target, b.referee_id: b.target}
        async with pool_referee(token_store, pool) as c:
            await until(lambda: c.referee_id in dict(pools(bot)[-1]))
            assert dict(pools(bot)[-1])[c.referee_id] == c.target
        # a graceful stop leaves the pool at once: no timeout to wait for
        await until(lambda: c.referee_id not in dict(pools(bot)[-1]), timeout=0.9)
        assert [x for x, _ in pools(bot)[-1]] == sorted([a.referee_id, b.referee_id])
        await bot.close()


async def test_a_silent_referee_drops_out_after_the_timeout(token_store):
    pool = MemoryPoolRegistry(timeout_s=0.5)
    async with pool_referee(token_store, pool) as a, pool_referee(token_store, pool) as b:
        bot = await RawBot(a.target, "alice").start().connected()
        await until(lambda: pools(bot) and len(pools(bot)[-1]) == 2)
        assert b.heartbeat is not None and b.heartbeat._task is not None
        b.heartbeat._task.cancel()  # b stops reporting without leaving (as if it hung)
        await until(lambda: len(pools(bot)[-1]) == 1, timeout=3)
        assert pools(bot)[-1] == [(a.referee_id, a.target)]
        await bot.close()


def _report(referee_id: str) -> RefereeReport:
    return RefereeReport(referee_id=referee_id, address="127.0.0.1:1", capacity=1,
                         active_tables=0, bots={}, started_at=0.0)


async def test_a_heartbeat_stopped_as_a_bot_connects_stops_and_leaves_the_pool():
    """The referee's heartbeat is woken on every bot connect, disconnect and table change.
    A stop in the same loop iteration as such a wake once lost its cancellation (Python
    3.11's wait_for handed the wake back instead), so the heartbeat kept the referee in the
    pool and stop() waited forever: a fresh-clone CI run hung 120 s on it."""
    for _ in range(20):  # the race was certain, not rare; a few rounds show it stays fixed
        registry = MemoryPoolRegistry(timeout_s=5.0)
        heartbeat = PoolHeartbeat(registry, lambda: _report("r1"), lambda members: None,
                                  interval_s=0.05)
        await heartbeat.start()
        await asyncio.sleep(0.01)  # inside its wait for the next beat
        heartbeat.wake()  # e.g. a bot connected just now
        try:
            async with asyncio.timeout(5):
                await heartbeat.stop("r1")
        except TimeoutError:
            pytest.fail("PoolHeartbeat.stop() did not return within 5 s after a wake")
        assert registry.live() == [], "the stopped referee is still in the pool"


async def test_the_report_says_who_is_connected_with_free_slots(token_store):
    pool = MemoryPoolRegistry()
    async with pool_referee(token_store, pool, capacity=7) as a:
        bot = await RawBot(a.target, "alice", max_tables=3).start().connected()
        await until(lambda: "alice" in pool.live()[0].bots)
        report = pool.live()[0]
        assert (report.referee_id, report.address, report.capacity) == (a.referee_id, a.target, 7)
        assert report.bots["alice"].free == 3 and report.bots["alice"].version == "1.0"
        # the bot says it takes no new table here for now: 0 free slots, and a table waits
        bot.send(gw.BotMessage(capacity=gw.Capacity(max_tables=0)))
        await until(lambda: pool.live()[0].bots["alice"].free == 0)
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await play_table(a.target, table_id="t-none", seats=["alice", "house:random"],
                             games=1, connect_deadline_ms=300)
        assert refused.value.code() == grpc.StatusCode.FAILED_PRECONDITION
        assert "no free table slot: alice" in refused.value.details()
        bot.send(gw.BotMessage(capacity=gw.Capacity(max_tables=2)))
        await until(lambda: pool.live()[0].bots["alice"].free == 2)
        events = await play_table(a.target, table_id="t-two", seats=["alice", "house:random"],
                                  games=1, seed="pool")
        assert result_of(events).games_played == 1
        await bot.close()
        await until(lambda: "alice" not in pool.live()[0].bots)


async def test_a_referee_at_capacity_refuses_more_tables(token_store):
    async with running_referee(token_store, organizer_token=ORGANIZER_TOKEN, capacity=1) as a:
        slow = await RawBot(a.target, "alice", policy=lambda request, bot: None).start().connected()
        first = asyncio.create_task(play_table(
            a.target, table_id="t-1", seats=["alice", "house:random"], games=1, seed="cap",
            move_time_ms=2000))
        await until(lambda: "t-1" in a.registry.tables)
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await play_table(a.target, table_id="t-2", seats=["house:greedy", "house:random"],
                             games=1)
        assert refused.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert "capacity of 1 tables" in refused.value.details()
        first.cancel()
        await slow.kill()


class BrokenRegistry:
    def heartbeat(self, report: RefereeReport):
        raise ConnectionError("database unreachable")

    def leave(self, referee_id: str) -> None:
        raise ConnectionError("database unreachable")


async def test_a_failing_registry_is_logged_and_the_referee_plays_on(token_store, caplog):
    caplog.set_level(logging.INFO, logger="referee_service.pool")
    async with running_referee(token_store, organizer_token=ORGANIZER_TOKEN,
                               pool=BrokenRegistry(), pool_heartbeat_s=0.05) as a:
        bot = await RawBot(a.target, "alice").start().connected()
        events = await play_table(a.target, table_id="t-1", seats=["alice", "house:random"],
                                  games=1, seed="broken")
        assert result_of(events).games_played == 1
        assert not bot.of_kind("pool")  # no pool known: nothing sent
        await bot.close()
    failures = [r for r in caplog.records if getattr(r, "event", "") == "pool_heartbeat_failed"]
    assert failures and "database unreachable" in failures[0].error
    assert len(failures) <= 2  # said once (and every 30th time), not every beat
    assert any(getattr(r, "event", "") == "pool_leave_failed" for r in caplog.records)


async def test_a_referee_outside_a_pool_sends_no_pool_and_no_referee_id(referee):
    bot = await RawBot(referee.target, "alice").start().connected()
    await asyncio.sleep(0.1)
    assert bot.of_kind("welcome")[0].referee_id == ""
    assert not bot.of_kind("pool")
    await bot.close()


def test_pool_registry_loading_explains_mistakes():
    class WithPool:
        def referee_pool(self):
            return MemoryPoolRegistry()

    assert load_pool_registry("none", WithPool()) is None
    assert isinstance(load_pool_registry("auto", WithPool()), MemoryPoolRegistry)
    assert load_pool_registry("auto", StaticTokenStore()) is None
    assert isinstance(load_pool_registry("referee_service.pool:MemoryPoolRegistry"),
                      MemoryPoolRegistry)
    for spec, message in [
        ("nonsense", "use 'auto', 'none' or 'module:Class'"),
        ("no_such_module:X", "cannot import no_such_module"),
        ("referee_service.pool:Nope", "has no attribute Nope"),
        ("referee_service.auth:StaticTokenStore", r"has no heartbeat\(\) method"),
    ]:
        with pytest.raises(ValueError, match=message):
            load_pool_registry(spec)


def test_the_command_line_checks_the_pool_flags(capsys):
    from referee_service.__main__ import main

    for argv, message in [
        (["--advertise", "no-port"], "--advertise must be HOST:PORT"),
        (["--capacity", "0"], "--capacity must be at least 1"),
        (["--pool-heartbeat", "0"], "--pool-heartbeat must be a positive number"),
        (["--referee-id", "x" * 65], "--referee-id must be 1-64 characters"),
    ]:
        with pytest.raises(SystemExit) as exited:
            main(argv)
        assert exited.value.code == 2
        assert message in capsys.readouterr().err
    assert main(["--pool", "bad:Spec:x", "--listen", "127.0.0.1:0"]) == 2
    assert "--pool 'bad:Spec:x': cannot import bad" in capsys.readouterr().err
