"""The bot side of the referee: one `BotGateway.Connect` stream per bot process.

The method is registered with raw-bytes (de)serialisers, so a message that does not even
parse is answered with an Error instead of killing the stream, and the handler parses
exactly once. Reading and writing run in separate tasks; everything the tables want to
say goes through the session's outbox.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass

import grpc
from google.protobuf.message import DecodeError

from bots_sdk.protocol.tienlen.v1 import bot_gateway_pb2 as gw
from referee_service.admission import (
    DEFAULT_ADMISSION_BURST,
    DEFAULT_ADMISSION_LAG_S,
    DEFAULT_ADMISSION_RATE,
    AdmissionPacer,
    TokenChecks,
)
from referee_service.auth import TokenStore, bearer_token, token_digest
from referee_service.sessions import (
    DEFAULT_MAX_STREAMS_PER_BOT,
    DEFAULT_MAX_TABLES_PER_BOT,
    DEFAULT_RATE_LIMIT,
    BotSession,
    SessionRegistry,
    StreamLimitError,
)

log = logging.getLogger("referee_service.gateway")
PROTOCOL_VERSION = 1
SERVICE_NAME = "tienlen.v1.BotGateway"


@dataclass(frozen=True, slots=True)
class GatewayLimits:
    max_message_bytes: int = 64 * 1024
    rate_limit: int = DEFAULT_RATE_LIMIT  # messages/s per bot, all its streams together
    max_tables_per_bot: int = DEFAULT_MAX_TABLES_PER_BOT
    max_streams_per_bot: int = DEFAULT_MAX_STREAMS_PER_BOT
    hello_timeout_s: float = 10.0
    max_outbox: int = 4096  # messages queued for a bot that does not read: then closed
    admission_rate: float = DEFAULT_ADMISSION_RATE  # Hellos/s taken on (0: unpaced)
    admission_burst: int = DEFAULT_ADMISSION_BURST
    admission_lag_s: float = DEFAULT_ADMISSION_LAG_S  # the loop's lateness that slows it


def _error(code: gw.ErrorCode.ValueType, reason: str, *, fatal: bool = False, table_id: str = "",
           move_id: int = 0) -> bytes:
    return gw.RefereeMessage(error=gw.Error(
        code=code, reason=reason, fatal=fatal, table_id=table_id, move_id=move_id,
    )).SerializeToString()


class BotGateway:
    """Authenticates a stream, then routes its messages until it closes."""

    def __init__(self, registry: SessionRegistry, token_store: TokenStore,
                 limits: GatewayLimits) -> None:
        self.registry = registry
        self.token_store = token_store
        self.token_checks = TokenChecks(token_store)
        self.pacer = AdmissionPacer(limits.admission_rate, limits.admission_burst,
                                    lag_target_s=limits.admission_lag_s)
        self.limits = limits
        self.accepting = True
        self.referee_id = ""  # this referee's id in its pool (Welcome.referee_id)
        # The latest RefereePool message, serialized: sent after each Welcome (pools only).
        self.pool_message: bytes | None = None

    def pool_changed(self, message: gw.RefereeMessage) -> None:
        """A new list of the pool's referees: every open stream hears it now, every new
        one right after its Welcome."""
        self.pool_message = message.SerializeToString()
        for streams in list(self.registry.sessions.values()):
            for session in streams:
                session.send(message)

    def handler(self) -> grpc.GenericRpcHandler:
        return grpc.method_handlers_generic_handler(SERVICE_NAME, {
            "Connect": grpc.stream_stream_rpc_method_handler(self.connect),
        })

    async def connect(self, requests: AsyncIterator[bytes],
                      context: grpc.aio.ServicerContext[bytes, bytes]) -> None:
        session = await self._hello(requests, context)
        if session is None:
            return
        # Registered before the Welcome is written, so the Welcome can say how many
        # seats this stream resumed; whatever the tables send meanwhile waits in the
        # outbox, which is drained after the Welcome.
        try:
            resumed = self.registry.add(session)
        except StreamLimitError as exc:
            log.info("bot refused", extra={"event": "bot_refused", "bot_id": session.bot_id,
                                           "reason": "stream limit"})
            await context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, str(exc))
        reader: asyncio.Task[None] | None = None
        session.task = asyncio.current_task()
        try:
            await context.write(gw.RefereeMessage(welcome=gw.Welcome(
                session_id=session.session_id, bot_id=session.bot_id,
                bot_name=session.bot_name, protocol_version=PROTOCOL_VERSION,
                max_tables=session.max_tables,
                max_message_bytes=self.limits.max_message_bytes,
                max_messages_per_second=self.limits.rate_limit,
                resumed_seats=len(resumed),
                max_streams_per_bot=self.registry.max_streams_per_bot,
                max_tables_per_bot=self.registry.max_tables_per_bot,
                referee_id=self.referee_id,
            )).SerializeToString())
            if self.pool_message is not None:
                await context.write(self.pool_message)
            session.context = context
            if resumed:
                log.info("seats resumed", extra={"event": "seats_resumed",
                                                 "bot_id": session.bot_id,
                                                 "seats": len(resumed)})
            reader = asyncio.get_running_loop().create_task(self._read(session, requests))
            while True:
                data = await session.outbox.get()
                if data is None:
                    break
                async with session.write_lock:
                    await context.write(data)
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if not session.overflowed or task is None:
                raise
            # Cancelled by the overflow, in a write that flow control held: the session
            # is dropped below; the call ends when gRPC can end it (INTERNAL when it can
            # at once; no status can be sent behind a write the bot never takes).
            task.uncancel()
        finally:
            session.context = None
            if reader is not None:
                reader.cancel()
            self.registry.remove(session)
            log.info("bot disconnected", extra={
                "event": "bot_disconnected", "bot_id": session.bot_id,
                "session": session.session_id})

    async def _hello(self, requests: AsyncIterator[bytes],
                     context: grpc.aio.ServicerContext[bytes, bytes]) -> BotSession | None:
        try:
            async with asyncio.timeout(self.limits.hello_timeout_s):
                raw = await anext(requests)
        except (StopAsyncIteration, TimeoutError):
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT,
                                "send Hello first (within "
                                f"{self.limits.hello_timeout_s:g} s)")
        try:
            first = gw.BotMessage.FromString(raw)
        except DecodeError:
            first = gw.BotMessage()
        if first.WhichOneof("body") != "hello":
            await context.write(_error(gw.ERROR_CODE_HELLO_REQUIRED,
                                       "the first message must be Hello", fatal=True))
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT,
                                "the first message must be Hello")
        hello = first.hello
        if hello.protocol_version not in (0, PROTOCOL_VERSION):
            reason = (f"protocol version {hello.protocol_version} is not supported "
                      f"(this referee speaks {PROTOCOL_VERSION})")
            await context.write(_error(gw.ERROR_CODE_UNSUPPORTED_PROTOCOL, reason, fatal=True))
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, reason)
        token = hello.token or bearer_token(context.invocation_metadata()) or ""
        digest = token_digest(token)
        full = self.registry.stream_limit_error(digest)
        if full is not None:
            # A bot retrying past its stream limit is refused before the token store is
            # asked (a thread hop, maybe a database query): its token is the one its
            # open streams were welcomed with.
            await context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, full)
        try:
            identity = await self.token_checks.check(token)
        except Exception:
            log.exception("token store failed")
            await context.abort(grpc.StatusCode.UNAVAILABLE,
                                "the referee cannot check tokens right now; retry later")
        if identity is None:
            log.info("bot refused", extra={"event": "bot_refused", "peer": context.peer(),
                                           "reason": "unknown or revoked token"})
            await context.abort(grpc.StatusCode.UNAUTHENTICATED,
                                "unknown or revoked bot token")
        # A burst of connecting bots takes its turn (admission.py), once its token is known
        # good: Hellos with unknown tokens, refused at the cost of a batched check, cannot
        # fill the queue that bots with real tokens wait in.
        await self.pacer.admit()
        if not self.accepting:
            await context.abort(grpc.StatusCode.UNAVAILABLE, "the referee is shutting down")
        max_tables = min(max(hello.max_tables, 1), self.limits.max_tables_per_bot)
        # The public name is the registered one, not what Hello claims: a bot cannot
        # pass itself off as another at the table.
        session = BotSession(
            bot_id=identity.bot_id, bot_name=(identity.name or hello.bot_name)[:64],
            bot_version=hello.bot_version[:64], max_tables=max_tables,
            omit_legal_plays=hello.omit_legal_plays, ack_moves=hello.ack_moves,
            peer=context.peer(), max_outbox=self.limits.max_outbox, token_digest=digest)
        log.info("bot connected", extra={
            "event": "bot_connected", "bot_id": session.bot_id, "bot_name": session.bot_name,
            "bot_version": session.bot_version, "max_tables": max_tables,
            "session": session.session_id, "peer": session.peer})
        return session

    async def _read(self, session: BotSession, requests: AsyncIterator[bytes]) -> None:
        bucket = session.bucket  # the bot's, shared with its other streams
        loop = asyncio.get_running_loop()
        warned_at = -2.0
        try:
            async for raw in requests:
                if not bucket.allow():
                    # Over the bot's allowance: stop reading (its further messages wait
                    # in gRPC's flow-control window, at no cost to anyone else) until
                    # the bucket has a token for this one. Said once a second.
                    now = loop.time()
                    if now - warned_at >= 1.0:
                        warned_at = now
                        bucket.throttled += 1
                        session.send(gw.RefereeMessage(error=gw.Error(
                            code=gw.ERROR_CODE_RATE_LIMITED,
                            reason=f"over {self.limits.rate_limit:g} messages/s for this "
                                   "bot (all its streams): reading paused")))
                        log.info("rate limited", extra={"event": "rate_limited",
                                                        "bot_id": session.bot_id})
                    while not bucket.allow():
                        await asyncio.sleep(bucket.wait_time())
                if self._dispatch(session, raw):
                    # Let the table that was waiting for this answer apply it and send
                    # the next move request before this task asks gRPC for the next
                    # message: that keeps the read call off the per-move critical path.
                    await asyncio.sleep(0)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # the transport failed (e.g. message over the size limit)
            log.info("stream ended", extra={"event": "stream_error", "bot_id": session.bot_id,
                                            "error": type(exc).__name__})
        finally:
            session.close()

    def _dispatch(self, session: BotSession, raw: bytes) -> bool:
        """Act on one bot message; True when it was a move (a table may now go on)."""
        try:
            message = gw.BotMessage.FromString(raw)
        except DecodeError:
            session.outbox.put_nowait(_error(gw.ERROR_CODE_MALFORMED_MESSAGE,
                                             "message does not parse as BotMessage"))
            return False
        kind = message.WhichOneof("body")
        if kind == "move":
            session.route_move(message.move)
            return True
        if kind == "ping":
            session.send(gw.RefereeMessage(pong=gw.Pong(nonce=message.ping.nonce)))
        elif kind == "goodbye":
            session.draining = True
            self.registry.released()
        elif kind == "capacity":
            # 0 is allowed here (no new table for now), unlike Hello.max_tables.
            session.max_tables = min(message.capacity.max_tables,
                                     self.limits.max_tables_per_bot)
            self.registry.released()
        elif kind == "hello":
            session.outbox.put_nowait(_error(gw.ERROR_CODE_MALFORMED_MESSAGE,
                                             "Hello was already received on this stream"))
        else:
            session.outbox.put_nowait(_error(gw.ERROR_CODE_MALFORMED_MESSAGE,
                                             "empty BotMessage (no body set)"))
        return False

