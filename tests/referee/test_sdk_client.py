"""The SDK's own client (`bots_sdk.client.BotClient`) against the referee, in tasks."""

from __future__ import annotations

import asyncio

import pytest

from bots_sdk.client import BotClient
from bots_sdk.examples import EXAMPLES
from bots_sdk.protocol.tienlen.v1 import organizer_pb2 as org
from bots_sdk.rules import PRESETS
from referee_service.server import Referee

from .harness import games_of, play_table, result_of, token_of


@pytest.mark.parametrize("preset", sorted(PRESETS))
async def test_sdk_example_bots_play_every_preset(referee: Referee, preset: str) -> None:
    names = {"alice": "random", "bob": "greedy", "carol": "heuristic"}
    clients = [BotClient(EXAMPLES[kind], target=referee.target, token=token_of(bot_id),
                         max_tables=2, reconnect=False) for bot_id, kind in names.items()]
    tasks = [asyncio.get_running_loop().create_task(c.run()) for c in clients]
    try:
        for client in clients:
            while client.connected is None or not client.connected.is_set():
                await asyncio.sleep(0.01)
        events = await play_table(referee.target, table_id=f"sdk-{preset}", preset=preset,
                                  seats=list(names), duplicate_sets=1, seed=f"sdk-{preset}")
        result = result_of(events)
        assert result.status == org.TABLE_STATUS_COMPLETED
        assert list(result.strikes) == [0, 0, 0] and not result.forfeited
        assert len(games_of(events)) == 3
        assert all(c.stats.rejected == 0 and c.stats.fallbacks == 0 for c in clients)
    finally:
        for client in clients:
            client.stop(force=True)
        await asyncio.wait_for(asyncio.gather(*tasks, return_exceptions=True), 10)
