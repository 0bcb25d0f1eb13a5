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
import logging
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from bots_sdk.protocol.tienlen.v1 import bot_gateway_pb2 as gw
from referee_service.ratelimit import TokenBucket

if TYPE_CHECKING:
    from referee_service.remote_seat import RemoteParticipant
    from referee_service.table import TableRunner

log = logging.getLogger("referee_service.sessions")

#: Per-bot limits (a bot = one registered token identity), whatever its number of streams.
DEFAULT_MAX_STREAMS_PER_BOT = 4
DEFAULT_MAX_TABLES_PER_BOT = 64
DEFAULT_RATE_LIMIT = 50
#: Tables whose move-id offsets a referee remembers for a resumed run (see
#: SessionRegistry.move_id_bases_of).
MAX_REMEMBERED_TABLES = 100_000


def _session_id() -> str:
    # Random, not a counter: a counter would tell a bot how many streams other bots
    # opened between two of its own connections.
    return "s-" + secrets.token_hex(8)


class StreamLimitError(Exception):
    """A bot already has as many open streams as the referee allows."""


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
    session_id: str = field(default_factory=_session_id)
    connected_at: float = field(default_factory=time.time)
    outbox: asyncio.Queue[bytes | None] = field(default_factory=asyncio.Queue)
    # table_id -> the seats this stream plays at that table
    seats: dict[str, list[RemoteParticipant]] = field(default_factory=dict)
    closed: bool = False
    draining: bool = False
    context: Any = None  # the stream's grpc context while it is open
    # shared by all streams of the bot (SessionRegistry.add replaces this one)
    bucket: TokenBucket = field(default_factory=lambda: TokenBucket(DEFAULT_RATE_LIMIT))
    write_lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    max_outbox: int = 4096
    overflowed: bool = False  # closed because the bot stopped reading its stream
    task: asyncio.Task[None] | None = None  # the stream's handler, cancelled on overflow
    token_digest: str = ""  # SHA-256 of the token it was welcomed with (never the token)

    def send(self, message: gw.RefereeMessage) -> None:
        """Queue a message for the bot; dropped silently once the stream is closed."""
        if not self.closed:
            self.outbox.put_nowait(message.SerializeToString())
            if self.outbox.qsize() > self.max_outbox:
                self._overflow()

    def _overflow(self) -> None:
        """The bot is not reading what it asked for (e.g. flooding pings and never taking
        the pongs): close the stream rather than buffer without limit."""
        if self.overflowed:
            return
        self.overflowed = True
        log.warning("stream not read", extra={"event": "stream_overflow",
                                              "bot_id": self.bot_id,
                                              "session": self.session_id})
        self.close()
        # Its writer may be stuck in a write that gRPC's flow control never lets finish.
        if self.task is not None and self.task is not asyncio.current_task():
            self.task.cancel()

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
            if self.outbox.qsize() > self.max_outbox:
                self._overflow()
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

    def _reject(self, move: gw.Move, code: gw.MoveErrorCode.ValueType, reason: str) -> None:
        """A misaddressed answer: name the request this bot is being asked at that table,
        if any (its ids, the time and attempts it really has left), so answering the
        rejection's move_id, as for an illegal move, answers what is awaited; the ids
        the bot sent are echoed in sent_*."""
        rejected = gw.MoveRejected(table_id=move.table_id, game_index=move.game_index,
                                   move_id=move.move_id, code=code, reason=reason,
                                   sent_game_index=move.game_index,
                                   sent_move_id=move.move_id)
        for participant in self.seats.get(move.table_id, ()):
            pending = participant.pending
            if pending is not None:
                loop = asyncio.get_running_loop()
                rejected.game_index = pending.game_index
                rejected.move_id = pending.move_id
                rejected.time_left_ms = max(0, int((pending.deadline - loop.time()) * 1000))
                rejected.attempts_left = max(0, pending.attempts_left)
        self.send(gw.RefereeMessage(move_rejected=rejected))


