"""What the client does with each message about a table: a table's and a game's start and
end (the bot's hooks), a move request (the bot's answer, in time, or the fallback the
referee would play), a rejected answer and a strike.

`TableMessages` is the part of `BotClient` (bots_sdk/client.py) that handles them; the
streams that carry them are `RefereeLink`s (bots_sdk/referee_link.py). Every handler takes
the generated message it handles (bots_sdk/protocol, typed by mypy-protobuf's stubs).
"""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
import time
from collections.abc import Callable, Coroutine
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from google.protobuf.message import Message

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
from bots_sdk.pacing import RELEASE_CLOCK
from bots_sdk.protocol.tienlen.v1 import bot_gateway_pb2 as gw
from bots_sdk.tally import ClientStats, ErrorTally, repeats, worth_a_line
from bots_sdk.wire import HistoryCache, game_info, game_result, move_message, view_from_proto

if TYPE_CHECKING:
    from bots_sdk.referee_link import RefereeLink

__all__ = ["MAX_MIN_ANSWER_MS", "TableMessages", "TableState"]

# The client's one logger, whichever of its modules writes (bots_sdk/client.py).
log = logging.getLogger("bots_sdk.client")

#: The longest answer hold `min_answer_ms` may ask for (a minute: any move clock is shorter)
MAX_MIN_ANSWER_MS = 60_000

# MoveRejected codes for answers the referee could not match to what it awaits
_MISADDRESSED = {gw.MOVE_ERROR_CODE_STALE_MOVE, gw.MOVE_ERROR_CODE_UNKNOWN_TABLE,
                 gw.MOVE_ERROR_CODE_WRONG_GAME}


@dataclass
class TableState:
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


