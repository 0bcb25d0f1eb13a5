"""Keepalive: a bot waiting a long time for its next table keeps its connection.

The client and the referee take their keepalive settings from one place
(bots_sdk/keepalive.py); if they disagreed, the referee would count the client's pings
as abuse and close the connection with `too_many_pings` (the bot logs
"UNAVAILABLE: Too many pings" and reconnects, losing a seat if a table was running).
The intervals are shortened here (1 s instead of 20 s) so that "several intervals" fit
in a test; the relation between client and server is the one shipped.
"""

from __future__ import annotations

import asyncio
import logging

import grpc
import pytest

from bots_sdk import Bot
from bots_sdk.client import BotClient
from bots_sdk.keepalive import (
    KEEPALIVE_TIME_MS,
    client_keepalive_options,
    server_keepalive_options,
)
from referee_service.auth import BotIdentity, StaticTokenStore
from referee_service.server import running_referee

from .helpers import ORGANIZER, TOKEN

pytestmark = pytest.mark.timeout(60)
INTERVAL_MS = 1000


class Passer(Bot):
    def play(self, view):
        plays = view.legal_plays()
        return plays[0] if plays else None


async def test_an_idle_bot_connection_survives_many_keepalive_intervals(
        caplog: pytest.LogCaptureFixture) -> None:
    store = StaticTokenStore({TOKEN: BotIdentity("sdk-bot", "SDK bot")})
    async with running_referee(store, organizer_token=ORGANIZER,
                               keepalive_ms=INTERVAL_MS) as referee:
        client = BotClient(Passer, target=referee.target, token=TOKEN,
                           keepalive_ms=INTERVAL_MS, backoff_initial_s=0.05)
        task = asyncio.create_task(client.run())
        try:
            for _ in range(250):
                if client.connected is not None and client.connected.is_set():
                    break
                await asyncio.sleep(0.02)
            sessions = list(referee.registry.sessions["sdk-bot"])
            assert len(sessions) == 1
            with caplog.at_level(logging.INFO, logger="bots_sdk.client"):
                await asyncio.sleep(6 * INTERVAL_MS / 1000)  # six client pings, idle
            assert client.connected.is_set() and not task.done()
            assert client.stats.reconnects == 0
            assert list(referee.registry.sessions["sdk-bot"]) == sessions
            assert not sessions[0].closed
            assert "Too many pings" not in caplog.text and "lost" not in caplog.text
        finally:
            client.stop(force=True)
            await asyncio.wait_for(task, 10)


async def test_a_client_pinging_faster_than_agreed_is_cut_off() -> None:
    """The harness above would notice a disagreement: the referee enforces its minimum."""
    store = StaticTokenStore({TOKEN: BotIdentity("sdk-bot", "SDK bot")})
    async with running_referee(store, organizer_token=ORGANIZER,
                               keepalive_ms=4 * INTERVAL_MS) as referee:
        options = client_keepalive_options(INTERVAL_MS // 2)  # 4x too often
        async with grpc.aio.insecure_channel(referee.target, options=options) as channel:
            from grpc_health.v1 import health_pb2, health_pb2_grpc

            call = health_pb2_grpc.HealthStub(channel).Watch(health_pb2.HealthCheckRequest())
            with pytest.raises(grpc.aio.AioRpcError) as error:
                async with asyncio.timeout(10):
                    async for _ in call:
                        pass
    assert error.value.code() == grpc.StatusCode.UNAVAILABLE
    assert "ping" in (error.value.details() or "").lower()


def test_shipped_settings_agree() -> None:
    client = dict(client_keepalive_options())
    server = dict(server_keepalive_options())
    assert client["grpc.keepalive_time_ms"] == KEEPALIVE_TIME_MS == 20_000
    assert server["grpc.http2.min_ping_interval_without_data_ms"] * 2 <= \
        client["grpc.keepalive_time_ms"]
    assert client["grpc.keepalive_permit_without_calls"] == \
        server["grpc.keepalive_permit_without_calls"] == 1
