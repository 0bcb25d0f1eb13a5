"""The organiser side: what tournament workers call to play tables and see who is online.

A thin servicer: it checks the organiser credential, turns the request into a TableSpec
and relays the TableRunner's events; the table logic lives in `table.py`.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from typing import Any

import grpc

from bots_sdk.protocol.tienlen.v1 import organizer_pb2 as org
from bots_sdk.protocol.tienlen.v1 import organizer_pb2_grpc as org_grpc
from referee_service.auth import bearer_token, organizer_token_ok
from referee_service.house import house_bot_names
from referee_service.sessions import SessionRegistry
from referee_service.spec import SpecError, table_spec
from referee_service.table import TableFailure, TableRunner

log = logging.getLogger("referee_service.organizer")

#: Tables one referee plays at once unless configured (--capacity).
DEFAULT_CAPACITY = 256


class OrganizerService(org_grpc.OrganizerServicer):
    def __init__(self, registry: SessionRegistry, organizer_token: str | None, *,
                 capacity: int = DEFAULT_CAPACITY) -> None:
        self.registry = registry
        self.organizer_token = organizer_token
        self.capacity = capacity
        self.accepting = True

    async def _authorize(self, context: grpc.aio.ServicerContext[Any, Any]) -> None:
        offered = bearer_token(context.invocation_metadata())
        if not self.organizer_token:
            await context.abort(grpc.StatusCode.UNAUTHENTICATED,
                                "the organiser API is disabled: no organiser token configured")
        if not organizer_token_ok(self.organizer_token, offered):
            await context.abort(grpc.StatusCode.UNAUTHENTICATED,
                                "missing or wrong organiser token "
                                "(metadata 'authorization: Bearer <token>')")

    async def PlayTable(self, request: org.PlayTableRequest,
                        context: grpc.aio.ServicerContext[org.PlayTableRequest, org.TableEvent],
                        ) -> AsyncIterator[org.TableEvent]:
        await self._authorize(context)
        if not self.accepting:
            await context.abort(grpc.StatusCode.UNAVAILABLE,
                                "the referee is shutting down; no new tables")
        try:
            spec = table_spec(request, house_bot_names())
        except SpecError as exc:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(exc))
        if spec.table_id in self.registry.tables:
            await context.abort(grpc.StatusCode.ALREADY_EXISTS,
                                f"table {spec.table_id!r} is already running")
        if len(self.registry.tables) >= self.capacity:
            await context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED,
                                f"the referee is at its capacity of {self.capacity} tables "
                                "at once; play this one on another referee or later")
        runner = TableRunner(spec, self.registry)
        runner.start()
        try:
            while True:
                event = await runner.events.get()
                if isinstance(event, TableFailure):
                    await context.abort(grpc.StatusCode[event.status], str(event))
                yield event
                if event.WhichOneof("event") == "result":
                    break
        finally:
            runner.abort("the organiser cancelled the call")

    async def ListBots(self, request: org.ListBotsRequest,
                       context: grpc.aio.ServicerContext[org.ListBotsRequest,
                                                         org.ListBotsResponse],
                       ) -> org.ListBotsResponse:
        await self._authorize(context)
        return org.ListBotsResponse(
            bots=[org.ConnectedBot(**bot) for bot in self.registry.connected_bots()])