class TableMessages:
    """The message handlers of `BotClient`, which provides the state declared here."""

    tables: dict[str, TableState]
    stats: ClientStats
    errors: ErrorTally
    bot_factory: Callable[[], Bot]
    min_answer_ms: int | None
    safety_margin_ms: int
    _executor: ThreadPoolExecutor
    _tasks: set[asyncio.Task[None]]

    def _capacity_changed(self) -> None:
        raise NotImplementedError  # BotClient's: the pool's share of max_tables

    def _table_done(self, link: RefereeLink) -> None:
        raise NotImplementedError  # BotClient's

    async def _dispatch(self, link: RefereeLink, kind: str | None,
                        msg: gw.RefereeMessage) -> None:
        """Hand `msg` (its body `kind`) to its handler; a move request runs in a task of
        its own, so the stream reads on while the bot thinks."""
        if kind == "table_start":
            await self._on_table_start(link, msg.table_start)
        elif kind == "game_start":
            await self._on_game_start(link, msg.game_start)
        elif kind == "move_request":
            self._spawn(self._on_move_request(link, msg.move_request))
        elif kind == "move_rejected":
            await self._on_move_rejected(link, msg.move_rejected)
        elif kind == "move_accepted":
            state = self._table(link, msg.move_accepted.table_id)
            if state:
                state.pending.pop(msg.move_accepted.move_id, None)
        elif kind == "strike":
            self._on_strike(link, msg.strike)
        elif kind == "game_end":
            await self._on_game_end(link, msg.game_end)
        elif kind == "table_end":
            await self._on_table_end(link, msg.table_end)
        elif kind == "error":
            level = logging.ERROR if msg.error.fatal else logging.WARNING
            log.log(level, "referee error %s: %s", _enum_name(msg.error, "code", msg.error.code),
                    msg.error.reason)

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _table(self, link: RefereeLink, table_id: str) -> TableState | None:
        """The table's state if `link` is the stream playing it (a referee the table
        moved away from has no say in it any more)."""
        state = self.tables.get(table_id)
        return state if state is not None and state.link is link else None

    async def _on_table_start(self, link: RefereeLink, m: gw.TableStart) -> None:
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
        state = TableState(m.table_id, bot, m.seat, m.players, m.preset, link)
        self.tables[m.table_id] = state
        self._capacity_changed()
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

    async def _on_game_start(self, link: RefereeLink, m: gw.GameStart) -> None:
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

    async def _on_move_request(self, link: RefereeLink, m: gw.MoveRequest) -> None:
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
        raw_ok = False
        try:
            async with asyncio.timeout(budget_s):  # no extra task, unlike wait_for
                raw = await self._call_play(state.bot, view)
            cards = normalize_move(raw)
            raw_ok = True
        except TimeoutError:
            cards = safe_move(view.can_pass, view.legal_plays())
            count = self.errors.add("play() too slow", "")
            if worth_a_line(count):
                log.warning(
                    "%s: play() took longer than the %d ms left; sending the fallback %s%s",
                    label, m.time_left_ms, _describe(cards), repeats(count),
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
            elif worth_a_line(count):
                log.warning(
                    "%s: play() raised %s at %s again%s; sending the fallback %s",
                    label, type(exc).__name__, site, repeats(count), _describe(cards),
                )
            self.stats.fallbacks += 1
        thinking_us = int((time.perf_counter() - started) * 1e6)
        if hold_until > time.monotonic():  # min_answer_ms: as long whatever the hand
            await RELEASE_CLOCK.until(hold_until)
        state.pending[m.move_id] = (view, cards)
        self.stats.moves += 1
        # Answered on the stream that asked, whichever stream plays the table now.
        # The note goes with the bot's own answer only, never with a fallback it did not choose.
        note = view.noted if raw_ok else None
        await link.write(move_message(m.table_id, m.game_index, m.move_id, cards,
                                      min(thinking_us, 2**32 - 1), note))

    async def _call_play(self, bot: Bot, view: View) -> Any:
        if inspect.iscoroutinefunction(bot.play):
            return await bot.play(view)
        if not getattr(bot, "threaded", True):
            return await call_hook(bot.play(view))
        loop = asyncio.get_running_loop()
        result = await loop.run_in_executor(self._executor, bot.play, view)
        return await call_hook(result)

    async def _on_move_rejected(self, link: RefereeLink, m: gw.MoveRejected) -> None:
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
        if worth_a_line(count):
            log.warning(
                "%s: illegal move %s: %s (%s); sending the fallback %s%s",
                state.move_label(m.move_id, m.game_index), _describe(sent), m.reason, code,
                _describe(fallback), repeats(count),
            )
        if fallback == sent or m.attempts_left == 0:
            return  # the referee plays the same fallback itself
        state.pending[m.move_id] = (view, fallback)
        self.stats.fallbacks += 1
        await link.write(move_message(m.table_id, m.game_index, m.move_id, fallback, 0))

    def _on_strike(self, link: RefereeLink, m: gw.Strike) -> None:
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

    async def _on_game_end(self, link: RefereeLink, m: gw.GameEnd) -> None:
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

    async def _on_table_end(self, link: RefereeLink, m: gw.TableEnd) -> None:
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

    async def _hook(self, state: TableState, name: str, arg: Any) -> None:
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
            if worth_a_line(count):
                log.warning("%s: min_answer_ms %d is more than half the %d ms left; holding "
                            "the answer %d ms%s", label, ms, time_left_ms, time_left_ms // 2,
                            repeats(count))
            ms = time_left_ms / 2
        return ms / 1000

    def _margin_ms(self, time_left_ms: int) -> int:
        return min(self.safety_margin_ms + time_left_ms // 10, time_left_ms)


class _FallbackBot(Bot):
    """Stands in when the author's class cannot be built: the referee's own fallback."""

    def play(self, view: View) -> tuple[Card, ...] | None:
        return safe_move(view.can_pass, view.legal_plays())


def _describe(cards: tuple[Card, ...] | None) -> str:
    return "pass" if cards is None else format_cards(cards)


def _enum_name(msg: Message, field_name: str, value: int) -> str:
    """The name of an enum value of `msg`, or the number when this SDK does not know it (a
    newer referee's)."""
    field = msg.DESCRIPTOR.fields_by_name.get(field_name)
    enum = field.enum_type if field is not None else None
    known = enum.values_by_number.get(value) if enum is not None else None
    return str(known.name) if known is not None else str(value)
