"""Thousands of bots connecting at once (a referee starting, or every bot of a restarted
referee coming back): each gets its Welcome on its first try. gRPC core used to cancel
the streams of such a burst past ~3,000 before their Hello was read (the bot saw
CANCELLED or INTERNAL "Internal error from Core"). benchmarks/connections_bench.py
measures 10,000 over a pool of two referees, in separate processes."""

from __future__ import annotations

import asyncio
from collections import Counter

import grpc
import pytest

from bots_sdk.protocol.tienlen.v1 import bot_gateway_pb2 as gw
from referee_service.auth import BotIdentity, StaticTokenStore
from referee_service.server import running_referee

# a loaded 2-core machine may take minutes to set up 4,000 connections
pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

BOTS = 4000
STREAMS_PER_CONNECTION = 100


async def test_a_burst_of_4000_bots_is_welcomed_without_a_retry() -> None:
    store = StaticTokenStore({f"tok-burst-{i:05d}": BotIdentity(f"burst-{i}", f"Burst {i}")
                              for i in range(BOTS)})
    async with running_referee(store, hello_timeout_s=120) as referee:
        channels = [grpc.aio.insecure_channel(referee.target,
                                              options=[("grpc.use_local_subchannel_pool", 1)])
                    for _ in range(BOTS // STREAMS_PER_CONNECTION)]
        outcomes: Counter[str] = Counter()
        welcomed = asyncio.Event()
        calls = []

        async def bot(i: int) -> None:
            call = channels[i % len(channels)].stream_stream(
                "/tienlen.v1.BotGateway/Connect", request_serializer=None,
                response_deserializer=gw.RefereeMessage.FromString)()
            calls.append(call)
            try:
                await call.write(gw.BotMessage(hello=gw.Hello(
                    token=f"tok-burst-{i:05d}", protocol_version=1)).SerializeToString())
                async for message in call:
                    if message.WhichOneof("body") == "welcome":
                        outcomes["welcome"] += 1
                        if outcomes["welcome"] == BOTS:
                            welcomed.set()
                        return
            except grpc.aio.AioRpcError as exc:
                outcomes[exc.code().name] += 1
            except (asyncio.InvalidStateError, grpc.aio.UsageError):
                outcomes["write failed"] += 1
            if sum(outcomes.values()) == BOTS:
                welcomed.set()

        tasks = [asyncio.ensure_future(bot(i)) for i in range(BOTS)]
        try:
            await asyncio.wait_for(welcomed.wait(), 600)
            assert outcomes == Counter({"welcome": BOTS})
            assert len(referee.registry.sessions) == BOTS
        finally:
            for call in calls:
                call.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            for channel in channels:
                await channel.close()
