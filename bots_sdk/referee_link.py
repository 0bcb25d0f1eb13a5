"""One stream to one referee (`RefereeLink`): Hello and Welcome, the read loop that hands
every message to the client, reconnection with backoff, and leaving (Goodbye, or at once).

A client holds one link per referee of the pool (bots_sdk/client.py); an answer goes back
on the link whose referee asked, whichever link plays the table now.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
from dataclasses import dataclass
from typing import TYPE_CHECKING, cast

import grpc

from bots_sdk.connecting import FATAL_CODES, ClientError, first_connection_error
from bots_sdk.protocol.tienlen.v1 import bot_gateway_pb2 as gw
from bots_sdk.protocol.tienlen.v1 import bot_gateway_pb2_grpc

if TYPE_CHECKING:
    from bots_sdk.client import BotClient
    from bots_sdk.table_messages import TableState

__all__ = ["PROTOCOL_VERSION", "SDK_NAME", "SDK_VERSION", "Leaving", "RefereeLink"]

# The client's one logger, whichever of its modules writes (bots_sdk/client.py).
log = logging.getLogger("bots_sdk.client")

PROTOCOL_VERSION = 1
SDK_NAME = "tienlen-python-sdk"
SDK_VERSION = "0.1.0"

Call = grpc.aio.StreamStreamCall[gw.BotMessage, gw.RefereeMessage]


class RefereeLink:
    """One stream to one referee: connects, reconnects with backoff, and hands every
    message to the client with itself, so answers go back on the stream that asked."""

    def __init__(self, client: BotClient, target: str, *, seed: bool, expected_id: str = "") -> None:
        self.client = client
        self.target = target
        self.seed = seed  # the address the client was given (never dropped by the pool)
        self.expected_id = expected_id  # the pool's id for this address
        self.referee_id = ""  # from Welcome ("" outside a pool)
        self.welcome: gw.Welcome | None = None
        self.view: list[tuple[str, str]] = []  # the pool as this referee last listed it
        self.call: Call | None = None
        self.write_lock = asyncio.Lock()
        self.connected = asyncio.Event()  # set while welcomed
        self.wake = asyncio.Event()  # stop() or retire(): look again
        self.retired = False  # out of the pool: finish its tables, then close for good
        self.offered: int | None = None  # the capacity the referee was last told
        self.task: asyncio.Task[None] | None = None

    def __repr__(self) -> str:
        return f"referee {self.referee_id or self.expected_id or '?'} at {self.target}"

    def tables(self) -> list[TableState]:
        return [s for s in self.client.tables.values() if s.link is self]

    def retire(self, why: str) -> None:
        if not self.retired:
            self.retired = True
            log.info("leaving %r: %s%s", self, why,
                     f" (after its {len(self.tables())} running table(s))" if self.tables() else "")
            self.wake.set()

    async def run(self) -> None:
        """Connect and stay connected until the client stops or the referee leaves the
        pool; ClientError (given address only) when the referee refuses us."""
        client = self.client
        attempt = 0
        delay = client.backoff_initial_s
        while True:
            attempt += 1
            channel = client._channel(self.target)
            try:
                stub = bot_gateway_pb2_grpc.BotGatewayStub(channel)
                welcomed = await self._session(stub)
                if welcomed:
                    attempt, delay = 0, client.backoff_initial_s
                elif self.seed and client._fails_fast():
                    raise ClientError(first_connection_error(self.target, None, ""))
            except grpc.aio.AioRpcError as exc:
                if exc.code() in FATAL_CODES:
                    refused = f"referee refused the connection: {exc.code().name}: {exc.details()}"
                    if self.seed:
                        raise ClientError(refused) from None
                    log.error("%r: %s; not connecting to it again", self, refused)
                    self.retired = True
                elif self.seed and client._fails_fast():
                    raise ClientError(
                        first_connection_error(self.target, exc.code(), exc.details() or "")
                    ) from None
                else:
                    log.warning("connection to %s lost: %s: %s", self.target, exc.code().name,
                                exc.details())
            finally:
                was_listing = bool(self.view)
                self.connected.clear()
                self.view = []
                self.offered = None
                if was_listing:
                    # The pool is the union of what the connected referees list, and this
                    # referee's own last list named itself: a referee that leaves the pool
                    # and then closes its streams (a graceful stop) is dropped only if the
                    # union is taken again without it. Nothing else would, as the others
                    # announced the change while this stream was still up.
                    client._pool_changed()
                await channel.close(grace=None)
            if client._stopping:
                # Running tables cannot be finished without a stream: the referee plays
                # the fallback for our seats from here.
                return
            if self.retired:
                self._forget_tables("its referee left the pool")
                return
            if not client.reconnect:
                if self.seed:
                    raise ClientError(f"connection to {self.target} closed")
                return
            if client.max_connect_attempts and attempt >= client.max_connect_attempts:
                if self.seed:
                    raise ClientError(
                        f"cannot reach the referee at {self.target} after {attempt} attempts"
                    )
                self.retired = True
                self._forget_tables(f"cannot reach it after {attempt} attempts")
                return
            fallback = client.seed_fallback
            if self.seed and fallback and not client.ever_welcomed and self.target != fallback:
                # never welcomed on the given address (a hosted bot's local referee that
                # died as it started): try the one it falls back on, which finds a live one
                log.warning("no referee at %s: trying %s", self.target, fallback)
                self.target = fallback
            wait = delay * (0.5 + random.random() / 2)
            log.info("reconnecting to %s in %.1f s", self.target, wait)
            client.stats.reconnects += 1
            if await self._wait_to_reconnect(wait):
                return
            delay = min(client.backoff_max_s, delay * 2)

    async def _wait_to_reconnect(self, seconds: float) -> bool:
        """Wait before reconnecting (woken early by stop() or the pool); True when this
        link should end instead: the client is leaving, or its referee left the pool."""
        client = self.client
        self.wake.clear()
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(seconds):
                await self.wake.wait()
        if client._stopping and (client._force or not self.tables()):
            return True
        if self.retired:
            self._forget_tables("its referee left the pool")
            return True
        return False

    def _forget_tables(self, why: str) -> None:
        lost = self.tables()
        if lost:
            log.warning("dropping table(s) %s: %s (the platform resumes them on another "
                        "referee)", ", ".join(sorted(s.table_id for s in lost)), why)
            for state in lost:
                del self.client.tables[state.table_id]
            self.client._capacity_changed()

    async def _session(self, stub: bot_gateway_pb2_grpc.BotGatewayAsyncStub) -> bool:
        """One stream from Hello to its end. Returns whether the referee welcomed us."""
        client = self.client
        call = stub.Connect()
        self.call = call
        others = len(client.tables) - len(self.tables())
        offer = max(0, client.max_tables - others)
        self.offered = max(1, offer)  # Hello's 0 means 1: told Capacity(0) after Welcome
        hello = gw.Hello(
            token=client.token,
            bot_name=client.bot_name,
            bot_version=str(client.bot_version),
            max_tables=self.offered,
            protocol_version=PROTOCOL_VERSION,
            sdk_name=SDK_NAME,
            sdk_version=SDK_VERSION,
        )
        await self.write(gw.BotMessage(hello=hello))
        welcomed = False
        # One task watches for stop() for the whole stream, so reading a message is a plain
        # await on the call (a task and an asyncio.wait per message cost more CPU than the
        # rest of a move of a fast bot).
        leaving = Leaving()
        watcher = asyncio.ensure_future(self._watch_stop(call, leaving))
        try:
            while True:
                try:
                    msg = await call.read()
                except asyncio.CancelledError:
                    task = asyncio.current_task()
                    if task is not None and task.cancelling():
                        raise  # we are being cancelled ourselves
                    if not leaving.now:
                        log.warning("the stream to %s was cancelled", self.target)
                    return welcomed  # cancelled under us (reconnect) or by stop()
                if msg is grpc.aio.EOF:
                    status = await call.code()
                    if status in FATAL_CODES:
                        refused = f"referee refused the connection: {status.name}: {await call.details()}"
                        if self.seed:
                            raise ClientError(refused)
                        log.error("%r: %s; not connecting to it again", self, refused)
                        self.retired = True
                    return welcomed
                msg = cast(gw.RefereeMessage, msg)  # not EOF: what the stub says it reads
                kind = msg.WhichOneof("body")
                if kind == "welcome":
                    welcomed = client.ever_welcomed = True
                    self._on_welcome(msg.welcome)
                elif kind == "pool":
                    self.view = [(r.referee_id, r.address) for r in msg.pool.referees
                                 if r.referee_id and r.address]
                    client._pool_changed()
                else:
                    await client._dispatch(self, kind, msg)
                if ((client._stopping or self.retired) and not self.tables()
                        and (leaving.goodbye_sent or self.retired)):
                    call.cancel()
                    return welcomed
                if (client.stop_when_idle and welcomed and not client.tables
                        and client.stats.tables_done):
                    client.stop()
        finally:
            watcher.cancel()

    def _on_welcome(self, welcome: gw.Welcome) -> None:
        client = self.client
        self.welcome = welcome
        self.referee_id = welcome.referee_id
        mine = self.tables()
        if mine and not welcome.resumed_seats:
            # Back too late: the referee gave our seats up (forfeit).
            log.warning(
                "reconnected, but no seat was resumed: dropping table(s) %s",
                ", ".join(sorted(s.table_id for s in mine)),
            )
            for state in mine:
                del client.tables[state.table_id]
        self.connected.set()
        log.info(
            "connected to %s%s as %s (bot id %s; running %s %s; up to %d tables; "
            "%d seats resumed)",
            self.target,
            f" (referee {welcome.referee_id})" if welcome.referee_id else "",
            welcome.bot_name or client.bot_name,
            welcome.bot_id,
            client.bot_name,
            client.bot_version,
            welcome.max_tables,
            welcome.resumed_seats,
        )
        client._capacity_changed()
        client._pool_changed()

    async def _watch_stop(self, call: Call, leaving: Leaving) -> None:
        """On stop() or retire(): leave at once (force, or no table running here), else
        say Goodbye and let the read loop finish the running tables."""
        client = self.client
        while True:
            await self.wake.wait()
            self.wake.clear()
            if not (client._stopping or self.retired):
                continue
            if (client._stopping and client._force) or not self.tables():
                leaving.now = True
                call.cancel()
                return
            if not leaving.goodbye_sent:
                log.info("%s: finishing %d running table(s)",
                         "stopping" if client._stopping else f"leaving {self!r}",
                         len(self.tables()))
                leaving.goodbye_sent = True
                await self.write(gw.BotMessage(goodbye=gw.Goodbye(
                    reason="client stopping" if client._stopping else "referee left the pool")))

    async def write(self, message: gw.BotMessage) -> None:
        """Send on the stream now up; lost with it if it is down (the referee times the
        move out, or resumes the seat when we are back)."""
        async with self.write_lock:
            call = self.call
            if call is None:
                return
            with contextlib.suppress(grpc.aio.AioRpcError, asyncio.InvalidStateError):
                await call.write(message)

@dataclass(slots=True)
class Leaving:
    """What stop() did to one stream: cancelled it now, or said Goodbye."""

    now: bool = False
    goodbye_sent: bool = False
