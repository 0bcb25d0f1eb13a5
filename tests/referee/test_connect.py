"""The bot stream's front door: authentication, Hello, and what a bot may throw at it."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re

import grpc
import pytest

from bots_sdk.protocol.tienlen.v1 import bot_gateway_pb2 as gw
from bots_sdk.protocol.tienlen.v1 import organizer_pb2 as org
from referee_service.auth import BotIdentity, StaticTokenStore
from referee_service.server import Referee, running_referee

from .harness import AUTH, ORGANIZER_TOKEN, RawBot, organizer_stub, play_table, result_of, token_of


async def _finished(bot: RawBot) -> RawBot:
    assert bot.task is not None
    await asyncio.wait_for(bot.task, 10)
    return bot


async def test_known_token_is_welcomed_with_limits(referee: Referee) -> None:
    bot = await RawBot(referee.target, "alice", max_tables=3).start().connected()
    welcome = bot.of_kind("welcome")[0]
    assert welcome.bot_id == "alice"
    assert welcome.max_tables == 3
    assert welcome.protocol_version == 1
    assert welcome.max_message_bytes == 64 * 1024
    assert (welcome.max_streams_per_bot, welcome.max_tables_per_bot) == (4, 64)
    # random, so it says nothing about how many streams other bots opened meanwhile
    again = await RawBot(referee.target, "alice").start().connected()
    ids = [welcome.session_id, again.of_kind("welcome")[0].session_id]
    assert all(re.fullmatch(r"s-[0-9a-f]{16}", i) for i in ids) and ids[0] != ids[1]
    await bot.close()
    await again.close()


async def test_unknown_token_is_unauthenticated_and_never_logged(
        referee: Referee, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    secret = "not-a-real-token-7f3a9c"
    bot = await _finished(RawBot(referee.target, "alice", token=secret).start())
    assert bot.status == grpc.StatusCode.UNAUTHENTICATED
    assert "unknown or revoked bot token" in bot.details
    assert secret not in caplog.text
    assert not bot.of_kind("welcome")


async def test_revoked_token_is_refused(token_store: StaticTokenStore) -> None:
    token_store.revoke(token_of("bob"))
    async with running_referee(token_store) as ref:
        bot = await _finished(RawBot(ref.target, "bob").start())
    assert bot.status == grpc.StatusCode.UNAUTHENTICATED


async def test_token_may_come_as_bearer_metadata(referee: Referee) -> None:
    channel = grpc.aio.insecure_channel(referee.target)
    call = channel.stream_stream("/tienlen.v1.BotGateway/Connect",
                                 request_serializer=gw.BotMessage.SerializeToString,
                                 response_deserializer=gw.RefereeMessage.FromString)(
        metadata=(("authorization", f"Bearer {token_of('carol')}"),))
    await call.write(gw.BotMessage(hello=gw.Hello(bot_name="C", protocol_version=1)))
    first = await call.read()
    assert first.welcome.bot_id == "carol"
    await call.done_writing()
    await channel.close()


async def test_first_message_must_be_hello(referee: Referee) -> None:
    bot = RawBot(referee.target, "alice", hello=False).start()
    bot.send(gw.BotMessage(ping=gw.Ping(nonce=1)))
    await _finished(bot)
    assert bot.status == grpc.StatusCode.INVALID_ARGUMENT
    assert "first message must be Hello" in bot.details
    assert bot.of_kind("error")[0].code == gw.ERROR_CODE_HELLO_REQUIRED


async def test_unsupported_protocol_version_is_refused(referee: Referee) -> None:
    bot = RawBot(referee.target, "alice", hello=False).start()
    bot.send(gw.BotMessage(hello=gw.Hello(token=token_of("alice"), protocol_version=9)))
    await _finished(bot)
    assert bot.status == grpc.StatusCode.INVALID_ARGUMENT
    assert "protocol version 9" in bot.details


async def test_garbage_gets_errors_and_the_stream_survives(referee: Referee) -> None:
    bot = await RawBot(referee.target, "alice").start().connected()
    bot.send(b"\xff\xff\xff\xff not protobuf")
    bot.send(gw.BotMessage())  # no body
    bot.send(gw.BotMessage(hello=gw.Hello(token=token_of("alice"))))  # second hello
    bot.send(gw.BotMessage(move=gw.Move(table_id="nope", move_id=5, cards=[1])))
    bot.send(gw.BotMessage(ping=gw.Ping(nonce=42)))
    for _ in range(100):
        if bot.of_kind("pong"):
            break
        await asyncio.sleep(0.02)
    errors = bot.of_kind("error")
    assert [e.code for e in errors] == [gw.ERROR_CODE_MALFORMED_MESSAGE] * 3
    assert "does not parse" in errors[0].reason
    rejected = bot.of_kind("move_rejected")
    assert rejected[0].code == gw.MOVE_ERROR_CODE_UNKNOWN_TABLE
    assert bot.of_kind("pong")[0].nonce == 42
    await bot.close()
    assert bot.status == grpc.StatusCode.OK


async def _pongs_within(bots: list[RawBot], seconds: float) -> int:
    await asyncio.sleep(seconds)
    return sum(len(b.of_kind("pong")) for b in bots)


async def test_a_flood_is_throttled_per_bot_across_its_streams(
        token_store: StaticTokenStore) -> None:
    """Two streams of one bot share one allowance (20/s, burst 40): what is over it is
    not read until the allowance refills, and the bot is told once; another bot is
    answered at once meanwhile."""
    async with running_referee(token_store, rate_limit=20) as ref:
        streams = [await RawBot(ref.target, "alice").start().connected() for _ in range(2)]
        for bot in streams:
            for i in range(400):
                bot.send(gw.BotMessage(ping=gw.Ping(nonce=i)))
        started = asyncio.get_running_loop().time()
        answered = await _pongs_within(streams, 1.5)
        elapsed = asyncio.get_running_loop().time() - started
        assert 40 <= answered <= 40 + 20 * elapsed + 10  # one allowance, not two
        errors = [e for b in streams for e in b.of_kind("error")]
        assert {e.code for e in errors} == {gw.ERROR_CODE_RATE_LIMITED}
        assert not any(e.fatal for e in errors)
        assert "over 20 messages/s for this bot (all its streams)" in errors[0].reason
        other = await RawBot(ref.target, "bob").start().connected()
        other.send(gw.BotMessage(ping=gw.Ping(nonce=7)))
        assert await _pongs_within([other], 0.5) == 1
        # throttled, not closed: the flood's streams are still open
        assert all(b.task is not None and not b.task.done() for b in streams)
        for bot in [*streams, other]:
            await bot.kill()


class CountingStore:
    """A token store that counts how often it is asked."""

    def __init__(self, store: StaticTokenStore) -> None:
        self.store = store
        self.calls = 0

    def authenticate_bot(self, token: str) -> BotIdentity | None:
        self.calls += 1
        return self.store.authenticate_bot(token)


async def test_streams_per_bot_are_capped(token_store: StaticTokenStore) -> None:
    counting = CountingStore(token_store)
    async with running_referee(counting, max_streams_per_bot=2) as ref:
        first = await RawBot(ref.target, "alice").start().connected()
        second = await RawBot(ref.target, "alice").start().connected()
        assert first.of_kind("welcome")[0].max_streams_per_bot == 2
        third = await _finished(RawBot(ref.target, "alice").start())
        assert third.status == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert third.details == (
            "bot 'alice' already has 2 open streams, the most this referee allows per bot; "
            "play more tables per stream (Hello.max_tables) instead of opening more streams")
        # refused before the token store is asked: its token opened the two open streams
        assert counting.calls == 2
        # other bots are not affected, and a closed stream frees its place
        await (await RawBot(ref.target, "bob").start().connected()).close()
        await first.close()
        for _ in range(100):
            if len(ref.registry.sessions["alice"]) < 2:
                break
            await asyncio.sleep(0.01)
        again = await RawBot(ref.target, "alice").start().connected()
        for bot in (second, again):
            await bot.close()


async def test_max_tables_is_capped_per_bot_not_per_stream(
        token_store: StaticTokenStore) -> None:
    async with running_referee(token_store, organizer_token=ORGANIZER_TOKEN,
                               max_tables_per_bot=3) as ref:
        streams = [await RawBot(ref.target, "alice", max_tables=10).start().connected()
                   for _ in range(2)]
        welcome = streams[0].of_kind("welcome")[0]
        assert (welcome.max_tables, welcome.max_tables_per_bot) == (3, 3)
        channel, stub = organizer_stub(ref.target)
        listed = await stub.ListBots(org.ListBotsRequest(), metadata=AUTH)
        await channel.close()
        assert [(b.bot_id, b.streams, b.max_tables) for b in listed.bots] == [("alice", 2, 3)]
        busiest = 0

        async def watch() -> None:
            nonlocal busiest
            while True:
                busiest = max(busiest, ref.registry.active_tables("alice"))
                await asyncio.sleep(0.001)

        watcher = asyncio.get_running_loop().create_task(watch())
        results = await asyncio.gather(*[
            play_table(ref.target, table_id=f"cap{i}", games=3,
                       seats=["alice", "house:random", "house:greedy"]) for i in range(5)])
        watcher.cancel()
        assert all(result_of(r).status == org.TABLE_STATUS_COMPLETED for r in results)
        assert busiest == 3  # six slots offered by two streams, three allowed
        for bot in streams:
            await bot.close()


async def test_a_bot_that_does_not_read_its_stream_is_closed(
        token_store: StaticTokenStore, caplog: pytest.LogCaptureFixture) -> None:
    """Pongs it never reads pile up no further than the outbox limit; then the referee
    drops the stream (its seats, its place under the stream limit)."""
    async with running_referee(token_store, rate_limit=1_000_000, max_outbox=50) as ref:
        # no BDP probing: the window the client offers stays at 64 KiB (else it can grow to
        # megabytes of pongs first, and the test would only measure how fast they flow)
        channel = grpc.aio.insecure_channel(ref.target, options=[("grpc.http2.bdp_probe", 0)])
        call = channel.stream_stream("/tienlen.v1.BotGateway/Connect",
                                     request_serializer=gw.BotMessage.SerializeToString,
                                     response_deserializer=gw.RefereeMessage.FromString)()
        await call.write(gw.BotMessage(hello=gw.Hello(token=token_of("alice"),
                                                      protocol_version=1)))
        ping = gw.BotMessage(ping=gw.Ping(nonce=1))

        async def flood() -> None:
            with contextlib.suppress(grpc.aio.AioRpcError, asyncio.InvalidStateError):
                while True:
                    await call.write(ping)

        flooding = asyncio.get_running_loop().create_task(flood())
        for _ in range(3000):
            await asyncio.sleep(0.01)
            if ref.registry.sessions and max(
                    s.outbox.qsize() for s in ref.registry.sessions["alice"]) > 51:
                raise AssertionError("the outbox grew past its limit")
            if [r for r in caplog.records if getattr(r, "event", "") == "stream_overflow"] \
                    and "alice" not in ref.registry.sessions:
                break
        else:
            raise AssertionError("the stream was never dropped")
        flooding.cancel()
        call.cancel()
        await channel.close()



async def test_a_message_just_under_the_size_limit_still_arrives(referee: Referee) -> None:
    """The referee reads ahead only 8 KiB per stream (a flood cannot make it buffer more),
    which must not stop a larger message from flowing as it is read."""
    bot = await RawBot(referee.target, "alice").start().connected()
    bot.send(gw.BotMessage(move=gw.Move(table_id="x" * (60 * 1024), move_id=3)))
    for _ in range(200):
        if bot.of_kind("move_rejected"):
            break
        await asyncio.sleep(0.02)
    rejected = bot.of_kind("move_rejected")[0]
    assert rejected.code == gw.MOVE_ERROR_CODE_UNKNOWN_TABLE and len(rejected.table_id) == 60 * 1024
    await bot.close()
    assert bot.status == grpc.StatusCode.OK


async def test_oversized_message_closes_only_that_stream(referee: Referee) -> None:
    bot = await RawBot(referee.target, "alice").start().connected()
    other = await RawBot(referee.target, "bob").start().connected()
    bot.send(gw.BotMessage(move=gw.Move(table_id="x" * (200 * 1024))))
    await _finished(bot)
    assert bot.status == grpc.StatusCode.RESOURCE_EXHAUSTED
    other.send(gw.BotMessage(ping=gw.Ping(nonce=7)))
    for _ in range(100):
        if other.of_kind("pong"):
            break
        await asyncio.sleep(0.02)
    assert other.of_kind("pong")[0].nonce == 7
    await other.close()


async def test_list_bots_shows_streams_and_capacity(referee: Referee) -> None:
    a1 = await RawBot(referee.target, "alice", max_tables=2).start().connected()
    a2 = await RawBot(referee.target, "alice", max_tables=5).start().connected()
    b = await RawBot(referee.target, "bob", max_tables=1).start().connected()
    channel, stub = organizer_stub(referee.target)
    response = await stub.ListBots(org.ListBotsRequest(), metadata=AUTH)
    bots = {bot.bot_id: bot for bot in response.bots}
    assert set(bots) == {"alice", "bob"}
    assert bots["alice"].streams == 2 and bots["alice"].max_tables == 7
    assert bots["alice"].bot_name == "Alice" and bots["alice"].bot_version == "1.0"
    await a1.close()  # returns once the referee has ended the stream
    response = await stub.ListBots(org.ListBotsRequest(), metadata=AUTH)
    assert {x.bot_id: x.streams for x in response.bots} == {"alice": 1, "bob": 1}
    await channel.close()
    await a2.close()
    await b.close()


@pytest.mark.parametrize("metadata, expected", [
    ((), "missing or wrong organiser token"),
    ((("authorization", "Bearer wrong"),), "missing or wrong organiser token"),
    ((("authorization", f"Bearer {token_of('alice')}"),), "missing or wrong organiser token"),
])
async def test_organizer_api_needs_its_own_credential(referee: Referee, metadata: tuple,
                                                      expected: str) -> None:
    channel, stub = organizer_stub(referee.target)
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await stub.ListBots(org.ListBotsRequest(), metadata=metadata)
    assert info.value.code() == grpc.StatusCode.UNAUTHENTICATED
    assert expected in (info.value.details() or "")
    await channel.close()


async def test_organizer_api_disabled_without_a_configured_token(
        token_store: StaticTokenStore) -> None:
    async with running_referee(token_store, organizer_token=None) as ref:
        channel, stub = organizer_stub(ref.target)
        with pytest.raises(grpc.aio.AioRpcError) as info:
            await stub.ListBots(org.ListBotsRequest(), metadata=AUTH)
        assert info.value.code() == grpc.StatusCode.UNAUTHENTICATED
        assert "disabled" in (info.value.details() or "")
        await channel.close()


async def test_answers_to_move_requests_are_never_rate_limited(
        token_store: StaticTokenStore) -> None:
    async with running_referee(token_store, organizer_token=ORGANIZER_TOKEN,
                               rate_limit=5) as ref:
        bot = await RawBot(ref.target, "alice", max_tables=4).start().connected()
        started = asyncio.get_running_loop().time()
        results = await asyncio.gather(*[
            play_table(ref.target, table_id=f"fast{i}", seats=["alice", "house:random"],
                       games=2) for i in range(4)])
        elapsed = asyncio.get_running_loop().time() - started
        answers = len(bot.of_kind("move_request"))
        assert answers / elapsed > 5 * 3  # well over the limit for other messages
        assert all(result_of(r).status == 1 for r in results)
        assert not bot.of_kind("error") and not bot.of_kind("strike")
        await bot.close()


async def test_a_silent_connection_is_closed_after_the_hello_timeout(
        token_store: StaticTokenStore) -> None:
    async with running_referee(token_store, hello_timeout_s=0.2) as ref:
        bot = await _finished(RawBot(ref.target, "alice", hello=False).start())
    assert bot.status == grpc.StatusCode.INVALID_ARGUMENT
    assert "send Hello first" in bot.details
