"""A registered bot's seat (`RemoteParticipant`): bound to one of the bot's streams (and
moved to a newer one, or forfeited after the disconnect grace), asked for each move until
it answers legally, runs out of time or attempts, and struck when it does not.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from bots_sdk.protocol.tienlen.v1 import bot_gateway_pb2 as gw
from bots_sdk.rules import Game
from referee_service.moves import (
    DISCONNECTED,
    FORFEITED,
    STRIKE_NAMES,
    MoveTiming,
    PendingMove,
    apply_answer,
    new_move_id_base,
    note_error,
)
from referee_service.seats import Participant
from referee_service.sessions import BotSession

if TYPE_CHECKING:
    from referee_service.table import TableRunner

__all__ = ["RemoteParticipant"]

# The table's one logger, whichever of its modules writes (referee_service/table.py).
log = logging.getLogger("referee_service.table")


class RemoteParticipant(Participant):
    """A registered bot playing over one of its streams."""

    def __init__(self, runner: TableRunner, index: int, bot_id: str) -> None:
        super().__init__(runner, index, bot_id)
        self.bot_id = bot_id
        self.session: BotSession | None = None
        self.pending: PendingMove | None = None
        # Move ids count this seat's own requests in this run of the table, after a random
        # offset of the seat's own: so they say nothing about other seats (e.g. an offer
        # they declined) or other tables, and an answer that arrives late from an earlier
        # run of the same table (aborted, then resumed) never matches a request of this
        # one, which counts from another offset (docs/protocol.md, "Move ids").
        self.requests_made = 0
        self.move_id_base = new_move_id_base(runner.registry.move_id_bases_of(runner.spec.table_id))
        self.connected = asyncio.Event()
        self.attached_once = False
        self.disconnected_at: float | None = None
        self.disconnect_struck = False
        self._grace_task: asyncio.Task[None] | None = None

    # ------------------------------------------------------------ stream binding
    def attach(self, session: BotSession, *, resumed: bool = False) -> None:
        self.session = session
        self.name = session.bot_name or self.bot_id
        session.bind(self)
        self.attached_once = True
        self.disconnected_at = None
        self.disconnect_struck = False
        if self._grace_task is not None:
            self._grace_task.cancel()
            self._grace_task = None
        if resumed:
            self.runner.log_event("seat_resumed", participant=self.index, bot_id=self.bot_id,
                                  session=session.session_id)
            session.send(self.runner.table_start_message(self, resumed=True))
            if self.runner.game is not None:
                session.send(self.runner.game_start_message(self))
        self.connected.set()

    def detach(self, session: BotSession) -> None:
        if self.session is not session:
            return
        self.session = None
        self.connected.clear()
        if self.forfeited or self.runner.finished:
            return
        self.disconnected_at = time.monotonic()
        self.runner.log_event("seat_disconnected", participant=self.index, bot_id=self.bot_id)
        if self.pending is not None:
            self.pending.put(DISCONNECTED)
        # The bot may already have a newer stream (it reconnected before the old one was
        # seen to drop): move the seat there at once.
        for other in self.runner.registry.sessions.get(self.bot_id, ()):
            if other is not session and not other.closed:
                self.attach(other, resumed=True)
                return
        grace = self.runner.spec.disconnect_grace_ms / 1000
        self._grace_task = asyncio.get_running_loop().create_task(self._grace_expiry(grace))

    async def _grace_expiry(self, grace: float) -> None:
        await asyncio.sleep(grace)
        if self.session is None and not self.forfeited and not self.runner.finished:
            self.forfeit(f"disconnected for more than {grace:g} s")

    def release(self) -> None:
        if self._grace_task is not None:
            self._grace_task.cancel()
            self._grace_task = None
        if self.session is not None:
            self.session.unbind(self)

    def forfeit(self, reason: str) -> None:
        self.forfeited = True
        self.runner.log_event("seat_forfeited", participant=self.index, bot_id=self.bot_id,
                              reason=reason)
        if self.pending is not None:
            self.pending.put(FORFEITED)
        if self.session is not None:
            self.session.send(self.runner.table_end_message(
                self, gw.TABLE_END_REASON_FORFEITED, f"forfeited: {reason}"))
            self.session.unbind(self)
            self.session = None
            self.runner.registry.released()

    def send(self, message: gw.RefereeMessage) -> None:
        if self.session is not None and not self.forfeited:
            self.session.send(message)

    # ------------------------------------------------------------ one move
    async def move(self, game: Game, seat: int) -> MoveTiming:
        if self.forfeited:
            return MoveTiming(seat=seat, move_id=None, elapsed_ms=0.0, attempts=0,
                              fallback="forfeited", played=self.play_fallback(game, seat))
        return await self._ask(game, seat)

    async def _ask(self, game: Game, seat: int) -> MoveTiming:
        """Ask the bot for its move until it answers legally, runs out of time or
        attempts, or its seat is forfeited meanwhile (by another task: its strikes at
        another move, a lost connection); then charge the time and strike if it must."""
        spec = self.runner.spec
        loop = asyncio.get_running_loop()
        start = loop.time()
        self.requests_made += 1
        pending = PendingMove(self.move_id_base + self.requests_made, self.runner.game_index,
                              seat, start + (self.move_time_ms + self.bank_ms) / 1000,
                              spec.max_illegal_attempts)
        self.pending = pending
        try:
            asked = await self._ask_until_settled(game, pending, start)
        finally:
            self.pending = None
        # An accepted move is charged up to its arrival, not the referee's own work.
        end = (asked.answered if asked.strike_reason is None and asked.answered is not None
               else loop.time())
        elapsed_ms = (end - start) * 1000
        self.bank_ms = max(0.0, self.bank_ms - max(0.0, elapsed_ms - self.move_time_ms))
        timing = MoveTiming(seat=seat, move_id=pending.move_id, elapsed_ms=elapsed_ms,
                            thinking_ms=asked.thinking, attempts=max(asked.attempts, 1),
                            played=asked.played, note=asked.note)
        if asked.thinking is not None:
            timing.network_ms = elapsed_ms - asked.thinking
        if asked.strike_reason is not None:
            self._strike(game, pending, timing, asked.strike_reason, asked.detail)
        elif self.forfeited:  # forfeited while waiting
            timing.played = self.play_fallback(game, seat)
            timing.fallback = "forfeited"
        return timing

    async def _ask_until_settled(self, game: Game, pending: PendingMove,
                                 start: float) -> _Asked:
        """Send the request (again after a reconnection) and judge each answer until one
        is legal, the time or the attempts run out, or the seat is forfeited."""
        loop = asyncio.get_running_loop()
        asked = _Asked()
        must_send = True
        while True:
            remaining = pending.deadline - loop.time()
            if remaining <= 0:
                return asked.struck(gw.STRIKE_REASON_TIMEOUT, "no legal move in time")
            if self.forfeited:
                return asked
            session = self.session
            if session is None:
                try:
                    async with asyncio.timeout(remaining):
                        await self.connected.wait()
                except TimeoutError:
                    return asked.struck(gw.STRIKE_REASON_DISCONNECTED,
                                        "disconnected when the move was due")
                must_send = True
                continue
            if must_send:
                await session.write_now(self.runner.move_request_bytes(
                    self, pending, remaining, asked.attempts + 1,
                    legal=not session.omit_legal_plays))
                must_send = False
            try:
                answer = await pending.get(remaining)
            except TimeoutError:
                return asked.struck(gw.STRIKE_REASON_TIMEOUT, "no legal move in time")
            if answer is DISCONNECTED:
                must_send = True
                continue
            if answer is FORFEITED:
                return asked
            if self._judge(game, session, pending, answer, start, asked):
                return asked

    def _judge(self, game: Game, session: BotSession, pending: PendingMove, answer: gw.Move,
               start: float, asked: _Asked) -> bool:
        """Apply one answer: accepted (acknowledged if the bot asks for that) or rejected
        (the bot is told why; a strike after its last attempt). True when asking is over."""
        spec = self.runner.spec
        loop = asyncio.get_running_loop()
        too_long = note_error(answer)
        if too_long is not None:
            # Refused whole and not counted: an attempt is an illegal move, a note is not.
            self._reject(pending, *too_long)
            return False
        asked.attempts += 1
        asked.answered = loop.time()
        elapsed_ms = (asked.answered - start) * 1000
        error = apply_answer(game, answer)
        if error is None:
            asked.played = None if getattr(answer, "pass") else list(answer.cards)
            asked.note = answer.note or None
            if answer.thinking_us:
                asked.thinking = min(answer.thinking_us / 1000, elapsed_ms)
            if session.ack_moves:
                session.send(gw.RefereeMessage(move_accepted=gw.MoveAccepted(
                    table_id=spec.table_id, game_index=pending.game_index,
                    move_id=pending.move_id, elapsed_ms=int(elapsed_ms),
                    elapsed_us=round(elapsed_ms * 1000))))
            return True
        code, reason = error
        left = pending.attempts_left = spec.max_illegal_attempts - asked.attempts
        self.runner.log_event("illegal_move", participant=self.index, seat=pending.seat,
                              move_id=pending.move_id, reason=reason)
        self._reject(pending, code, reason)
        if left <= 0:
            asked.struck(gw.STRIKE_REASON_ILLEGAL_MOVES,
                         f"{asked.attempts} illegal answers; last: {reason}")
            return True
        return False

    def _reject(self, pending: PendingMove, code: gw.MoveErrorCode.ValueType, reason: str) -> None:
        """Tell the bot why its answer to `pending` was not applied, and what it has left."""
        loop = asyncio.get_running_loop()
        self.send(gw.RefereeMessage(move_rejected=gw.MoveRejected(
            table_id=self.runner.spec.table_id, game_index=pending.game_index,
            move_id=pending.move_id, code=code, reason=reason,
            time_left_ms=max(0, int((pending.deadline - loop.time()) * 1000)),
            attempts_left=max(0, pending.attempts_left), sent_game_index=pending.game_index,
            sent_move_id=pending.move_id)))

    def _strike(self, game: Game, pending: PendingMove, timing: MoveTiming,
                reason: gw.StrikeReason.ValueType, detail: str) -> None:
        """Play the fallback for the seat, count the strike (one disconnection is one
        strike, however many moves it covers), tell the bot, forfeit at the limit."""
        spec = self.runner.spec
        seat = pending.seat
        played = timing.played = self.play_fallback(game, seat)
        timing.fallback = STRIKE_NAMES[reason]
        counts = not (reason == gw.STRIKE_REASON_DISCONNECTED and self.disconnect_struck)
        if reason == gw.STRIKE_REASON_DISCONNECTED:
            self.disconnect_struck = True
        if counts:
            self.strikes += 1
        forfeits = self.strikes >= spec.max_strikes
        self.runner.log_event("strike", participant=self.index, seat=seat,
                              move_id=pending.move_id, reason=timing.fallback, detail=detail,
                              strikes=self.strikes, counted=counts)
        self.send(gw.RefereeMessage(strike=gw.Strike(
            table_id=spec.table_id, game_index=pending.game_index, move_id=pending.move_id,
            reason=reason, detail=detail, fallback_pass=played is None,
            fallback_cards=played or (), strikes=self.strikes,
            max_strikes=spec.max_strikes, forfeited=forfeits)))
        if forfeits and not self.forfeited:
            self.forfeit(f"{self.strikes} strikes")


@dataclass(slots=True)
class _Asked:
    """How asking for one move went: the answers judged, the legal one's arrival and
    reported thinking time, or why the seat is struck (neither: forfeited meanwhile)."""

    attempts: int = 0
    answered: float | None = None  # event-loop time of the last answer judged
    thinking: float | None = None  # ms, as the bot reported it (capped at the elapsed)
    played: list[int] | None = None  # the legal answer's cards (None: a pass)
    note: str | None = None  # the legal answer's note, for the record only
    strike_reason: gw.StrikeReason.ValueType | None = None
    detail: str = ""

    def struck(self, reason: gw.StrikeReason.ValueType, detail: str) -> _Asked:
        self.strike_reason, self.detail = reason, detail
        return self

