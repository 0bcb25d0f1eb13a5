"""The gRPC bot client: connects a Bot class to the referee and keeps it playing.

One stream per referee carries every table this process plays there (docs/protocol.md);
given one referee of a pool, the client finds the others from its `RefereePool` messages
and keeps a stream to each live one, so a bot owner runs one process with one address
however many referees the platform runs. The client never lets
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
import hashlib
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
from bots_sdk.pacing import RELEASE_CLOCK
from bots_sdk.protocol.tienlen.v1 import bot_gateway_pb2 as gw
from bots_sdk.wire import HistoryCache, game_info, game_result, move_message, view_from_proto

__all__ = ["PROTOCOL_VERSION", "BotClient", "ClientError", "parse_target", "referee_socket_map",
           "referee_socket_name"]

log = logging.getLogger("bots_sdk.client")

PROTOCOL_VERSION = 1
#: The longest answer hold `min_answer_ms` may ask for (a minute: any move clock is shorter)
MAX_MIN_ANSWER_MS = 60_000
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
    """Validate HOST:PORT (or unix:PATH, a local socket: how a bot hosted by the platform
    reaches its referee, docs/hosting.md) early, so a typo is a one-line error, not a hung
    connection."""
    if server.startswith("unix:"):
        if not server[len("unix:"):].strip("/"):
            raise ClientError(f"--server unix:PATH needs a socket path, got {server!r}")
        return server
    host, sep, port = server.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ClientError(f"--server must be HOST:PORT or unix:PATH, got {server!r}")
    return server


def referee_socket_name(address: str) -> str:
    """The file name of the local socket that reaches the referee at `address` (HOST:PORT as
    a referee pool lists it), in the directory a hosted bot is given: the platform's relay
    and the client agree on it, so a hosted bot follows the pool with no network of its own
    (docs/hosting.md, "How a hosted bot reaches the referee")."""
    return hashlib.sha256(address.encode()).hexdigest()[:16] + ".sock"


def referee_socket_map(directory: str) -> Callable[[str], str]:
    """An `address_map` for BotClient: each address a referee pool lists becomes the local
    socket for it in `directory` (unix:DIR/NAME, see referee_socket_name)."""
    base = directory.rstrip("/")
    return lambda address: f"unix:{base}/{referee_socket_name(address)}"


@dataclass
class _TableState:
    table_id: str
    bot: Bot
    seat: int
    players: int
    preset: str
    link: RefereeLink  # the stream (referee) that plays this table now
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
    """Plays `bot_factory()` instances (one per table) on a referee, or on every referee of
    its pool.

    Given one referee's address, the client opens one stream there; if that referee is in
    a pool it lists the pool's referees (`RefereePool`), and the client keeps one stream to
    each live one, following referees as they join and leave, and shares `max_tables`
    between them (each stream is told the capacity the others leave free). A table is
    played on one stream at a time: a table resumed on another referee (its referee died)
    moves there with its bot instance.

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
        follow_pool: bool = True,
        min_answer_ms: int | None = None,
        address_map: Callable[[str], str] | None = None,
    ) -> None:
        if not token:
            raise ClientError("no bot token: pass --token or set TIENLEN_TOKEN")
        if min_answer_ms is not None and not 0 <= min_answer_ms <= MAX_MIN_ANSWER_MS:
            raise ClientError(f"min_answer_ms must be 0..{MAX_MIN_ANSWER_MS}, got {min_answer_ms}")
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
        # Hold each answer until this long after its request (None: the bot's own
        # `min_answer_ms`), so the seat's timing says nothing about its hand.
        self.min_answer_ms = min_answer_ms
        self.stop_when_idle = stop_when_idle
        # False: stay on the given referee even if it lists a pool.
        self.follow_pool = follow_pool
        # Where to dial a referee the pool lists (its address as listed -> a target), for
        # a bot that reaches referees through local sockets (referee_socket_map); None:
        # dial the listed address itself.
        self.address_map = address_map
        # keepalive_ms: ping interval; keep the default, which the referee expects
        self.channel_options = [*client_keepalive_options(keepalive_ms), MAX_RECEIVE]
        self.stats = ClientStats()
        self.errors = ErrorTally()
        self.tables: dict[str, _TableState] = {}
        self.links: list[RefereeLink] = []  # one per referee; links[0] is the given address
        # Spare threads: a play() that overran its time keeps its thread until it returns,
        # and must not make the next moves wait behind it.
        self._executor = ThreadPoolExecutor(
            max_workers=2 * self.max_tables + 2, thread_name_prefix="bot-play"
        )
        self._stopping = False
        self._force = False
        self._stop_event: asyncio.Event | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._links_changed: asyncio.Event | None = None
        self.connected: asyncio.Event | None = None  # the first stream's (run() creates it)

    # ------------------------------------------------------------------ compatibility
    @property
    def welcome(self) -> Any:
        """The given referee's Welcome (the first stream's)."""
        return self.links[0].welcome if self.links else None

    @property
    def _call(self) -> Any:
        return self.links[0].call if self.links else None

    # ------------------------------------------------------------------ lifecycle
    def stop(self, force: bool = False) -> None:
        """Ask the client to leave: finish the running tables (or not, with force)."""
        self._stopping = True
        self._force = self._force or force
        if self._stop_event is not None:
            self._stop_event.set()
        for link in self.links:
            link.wake.set()

    async def run(self) -> None:
        self._stop_event = asyncio.Event()
        self._links_changed = asyncio.Event()
        seed = self._add_link(self.target, seed=True)
        self.connected = seed.connected
        try:
            while True:
                running = {link.task for link in self.links if link.task is not None}
                if not running:
                    return
                changed = asyncio.ensure_future(self._links_changed.wait())
                done, _ = await asyncio.wait({*running, changed},
                                             return_when=asyncio.FIRST_COMPLETED)
                changed.cancel()
                self._links_changed.clear()
                for task in done - {changed}:
                    task.result()  # the given referee's ClientError ends the client
                    for link in [x for x in self.links if x.task is task]:
                        link.task = None
                        if not link.seed:
                            self.links.remove(link)
                self._pool_changed()
        finally:
            for link in self.links:
                if link.task is not None:
                    link.task.cancel()
            for task in list(self._tasks):
                task.cancel()
            self._executor.shutdown(wait=False, cancel_futures=True)

    def _add_link(self, target: str, *, seed: bool = False, expected_id: str = "") -> RefereeLink:
        link = RefereeLink(self, target, seed=seed, expected_id=expected_id)
        self.links.append(link)
        link.task = asyncio.ensure_future(link.run())
        if self._links_changed is not None:
            self._links_changed.set()
        return link

    def _fails_fast(self) -> bool:
        return not (self.ever_welcomed or self.retry_first_connection or self._stopping)

    def _channel(self, target: str) -> grpc.aio.Channel:
        if self.credentials:
            return grpc.aio.secure_channel(target, self.credentials, options=self.channel_options)
        return grpc.aio.insecure_channel(target, options=self.channel_options)

    # ------------------------------------------------------------------ the pool
    def _pool_changed(self) -> None:
        """Follow the pool: one stream per live referee (the union of what the connected
        referees list, so one referee's late heartbeat does not flap the list); streams to
        referees no longer listed finish their tables and close."""
        if not self.follow_pool or self._stopping:
            return
        members: dict[str, str] = {}
        for link in self.links:
            if link.connected.is_set():
                for referee_id, address in link.view:
                    members.setdefault(referee_id, address)
        if not members:
            return  # no pool (or no stream up right now): change nothing
        live = [link for link in self.links if not link.retired]
        known: dict[str, RefereeLink] = {}
        for link in live:
            key = link.referee_id or link.expected_id
            if not key:
                continue
            if key in known:
                # Two streams to one referee (the given address is also a listed one):
                # keep the given one, or the older.
                extra = link if not link.seed else known[key]
                known[key] = known[key] if extra is link else link
                extra.retire("another stream already reaches this referee")
            else:
                known[key] = link
        for referee_id, address in sorted(members.items()):
            if referee_id not in known:
                target = self.address_map(address) if self.address_map else address
                log.info("pool: connecting to referee %s at %s%s", referee_id, address,
                         f" through {target}" if target != address else "")
                self._add_link(target, expected_id=referee_id)
        for link in live:
            key = link.referee_id or link.expected_id
            if not link.seed and not link.retired and key and key not in members:
                link.retire("it left the pool")

    def _capacity_changed(self) -> None:
        """Each pool stream may start the tables the others leave free, so the process
        never plays more than max_tables at once (two referees seating it in the same
        instant aside)."""
        total = len(self.tables)
        for link in self.links:
            if not (link.referee_id and link.connected.is_set()):
                continue  # a referee outside any pool: Hello.max_tables stands
            offer = max(0, self.max_tables - (total - len(link.tables())))
            if offer != link.offered:
                log.debug("capacity: %r may start %d table(s) (%d running in the process, "
                          "%d of them there)", link, offer, total, len(link.tables()))
                link.offered = offer
                self._spawn(link.write(gw.BotMessage(capacity=gw.Capacity(max_tables=offer))))

    def _table_done(self, link: RefereeLink) -> None:
        self._capacity_changed()
        if (self._stopping or link.retired) and not link.tables():
            link.wake.set()

    # ------------------------------------------------------------------ messages
    async def _dispatch(self, link: RefereeLink, kind: str | None, body: Any) -> None:
        if kind == "table_start":
            await self._on_table_start(link, body)
        elif kind == "game_start":
            await self._on_game_start(link, body)
        elif kind == "move_request":
            self._spawn(self._on_move_request(link, body))
        elif kind == "move_rejected":
            await self._on_move_rejected(link, body)
        elif kind == "move_accepted":
            state = self._table(link, body.table_id)
            if state:
                state.pending.pop(body.move_id, None)
        elif kind == "strike":
            self._on_strike(link, body)
        elif kind == "game_end":
            await self._on_game_end(link, body)
        elif kind == "table_end":
            await self._on_table_end(link, body)
        elif kind == "error":
            level = logging.ERROR if body.fatal else logging.WARNING
            log.log(level, "referee error %s: %s", _enum_name(body, "code", body.code), body.reason)
        elif kind == "pong":
            pass

    def _spawn(self, coro: Any) -> None:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _table(self, link: RefereeLink, table_id: str) -> _TableState | None:
        """The table's state if `link` is the stream playing it (a referee the table
        moved away from has no say in it any more)."""
        state = self.tables.get(table_id)
        return state if state is not None and state.link is link else None

    async def _on_table_start(self, link: RefereeLink, m: Any) -> None:
        state = self.tables.get(m.table_id)
        if state is not None and state.link is link and m.resumed:
            log.info("table %s resumed (seat %d)", m.table_id, m.seat)
            return
        if state is not None and state.link is not link:
            # Its referee died or left: the platform resumed the table on another one of
            # the pool. The same table, so the same bot instance plays on, here.
            log.info("table %s moved from %r to %r (seat %d)", m.table_id, state.link, link,
                     m.seat)
            if state.link.connected.is_set():
                log.warning("table %s is also running on %r, which is still connected; "
                            "its requests there are answered too", m.table_id, state.link)
            state.link = link
            state.seat = m.seat
            state.pending.clear()
            state.where.clear()
            self._capacity_changed()
            return
        try:
            bot = self.bot_factory()
        except Exception as exc:  # keep the other tables going; answer this one safely
            log.error(
                "table %s: creating the bot failed (%s: %s); playing the fallback move there",
                m.table_id, type(exc).__name__, exc,
            )
            bot = _FallbackBot()
        state = _TableState(m.table_id, bot, m.seat, m.players, m.preset, link)
        self.tables[m.table_id] = state
        self._capacity_changed()
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

    async def _on_game_start(self, link: RefereeLink, m: Any) -> None:
        state = self._table(link, m.table_id)
        if state is None:
            return
        if state.game_index == m.game_index:
            return  # re-sent after a reconnection
        state.game_index = m.game_index
        state.seat = m.seat
        info = game_info(m)
        log.debug(
            "table %s, game %d: seat %d, hand %s", m.table_id, m.game_index + 1, m.seat,
            format_cards(info.hand),
        )
        await self._hook(state, "on_game_start", info)

    async def _on_move_request(self, link: RefereeLink, m: Any) -> None:
        arrived = time.monotonic()  # before decoding: that depends on the hand too
        state = self.tables.get(m.table_id)
        if state is None:
            log.warning("move request for unknown table %s ignored", m.table_id)
            return
        view = view_from_proto(
            m.view,
            history=state.history.decode(m.game_index, m.view.history),
            table_id=m.table_id,
            game_index=m.game_index,
            time_left_ms=m.time_left_ms,
            table_score=state.score,
        )
        label = state.where[m.move_id] = (
            f"table {m.table_id}, move {len(m.view.history) + 1} of game {m.game_index + 1}")
        started = time.perf_counter()
        budget_s = max(0.0, (m.time_left_ms - self._margin_ms(m.time_left_ms)) / 1000)
        hold_until = arrived + self._hold_s(state.bot, m.time_left_ms, label)
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
        if hold_until > time.monotonic():  # min_answer_ms: as long whatever the hand
            await RELEASE_CLOCK.until(hold_until)
        state.pending[m.move_id] = (view, cards)
        self.stats.moves += 1
        # Answered on the stream that asked, whichever stream plays the table now.
        await link.write(move_message(m.table_id, m.game_index, m.move_id, cards,
                                      min(thinking_us, 2**32 - 1)))

    async def _call_play(self, bot: Bot, view: View) -> Any:
        import inspect

        if inspect.iscoroutinefunction(bot.play):
            return await bot.play(view)
        if not getattr(bot, "threaded", True):
            return await call_hook(bot.play(view))
        loop = asyncio.get_running_loop()
        result = await loop.run_in_executor(self._executor, bot.play, view)
        return await call_hook(result)

    async def _on_move_rejected(self, link: RefereeLink, m: Any) -> None:
        state = self._table(link, m.table_id)
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
        await link.write(move_message(m.table_id, m.game_index, m.move_id, fallback, 0))

    def _on_strike(self, link: RefereeLink, m: Any) -> None:
        state = self._table(link, m.table_id)
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

    async def _on_game_end(self, link: RefereeLink, m: Any) -> None:
        state = self._table(link, m.table_id)
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

    async def _on_table_end(self, link: RefereeLink, m: Any) -> None:
        state = self._table(link, m.table_id)
        reason = _enum_name(m, "reason", m.reason)
        if state is None and m.table_id in self.tables:
            log.info("table %s ended on %r (%s), where it no longer plays: ignored",
                     m.table_id, link, reason)
            return
        if state is not None:
            del self.tables[m.table_id]
            self._table_done(link)
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

    def _hold_s(self, bot: Bot, time_left_ms: int, label: str) -> float:
        """How long after its request an answer leaves at the earliest: `min_answer_ms`,
        but never more than half the time left, so a loaded machine or a slow network
        still has the other half to deliver it."""
        asked = self.min_answer_ms
        if asked is None:
            asked = getattr(bot, "min_answer_ms", 0) or 0
        ms = max(0.0, min(float(asked), MAX_MIN_ANSWER_MS))
        if ms > time_left_ms / 2:
            count = self.errors.add("min_answer_ms over half the move clock", "")
            if _worth_a_line(count):
                log.warning("%s: min_answer_ms %d is more than half the %d ms left; holding "
                            "the answer %d ms%s", label, ms, time_left_ms, time_left_ms // 2,
                            _repeats(count))
            ms = time_left_ms / 2
        return ms / 1000

    def _margin_ms(self, time_left_ms: int) -> int:
        return min(self.safety_margin_ms + time_left_ms // 10, time_left_ms)


class RefereeLink:
    """One stream to one referee: connects, reconnects with backoff, and hands every
    message to the client with itself, so answers go back on the stream that asked."""

    def __init__(self, client: BotClient, target: str, *, seed: bool, expected_id: str = "") -> None:
        self.client = client
        self.target = target
        self.seed = seed  # the address the client was given (never dropped by the pool)
        self.expected_id = expected_id  # the pool's id for this address
        self.referee_id = ""  # from Welcome ("" outside a pool)
        self.welcome: Any = None
        self.view: list[tuple[str, str]] = []  # the pool as this referee last listed it
        self.call: Any = None
        self.write_lock = asyncio.Lock()
        self.connected = asyncio.Event()  # set while welcomed
        self.wake = asyncio.Event()  # stop() or retire(): look again
        self.retired = False  # out of the pool: finish its tables, then close for good
        self.offered: int | None = None  # the capacity the referee was last told
        self.task: asyncio.Task[None] | None = None

    def __repr__(self) -> str:
        return f"referee {self.referee_id or self.expected_id or '?'} at {self.target}"

    def tables(self) -> list[_TableState]:
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
        from bots_sdk.protocol.tienlen.v1 import bot_gateway_pb2_grpc

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
                if exc.code() in _FATAL_CODES:
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

    async def _session(self, stub: Any) -> bool:
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
                    if status in _FATAL_CODES:
                        refused = f"referee refused the connection: {status.name}: {await call.details()}"
                        if self.seed:
                            raise ClientError(refused)
                        log.error("%r: %s; not connecting to it again", self, refused)
                        self.retired = True
                    return welcomed
                kind = msg.WhichOneof("body")
                if kind == "welcome":
                    welcomed = client.ever_welcomed = True
                    self._on_welcome(msg.welcome)
                elif kind == "pool":
                    self.view = [(r.referee_id, r.address) for r in msg.pool.referees
                                 if r.referee_id and r.address]
                    client._pool_changed()
                else:
                    await client._dispatch(self, kind, getattr(msg, kind))
                if ((client._stopping or self.retired) and not self.tables()
                        and (leaving.goodbye_sent or self.retired)):
                    call.cancel()
                    return welcomed
                if (client.stop_when_idle and welcomed and not client.tables
                        and client.stats.tables_done):
                    client.stop()
        finally:
            watcher.cancel()

    def _on_welcome(self, welcome: Any) -> None:
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

    async def _watch_stop(self, call: Any, leaving: Leaving) -> None:
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

    async def write(self, message: Any) -> None:
        async with self.write_lock:
            with contextlib.suppress(grpc.aio.AioRpcError, asyncio.InvalidStateError,
                                     AttributeError):
                await self.call.write(message)
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
        return str(msg.DESCRIPTOR.fields_by_name[field_name].enum_type.values_by_number[value].name)
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
