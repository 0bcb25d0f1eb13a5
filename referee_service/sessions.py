"""Bot streams and who is connected: the referee's view of the bot side.

A `BotSession` is one authenticated `BotGateway.Connect` stream. Tables never write to
the gRPC stream directly: they put messages in the session's outbox, which one writer
drains, so a slow or vanished bot can never block a table or another bot. The
`SessionRegistry` finds a stream with spare capacity for a seat and hands a reconnecting
bot its running seats back.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from bots_sdk.protocol.tienlen.v1 import bot_gateway_pb2 as gw
from referee_service.ratelimit import TokenBucket

if TYPE_CHECKING:
    from referee_service.table import RemoteParticipant, TableRunner

log = logging.getLogger("referee_service.sessions")
_SESSION_IDS = itertools.count(1)


@dataclass(slots=True)
class BotSession:
    """One open bot stream and the seats it plays."""

    bot_id: str
    bot_name: str
    bot_version: str
    max_tables: int
    omit_legal_plays: bool = False
    ack_moves: bool = False
    peer: str = ""
    session_id: str = field(default_factory=lambda: f"s{next(_SESSION_IDS)}")
    connected_at: float = field(default_factory=time.time)
    outbox: asyncio.Queue[bytes | None] = field(default_factory=asyncio.Queue)
    # table_id -> the seats this stream plays at that table
    seats: dict[str, list[RemoteParticipant]] = field(default_factory=dict)
    closed: bool = False
    draining: bool = False
    context: Any = None  # the stream's grpc context while it is open
    bucket: TokenBucket = field(default_factory=lambda: TokenBucket(200))
    write_lock: asyncio.Lock = field(default_factory=asyncio.Lock)

    def send(self, message: gw.RefereeMessage) -> None:
        """Queue a message for the bot; dropped silently once the stream is closed."""
        if not self.closed:
            self.outbox.put_nowait(message.SerializeToString())

    async def write_now(self, data: bytes) -> None:
        """Write an already serialized message straight to the stream, skipping the
        outbox hop (the per-move latency path), unless something is queued or being
        written ahead of it: then it queues, so messages never overtake each other."""
        context = self.context
        if self.closed:
            return
        self.bucket.credit()  # the answer to this request is never rate limited
        if context is None or self.outbox.qsize() or self.write_lock.locked():
            self.outbox.put_nowait(data)
            return
        async with self.write_lock:
            try:
                await context.write(data)
            except Exception:  # the stream is gone; the reader notices and cleans up
                self.close()

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.outbox.put_nowait(None)

    def has_room(self, table_id: str) -> bool:
        if self.closed or self.draining:
            return False
        return table_id in self.seats or len(self.seats) < self.max_tables

    def bind(self, participant: RemoteParticipant) -> None:
        self.seats.setdefault(participant.runner.spec.table_id, []).append(participant)

    def unbind(self, participant: RemoteParticipant) -> None:
        table_id = participant.runner.spec.table_id
        bound = self.seats.get(table_id)
        if bound and participant in bound:
            bound.remove(participant)
            if not bound:
                del self.seats[table_id]

    def route_move(self, move: gw.Move) -> None:
        """Hand a bot's answer to the seat waiting for it, or tell the bot why not."""
        bound = self.seats.get(move.table_id)
        if not bound:
            self._reject(move, gw.MOVE_ERROR_CODE_UNKNOWN_TABLE,
                         f"you play no seat at table {move.table_id!r}")
            return
        for participant in bound:
            pending = participant.pending
            if pending is not None and pending.move_id == move.move_id:
                if move.game_index != pending.game_index:
                    self._reject(move, gw.MOVE_ERROR_CODE_WRONG_GAME,
                                 f"move {move.move_id} belongs to game {pending.game_index}")
                    return
                pending.put(move)
                return
        self._reject(move, gw.MOVE_ERROR_CODE_STALE_MOVE,
                     f"move id {move.move_id} is not awaited (answered, timed out or unknown)")

    def _reject(self, move: gw.Move, code: int, reason: str) -> None:
        self.send(gw.RefereeMessage(move_rejected=gw.MoveRejected(
            table_id=move.table_id, game_index=move.game_index, move_id=move.move_id,
            code=code, reason=reason)))


class SessionRegistry:
    """Every open bot stream and every running table of this referee process."""

    def __init__(self) -> None:
        self.sessions: dict[str, list[BotSession]] = {}
        self.tables: dict[str, TableRunner] = {}
        self._changed = asyncio.Event()

    def _notify(self) -> None:
        self._changed.set()
        self._changed = asyncio.Event()

    def add(self, session: BotSession) -> list[RemoteParticipant]:
        """Register a new stream; return the seats of running tables it resumes."""
        self.sessions.setdefault(session.bot_id, []).append(session)
        resumed = []
        for runner in list(self.tables.values()):
            for participant in runner.remote_participants():
                if (participant.bot_id == session.bot_id and participant.session is None
                        and participant.attached_once and not participant.forfeited):
                    resumed.append(participant)
        for participant in resumed:
            participant.attach(session, resumed=True)
        self._notify()
        return resumed

    def remove(self, session: BotSession) -> None:
        session.close()
        streams = self.sessions.get(session.bot_id, [])
        if session in streams:
            streams.remove(session)
            if not streams:
                del self.sessions[session.bot_id]
        for bound in list(session.seats.values()):
            for participant in list(bound):
                participant.detach(session)
        session.seats.clear()
        self._notify()

    def released(self) -> None:
        """A table freed capacity on some stream."""
        self._notify()

    def find_stream(self, bot_id: str, table_id: str) -> BotSession | None:
        candidates = [s for s in self.sessions.get(bot_id, ()) if s.has_room(table_id)]
        if not candidates:
            return None
        # Prefer the stream already playing this table, then the least loaded one.
        return min(candidates, key=lambda s: (table_id not in s.seats, len(s.seats)))

    async def wait_for(self, predicate: Callable[[], Any], timeout: float) -> Any:
        """Wait until predicate() is truthy (re-checked on every registry change)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            result = predicate()
            if result:
                return result
            remaining = deadline - loop.time()
            if remaining <= 0:
                return result
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._changed.wait(), remaining)

    def connected_bots(self) -> list[dict[str, Any]]:
        bots = []
        for bot_id, streams in sorted(self.sessions.items()):
            if not streams:
                continue
            first = min(streams, key=lambda s: s.connected_at)
            bots.append({
                "bot_id": bot_id,
                "bot_name": first.bot_name,
                "bot_version": first.bot_version,
                "streams": len(streams),
                "max_tables": sum(s.max_tables for s in streams),
                "active_tables": sum(len(s.seats) for s in streams),
                "connected_since_unix_ms": int(first.connected_at * 1000),
            })
        return bots
