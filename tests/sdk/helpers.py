"""Shared helpers of the SDK tests: a real referee and the organiser calls."""

from __future__ import annotations

from typing import Any

import grpc

from bots_sdk.protocol.tienlen.v1 import organizer_pb2 as org
from bots_sdk.protocol.tienlen.v1 import organizer_pb2_grpc as org_grpc
from referee_service.server import Referee
from tests.waits import TABLE_WITHIN_S, collect

TOKEN = "sdk-test-token"
ORGANIZER = "sdk-test-organizer"


async def play_table(referee: Referee, table_id: str, **fields: Any) -> list[org.TableEvent]:
    """Play a table of the SDK's bot and house bots to the end: its events (fails the test,
    naming the table, if it has not ended within `within_s`)."""
    within_s = fields.pop("within_s", TABLE_WITHIN_S)
    seats = [org.SeatSpec(bot_id="sdk-bot")] + [
        org.SeatSpec(house_bot=h) for h in fields.pop("house", ("random", "greedy", "heuristic"))
    ]
    if "deal_seeds" not in fields:
        # Fixed deals, the same on every run (a random deal may be an instant win that ends
        # a game before any move); pass deal_seeds=[] to have the referee draw them.
        first = fields.get("first_game_index", 0)
        total = fields.get("games", 0) or fields.get("duplicate_sets", 0) * len(seats)
        per = len(seats) if fields.get("duplicate_sets") else 1
        fields["deal_seeds"] = [f"{table_id}/deal/{i // per}" for i in range(first, total)]
    request = org.PlayTableRequest(table_id=table_id, seats=seats, seed=table_id, **fields)
    async with grpc.aio.insecure_channel(referee.target) as channel:
        stub = org_grpc.OrganizerStub(channel)
        call = stub.PlayTable(request, metadata=(("authorization", f"Bearer {ORGANIZER}"),))
        return await collect(call, f"table {table_id!r}", within_s)


def result_of(events: list[org.TableEvent]) -> org.TableResult:
    return next(e.result for e in events if e.WhichOneof("event") == "result")
