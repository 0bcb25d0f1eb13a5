"""The gRPC bot client: connects a Bot class to the referee and keeps it playing.

One stream carries every table of this process (docs/protocol.md). The client never lets
the bot's own failures end the process: an exception, a timeout or an illegal answer is
logged with the referee's reason and replaced by the fallback move the referee itself
would play (pass where allowed, else the weakest play), which spares the bot a strike
where that is still possible. A first connection that fails is reported at once (most
likely a wrong address); after one that worked, connection failures are retried with
exponential backoff, and the referee resumes our seats when we come back within its grace
period.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import signal
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc

from bots_sdk.bot import (
    Bot,
    GameInfo,
    GameResult,
    TableInfo,
    TableResult,
    View,
    call_hook,
    normalize_move,
    safe_move,
)
from bots_sdk.cards import Card, format_cards
from bots_sdk.keepalive import KEEPALIVE_TIME_MS, client_keepalive_options
from bots_sdk.protocol.tienlen.v1 import bot_gateway_pb2 as gw
from bots_sdk.wire import HistoryCache, game_result, move_message, seat_view_from_proto

__all__ = ["PROTOCOL_VERSION", "BotClient", "ClientError", "parse_target"]

log = logging.getLogger("bots_sdk.client")

PROTOCOL_VERSION = 1
SDK_NAME = "tienlen-python-sdk"
SDK_VERSION = "0.1.0"

MAX_RECEIVE = ("grpc.max_receive_message_length", 4 * 1024 * 1024)
# Keepalive agreeing with the referee's (bots_sdk/keepalive.py, docs/protocol.md).
CHANNEL_OPTIONS = [*client_keepalive_options(), MAX_RECEIVE]

# Errors after which retrying cannot help: the token or the request is wrong.
_FATAL_CODES = {
    grpc.StatusCode.UNAUTHENTICATED,
    grpc.StatusCode.PERMISSION_DENIED,
    grpc.StatusCode.INVALID_ARGUMENT,
    grpc.StatusCode.UNIMPLEMENTED,
}


# MoveRejected codes for answers the referee could not match to what it awaits
_MISADDRESSED = {gw.MOVE_ERROR_CODE_STALE_MOVE, gw.MOVE_ERROR_CODE_UNKNOWN_TABLE,
                 gw.MOVE_ERROR_CODE_WRONG_GAME}


class ClientError(Exception):
    """The client cannot go on (e.g. the token was refused); the message says why."""


def first_connection_error(target: str, code: grpc.StatusCode | None, details: str) -> str:
    """One line saying why the very first connection failed and what to check."""
    where = f"cannot connect to the referee at {target}"
    text = details or ""
    if "Connection refused" in text:
        return f"{where}: nothing accepts connections there (connection refused); check the host and port"
    if "resolving" in text or "lookup" in text or "Domain name not found" in text:
        host = target.rpartition(":")[0]
        return f"{where}: unknown host {host!r}"
    if "Failed parsing HTTP/2" in text or "HTTP/1" in text:
        return (
            f"{where}: that port answers, but not with gRPC (a web server?); the referee's port "
            "is the one `tienlen-referee --listen` serves (50051 by default), not the web site's"
        )
    if "ssl" in text.lower() or "handshake" in text.lower() or "tls" in text.lower():
        return f"{where}: the TLS handshake failed (is --tls right for this referee?): {text}"
    if code is None:
        return f"{where}: the referee closed the stream before welcoming the bot"
    return f"{where}: {code.name}: {text}"


def parse_target(server: str) -> str:
    """Validate HOST:PORT early so a typo is a one-line error, not a hung connection."""
    host, sep, port = server.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ClientError(f"--server must be HOST:PORT, got {server!r}")
    return server


@dataclass
class _TableState:
    table_id: str
    bot: Bot
    seat: int
    players: int
    preset: str
    game_index: int = -1
    score: int = 0  # this bot's points so far at the table
    strikes: int = 0
    illegal: int = 0
    # move_id -> (view, cards already sent) for answering a rejection with the fallback
    pending: dict[int, tuple[View, tuple[Card, ...] | None]] = field(default_factory=dict)
    history: HistoryCache = field(default_factory=HistoryCache)
    # move_id -> "move 17 of game 3" (the move's place in its game, as a replay numbers
    # it), for the log lines about that move: the move id itself counts the seat's
    # requests over the whole table, which says little to a reader
    where: dict[int, str] = field(default_factory=dict)

    def move_label(self, move_id: int, game_index: int) -> str:
        return self.where.get(move_id) or f"a move of game {game_index + 1}"


class ErrorTally:
    """Counts the bot's own failures by where they happened, so each distinct one is
    shown once in full (traceback: file and line) and its repeats are only counted."""

    def __init__(self) -> None:
        self.counts: dict[tuple[str, str], int] = {}

    @staticmethod
    def site(exc: BaseException) -> str:
        tb = exc.__traceback__
        while tb is not None and tb.tb_next is not None:
            tb = tb.tb_next
        if tb is None:
            return "?"
        return f"{Path(tb.tb_frame.f_code.co_filename).name}:{tb.tb_lineno}"

    def add(self, kind: str, where: str) -> int:
        """Count one more; return how many so far."""
        key = (kind, where)
        self.counts[key] = self.counts.get(key, 0) + 1
        return self.counts[key]

    def summary(self) -> str:
        return ", ".join(f"{kind} at {where} x{n}" if where else f"{kind} x{n}"
                         for (kind, where), n in sorted(self.counts.items()))


def _worth_a_line(count: int) -> bool:
    """Repeats are reported at 2, 4, 8, 16, ... times."""
    return count & (count - 1) == 0


@dataclass
class ClientStats:
    moves: int = 0
    rejected: int = 0
    fallbacks: int = 0
    strikes: int = 0
    tables_done: int = 0
    games_done: int = 0
    reconnects: int = 0


class BotClient:
    """Plays `bot_factory()` instances (one per table) over one referee stream.

    `run()` returns when `stop()` was called and the running tables are finished (or at
    once when `stop(force=True)`), and raises ClientError when the referee refuses us."""

    def __init__(
        self,
        bot_factory: Callable[[], Bot],
        *,
        target: str,
        token: str,
        max_tables: int = 1,
        bot_name: str | None = None,
        bot_version: str | None = None,
        credentials: grpc.ChannelCredentials | None = None,
        reconnect: bool = True,
        backoff_initial_s: float = 0.5,
        backoff_max_s: float = 30.0,
        max_connect_attempts: int | None = None,
        retry_first_connection: bool = False,
        safety_margin_ms: int = 30,
        stop_when_idle: bool = False,
        keepalive_ms: int = KEEPALIVE_TIME_MS,
    ) -> None:
        if not token:
            raise ClientError("no bot token: pass --token or set TIENLEN_TOKEN")
        self.bot_factory = bot_factory
        self.target = target
        self.token = token
        self.max_tables = max(1, max_tables)
        probe = bot_factory if isinstance(bot_factory, type) else type(bot_factory())
        self.bot_name = bot_name or getattr(probe, "display_name", lambda: probe.__name__)()
        self.bot_version = bot_version or getattr(probe, "version", "0")
        self.credentials = credentials
        self.reconnect = reconnect
        self.backoff_initial_s = backoff_initial_s
        self.backoff_max_s = backoff_max_s
        self.max_connect_attempts = max_connect_attempts
        # Until a first Welcome, a failure is most likely a wrong address: say so at once
        # instead of retrying forever (unless asked to wait for a referee still starting).
        self.retry_first_connection = retry_first_connection
        self.ever_welcomed = False
        self.safety_margin_ms = safety_margin_ms
        self.stop_when_idle = stop_when_idle
        # keepalive_ms: ping interval; keep the default, which the referee expects
        self.channel_options = [*client_keepalive_options(keepalive_ms), MAX_RECEIVE]
        self.stats = ClientStats()
        self.errors = ErrorTally()
        self.tables: dict[str, _TableState] = {}
        self.welcome: Any = None
        # Spare threads: a play() that overran its time keeps its thread until it returns,
        # and must not make the next moves wait behind it.
        self._executor = ThreadPoolExecutor(
            max_workers=2 * self.max_tables + 2, thread_name_prefix="bot-play"
        )
        self._stopping = False
        self._force = False
        self._stop_event: asyncio.Event | None = None
        self._call: Any = None
        self._write_lock: asyncio.Lock | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self.connected: asyncio.Event | None = None  # set while welcomed (run() creates it)

    # ------------------------------------------------------------------ lifecycle
    def stop(self, force: bool = False) -> None:
        """Ask the client to leave: finish the running tables (or not, with force)."""
        self._stopping = True
        self._force = self._force or force
        if self._stop_event is not None:
            self._stop_event.set()

    async def run(self) -> None:
        from bots_sdk.protocol.tienlen.v1 import bot_gateway_pb2_grpc

        self._stop_event = asyncio.Event()
        self._write_lock = asyncio.Lock()
        self.connected = asyncio.Event()
        attempt = 0
        delay = self.backoff_initial_s
        try:
            while True:
                attempt += 1
                channel = (
                    grpc.aio.secure_channel(self.target, self.credentials, options=self.channel_options)
                    if self.credentials
                    else grpc.aio.insecure_channel(self.target, options=self.channel_options)
                )
                try:
                    stub = bot_gateway_pb2_grpc.BotGatewayStub(channel)
                    welcomed = await self._session(stub)
                    if welcomed:
                        attempt, delay = 0, self.backoff_initial_s
                    elif self._fails_fast():
                        raise ClientError(first_connection_error(self.target, None, ""))
                except grpc.aio.AioRpcError as exc:
                    if exc.code() in _FATAL_CODES:
                        raise ClientError(
                            f"referee refused the connection: {exc.code().name}: {exc.details()}"
                        ) from None
                    if self._fails_fast():
                        raise ClientError(
                            first_connection_error(self.target, exc.code(), exc.details() or "")
                        ) from None
                    log.warning(
                        "connection to %s lost: %s: %s", self.target, exc.code().name, exc.details()
                    )
                finally:
                    self.connected.clear()
                    await channel.close(grace=None)
                if self._stopping:
                    # Running tables cannot be finished without a stream: the referee plays
                    # the fallback for our seats from here.
                    return
                if not self.reconnect:
                    raise ClientError(f"connection to {self.target} closed")
                if self.max_connect_attempts and attempt >= self.max_connect_attempts:
                    raise ClientError(
                        f"cannot reach the referee at {self.target} after {attempt} attempts"
                    )
                wait = delay * (0.5 + random.random() / 2)
                log.info("reconnecting in %.1f s", wait)
                self.stats.reconnects += 1
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._stop_event.wait(), wait)
                if self._stopping and (self._force or not self.tables):
                    return
                delay = min(self.backoff_max_s, delay * 2)
        finally:
            for task in list(self._tasks):
                task.cancel()
            self._executor.shutdown(wait=False, cancel_futures=True)

    def _fails_fast(self) -> bool:
        return not (self.ever_welcomed or self.retry_first_connection or self._stopping)

    async def _session(self, stub: Any) -> bool:
        """One stream from Hello to its end. Returns whether the referee welcomed us."""
        call = stub.Connect()
        self._call = call
        hello = gw.Hello(
            token=self.token,
            bot_name=self.bot_name,
            bot_version=str(self.bot_version),
            max_tables=self.max_tables,
            protocol_version=PROTOCOL_VERSION,
            sdk_name=SDK_NAME,
            sdk_version=SDK_VERSION,
        )
        await self._write(gw.BotMessage(hello=hello))
        welcomed = False
        # One task watches for stop() for the whole stream, so reading a message is a plain
        # await on the call (a task and an asyncio.wait per message cost more CPU than the
        # rest of a move of a fast bot).
        leaving = Leaving()
        watcher = asyncio.ensure_future(self._watch_stop(call, gw, leaving))
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
                    if status in _FATAL_CODES:
                        raise ClientError(
                            f"referee refused the connection: {status.name}: {await call.details()}"
                        )
                    return welcomed
                kind = msg.WhichOneof("body")
                if kind == "welcome":
                    welcomed = self.ever_welcomed = True
                    self.welcome = msg.welcome
                    if self.tables and not msg.welcome.resumed_seats:
                        # Back too late: the referee gave our seats up (forfeit).
                        log.warning(
                            "reconnected, but no seat was resumed: dropping table(s) %s",
                            ", ".join(sorted(self.tables)),
                        )
                        self.tables.clear()
                    self.connected.set()  # type: ignore[union-attr]
                    log.info(
                        "connected to %s as %s (bot id %s; running %s %s; up to %d tables; "
                        "%d seats resumed)",
                        self.target,
                        msg.welcome.bot_name or self.bot_name,
                        msg.welcome.bot_id,
                        self.bot_name,
                        self.bot_version,
                        msg.welcome.max_tables,
                        msg.welcome.resumed_seats,
                    )
                else:
                    await self._dispatch(kind, getattr(msg, kind))
                if self._stopping and not self.tables and leaving.goodbye_sent:
                    call.cancel()
                    return welcomed
                if self.stop_when_idle and welcomed and not self.tables and self.stats.tables_done:
                    self.stop()
        finally:
            watcher.cancel()

    async def _watch_stop(self, call: Any, gw: Any, leaving: Leaving) -> None:
        """On stop(): leave at once (force, or no table running), else say Goodbye and let
        the read loop finish the running tables."""
        await self._stop_event.wait()  # type: ignore[union-attr]
        if self._force or not self.tables:
            leaving.now = True
            call.cancel()
            return
        log.info("stopping: finishing %d running table(s)", len(self.tables))
        leaving.goodbye_sent = True
        await self._write(gw.BotMessage(goodbye=gw.Goodbye(reason="client stopping")))

    async def _write(self, message: Any) -> None:
        assert self._write_lock is not None
        async with self._write_lock:
            with contextlib.suppress(grpc.aio.AioRpcError, asyncio.InvalidStateError):
                await self._call.write(message)

    # ------------------------------------------------------------------ messages
    async def _dispatch(self, kind: str | None, body: Any) -> None:
        if kind == "table_start":
            await self._on_table_start(body)
        elif kind == "game_start":
            await self._on_game_start(body)
        elif kind == "move_request":
            self._spawn(self._on_move_request(body))
        elif kind == "move_rejected":
            await self._on_move_rejected(body)
        elif kind == "move_accepted":
            state = self.tables.get(body.table_id)
            if state:
                state.pending.pop(body.move_id, None)
        elif kind == "strike":
            self._on_strike(body)
        elif kind == "game_end":
            await self._on_game_end(body)
        elif kind == "table_end":
            await self._on_table_end(body)
        elif kind == "error":
            level = logging.ERROR if body.fatal else logging.WARNING
            log.log(level, "referee error %s: %s", _enum_name(body, "code", body.code), body.reason)
        elif kind == "pong":
            pass

    def _spawn(self, coro: Any) -> None:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _on_table_start(self, m: Any) -> None:
        state = self.tables.get(m.table_id)
        if state is not None and m.resumed:
            log.info("table %s resumed (seat %d)", m.table_id, m.seat)
            return
        try:
            bot = self.bot_factory()
        except Exception as exc:  # keep the other tables going; answer this one safely
            log.error(
                "table %s: creating the bot failed (%s: %s); playing the fallback move there",
                m.table_id, type(exc).__name__, exc,
            )
            bot = _FallbackBot()
        state = _TableState(m.table_id, bot, m.seat, m.players, m.preset)
        self.tables[m.table_id] = state
        import json

        try:
            options = json.loads(m.options_json) if m.options_json else {}
        except ValueError:
            options = {}
        log.info(
            "table %s: seat %d of %d, preset %s, %d games%s, %d ms per move",
            m.table_id,
            m.seat,
            m.players,
            m.preset,
            m.games,
            " (duplicate)" if m.duplicate else "",
            m.move_time_ms,
        )
        info = TableInfo(
            table_id=m.table_id,
            seat=m.seat,
            players=m.players,
            preset=m.preset,
            options=options,
            games=m.games or None,
            move_time_ms=m.move_time_ms or None,
        )
        await self._hook(state, "on_table_start", info)

    async def _on_game_start(self, m: Any) -> None:
        state = self.tables.get(m.table_id)
        if state is None:
            return
        if state.game_index == m.game_index:
            return  # re-sent after a reconnection
        state.game_index = m.game_index
        state.seat = m.seat
        hand = tuple(Card.from_index(i) for i in m.hand)
        log.debug(
            "table %s, game %d: seat %d, hand %s", m.table_id, m.game_index + 1, m.seat, format_cards(hand)
        )
        info = GameInfo(
            table_id=m.table_id,
            game_index=m.game_index,
            seat=m.seat,
            hand=hand,
            starting=m.starting,
            leader=m.leader if m.HasField("leader") else None,
        )
        await self._hook(state, "on_game_start", info)

    async def _on_move_request(self, m: Any) -> None:
        state = self.tables.get(m.table_id)
        if state is None:
            log.warning("move request for unknown table %s ignored", m.table_id)
            return
        view = View(
            seat_view_from_proto(m.view, history=state.history.decode(m.game_index, m.view.history)),
            table_id=m.table_id,
            game_index=m.game_index,
            time_left_ms=m.time_left_ms,
            table_score=state.score,
        )
        label = state.where[m.move_id] = (
            f"table {m.table_id}, move {len(m.view.history) + 1} of game {m.game_index + 1}")
        started = time.perf_counter()
        budget_s = max(0.0, (m.time_left_ms - self._margin_ms(m.time_left_ms)) / 1000)
        cards: tuple[Card, ...] | None
        try:
            async with asyncio.timeout(budget_s):  # no extra task, unlike wait_for
                raw = await self._call_play(state.bot, view)
            cards = normalize_move(raw)
        except TimeoutError:
            cards = safe_move(view.can_pass, view.legal_plays())
            count = self.errors.add("play() too slow", "")
            if _worth_a_line(count):
                log.warning(
                    "%s: play() took longer than the %d ms left; sending the fallback %s%s",
                    label, m.time_left_ms, _describe(cards), _repeats(count),
                )
            self.stats.fallbacks += 1
        except Exception as exc:  # the bot's bug must not end the process
            cards = safe_move(view.can_pass, view.legal_plays())
            site = ErrorTally.site(exc)
            count = self.errors.add(f"play() raised {type(exc).__name__}", site)
            if count == 1:
                log.error(
                    "%s: play() raised %s: %s (at %s); sending the fallback %s; further errors "
                    "at the same line are only counted",
                    label, type(exc).__name__, exc, site, _describe(cards), exc_info=exc,
                )
            elif _worth_a_line(count):
                log.warning(
                    "%s: play() raised %s at %s again%s; sending the fallback %s",
                    label, type(exc).__name__, site, _repeats(count), _describe(cards),
                )
            self.stats.fallbacks += 1
        thinking_us = int((time.perf_counter() - started) * 1e6)
        state.pending[m.move_id] = (view, cards)
        self.stats.moves += 1
        await self._write(move_message(m.table_id, m.game_index, m.move_id, cards, min(thinking_us, 2**32 - 1)))

    async def _call_play(self, bot: Bot, view: View) -> Any:
        import inspect

        if inspect.iscoroutinefunction(bot.play):
            return await bot.play(view)
        if not getattr(bot, "threaded", True):
            return await call_hook(bot.play(view))
        loop = asyncio.get_running_loop()
        result = await loop.run_in_executor(self._executor, bot.play, view)
        return await call_hook(result)

    async def _on_move_rejected(self, m: Any) -> None:
        state = self.tables.get(m.table_id)
        code = _enum_name(m, "code", m.code)
        if m.code in _MISADDRESSED or state is None or m.move_id not in state.pending:
            # an answer that arrived late (its move was already played for us) or for
            # another game: ignored by the referee, no penalty
            log.warning("referee ignored an answer to move id %d (%s): %s",
                        m.sent_move_id or m.move_id, code, m.reason)
            return
        self.stats.rejected += 1
        state.illegal += 1
        view, sent = state.pending[m.move_id]
        fallback = safe_move(view.can_pass, view.legal_plays())
        count = self.errors.add(f"illegal move ({code})", "")
        if _worth_a_line(count):
            log.warning(
                "%s: illegal move %s: %s (%s); sending the fallback %s%s",
                state.move_label(m.move_id, m.game_index), _describe(sent), m.reason, code,
                _describe(fallback), _repeats(count),
            )
        if fallback == sent or m.attempts_left == 0:
            return  # the referee plays the same fallback itself
        state.pending[m.move_id] = (view, fallback)
        self.stats.fallbacks += 1
        await self._write(move_message(m.table_id, m.game_index, m.move_id, fallback, 0))

    def _on_strike(self, m: Any) -> None:
        state = self.tables.get(m.table_id)
        if state is not None:
            state.strikes = m.strikes
        self.stats.strikes += 1
        fallback = None if m.fallback_pass else tuple(Card.from_index(i) for i in m.fallback_cards)
        where = (state.move_label(m.move_id, m.game_index) if state is not None
                 else f"table {m.table_id}, a move of game {m.game_index + 1}")
        log.warning(
            "STRIKE %d/%d, %s: %s%s; the referee played %s%s",
            m.strikes, m.max_strikes, where,
            _enum_name(m, "reason", m.reason), f" ({m.detail})" if m.detail else "",
            _describe(fallback), " - seat forfeited" if m.forfeited else "",
        )

    async def _on_game_end(self, m: Any) -> None:
        state = self.tables.get(m.table_id)
        if state is None:
            return
        r = game_result(m.result)
        state.pending.clear()
        state.where.clear()
        self.stats.games_done += 1
        points = r["points"]
        if m.seat < len(points):
            state.score += points[m.seat]
        log.info(
            "table %s, game %d over: seat %d scored %+d (finishing order %s)",
            m.table_id, m.game_index + 1, m.seat, points[m.seat] if m.seat < len(points) else 0,
            list(r["finishing_order"]),
        )
        result = GameResult(
            table_id=m.table_id,
            game_index=m.game_index,
            seat=m.seat,
            finishing_order=r["finishing_order"],
            points=points,
            instant_winner=r["instant_winner"],
        )
        await self._hook(state, "on_game_end", result)

    async def _on_table_end(self, m: Any) -> None:
        state = self.tables.pop(m.table_id, None)
        reason = _enum_name(m, "reason", m.reason)
        self.stats.tables_done += 1
        log.info(
            "table %s ended (%s%s): %d games, totals %s, %d strikes",
            m.table_id, reason, f": {m.detail}" if m.detail else "", m.games_played,
            list(m.totals), state.strikes if state else 0,
        )
        if state is None:
            return
        result = TableResult(
            table_id=m.table_id,
            seat=state.seat,
            totals=tuple(m.totals),
            games_played=m.games_played,
            forfeited=reason.endswith("FORFEITED"),
        )
        await self._hook(state, "on_table_end", result)

    async def _hook(self, state: _TableState, name: str, arg: Any) -> None:
        try:
            await call_hook(getattr(state.bot, name)(arg))
        except Exception as exc:
            log.warning("table %s: %s() raised %s: %s", state.table_id, name, type(exc).__name__, exc)

    def _margin_ms(self, time_left_ms: int) -> int:
        return min(self.safety_margin_ms + time_left_ms // 10, time_left_ms)


@dataclass(slots=True)
class Leaving:
    """What stop() did to one stream: cancelled it now, or said Goodbye."""

    now: bool = False
    goodbye_sent: bool = False


class _FallbackBot(Bot):
    """Stands in when the author's class cannot be built: the referee's own fallback."""

    def play(self, view: View) -> tuple[Card, ...] | None:
        return safe_move(view.can_pass, view.legal_plays())


def _repeats(count: int) -> str:
    return f" ({count} times so far)" if count > 1 else ""


def _describe(cards: tuple[Card, ...] | None) -> str:
    return "pass" if cards is None else format_cards(cards)


def _enum_name(msg: Any, field_name: str, value: int) -> str:
    try:
        return msg.DESCRIPTOR.fields_by_name[field_name].enum_type.values_by_number[value].name
    except (KeyError, AttributeError):
        return str(value)


def install_signal_handlers(client: BotClient) -> None:
    """Ctrl-C once: finish running tables and leave; twice: leave now."""
    loop = asyncio.get_running_loop()

    def on_signal() -> None:
        if client._stopping:
            log.warning("second interrupt: leaving now")
            client.stop(force=True)
        else:
            log.warning("interrupt: finishing running tables (Ctrl-C again to leave now)")
            client.stop()

    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, on_signal)