class SessionRegistry:
    """Every open bot stream and every running table of this referee process.

    Also where the per-bot limits hold: however many streams a bot opens, it gets at most
    `max_streams_per_bot` of them, `max_tables_per_bot` tables at once across them, and
    one message allowance (`rate_limit` per second) shared by them."""

    def __init__(self, *, max_streams_per_bot: int = DEFAULT_MAX_STREAMS_PER_BOT,
                 max_tables_per_bot: int = DEFAULT_MAX_TABLES_PER_BOT,
                 rate_limit: int = DEFAULT_RATE_LIMIT) -> None:
        self.sessions: dict[str, list[BotSession]] = {}
        self.tables: dict[str, TableRunner] = {}
        # table id -> the move-id offsets its runs drew (table.new_move_id_base), kept
        # until a run completes it: a resumed run never reuses an aborted run's ids.
        self.move_id_bases: dict[str, set[int]] = {}
        self.max_streams_per_bot = max_streams_per_bot
        self.max_tables_per_bot = max_tables_per_bot
        self.rate_limit = rate_limit
        # Kept after a bot's last stream closes, so reconnecting never refills it.
        self.buckets: dict[str, TokenBucket] = {}
        # token digest -> (bot id, open streams welcomed with it)
        self._tokens: dict[str, tuple[str, int]] = {}
        self._changed = asyncio.Event()
        # Called on every change of streams or free slots (the pool heartbeat reports early).
        self.listeners: list[Callable[[], None]] = []

    def move_id_bases_of(self, table_id: str) -> set[int]:
        """The move-id offsets earlier runs of `table_id` drew here (to be added to). The
        tables remembered are capped: the oldest of those never completed (abandoned)
        are forgotten first."""
        bases = self.move_id_bases.get(table_id)
        if bases is None:
            if len(self.move_id_bases) >= MAX_REMEMBERED_TABLES:
                del self.move_id_bases[next(iter(self.move_id_bases))]
            bases = self.move_id_bases[table_id] = set()
        return bases

    def _notify(self) -> None:
        self._changed.set()
        self._changed = asyncio.Event()
        for listener in self.listeners:
            listener()

    def add(self, session: BotSession) -> list[RemoteParticipant]:
        """Register a new stream; return the seats of running tables it resumes.

        StreamLimitError when the bot already has `max_streams_per_bot` open streams. No
        await between the check and the registration, so concurrent Hellos cannot both
        take the last place."""
        full = self._streams_full(session.bot_id)
        if full is not None:
            raise StreamLimitError(full)
        if session.token_digest:
            _, count = self._tokens.get(session.token_digest, (session.bot_id, 0))
            self._tokens[session.token_digest] = (session.bot_id, count + 1)
        bucket = self.buckets.get(session.bot_id)
        if bucket is None:
            bucket = self.buckets[session.bot_id] = TokenBucket(self.rate_limit)
        session.bucket = bucket
        session.max_tables = min(session.max_tables, self.max_tables_per_bot)
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

    def _streams_full(self, bot_id: str) -> str | None:
        streams = self.sessions.get(bot_id, ())
        if len(streams) < self.max_streams_per_bot:
            return None
        return (f"bot {bot_id!r} already has {len(streams)} open streams, the most this "
                "referee allows per bot; play more tables per stream (Hello.max_tables) "
                "instead of opening more streams")

    def stream_limit_error(self, token_digest: str) -> str | None:
        """The refusal for a token whose bot is at its stream limit, if it is: known
        without the token store, from the streams that token opened."""
        known = self._tokens.get(token_digest)
        return None if known is None else self._streams_full(known[0])

    def remove(self, session: BotSession) -> None:
        session.close()
        known = self._tokens.get(session.token_digest)
        if known is not None and session in self.sessions.get(session.bot_id, ()):
            if known[1] <= 1:
                del self._tokens[session.token_digest]
            else:
                self._tokens[session.token_digest] = (known[0], known[1] - 1)
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

    def seated(self) -> None:
        """A table took its seats (free slots changed: the pool heartbeat reports it)."""
        for listener in self.listeners:
            listener()

    def find_stream(self, bot_id: str, table_id: str) -> BotSession | None:
        streams = self.sessions.get(bot_id, ())
        candidates = [s for s in streams if s.has_room(table_id)]
        if not candidates:
            return None
        playing = [s for s in candidates if table_id in s.seats]
        if playing:
            return playing[0]
        if self.active_tables(bot_id) >= self.max_tables_per_bot:
            return None  # the bot's allowance, not its streams' sum, is the limit
        return min(candidates, key=lambda s: len(s.seats))

    def active_tables(self, bot_id: str) -> int:
        return sum(len(s.seats) for s in self.sessions.get(bot_id, ()))

    def bot_max_tables(self, bot_id: str) -> int:
        """Tables the bot may play at once: its streams' capacity, capped per bot."""
        offered = sum(s.max_tables for s in self.sessions.get(bot_id, ()))
        return min(offered, self.max_tables_per_bot)

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
                async with asyncio.timeout(remaining):
                    await self._changed.wait()

    def bot_slots(self) -> dict[str, tuple[int, int, str]]:
        """Per connected bot: (free table slots, tables playing here, version). Free
        slots are what its open streams still take (Hello.max_tables or Capacity, minus
        the tables they play), capped by the per-bot allowance."""
        slots = {}
        for bot_id, streams in self.sessions.items():
            if not streams:
                continue
            room = sum(max(0, s.max_tables - len(s.seats)) for s in streams
                       if not s.closed and not s.draining)
            active = self.active_tables(bot_id)
            free = max(0, min(room, self.max_tables_per_bot - active))
            first = min(streams, key=lambda s: s.connected_at)
            slots[bot_id] = (free, active, first.bot_version)
        return slots

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
                "max_tables": self.bot_max_tables(bot_id),
                "active_tables": self.active_tables(bot_id),
                "connected_since_unix_ms": int(first.connected_at * 1000),
            })
        return bots
