"""Playing one table: deals, seats, the move loop, time control, strikes and records.

The engine is the only authority on the game; this module decides who is asked for a
move, how long they get, and what happens when they do not answer properly. Each table
runs in its own asyncio task and only touches its own game, so a misbehaving bot can
slow down or forfeit its own seat but never another table.
"""

from __future__ import annotations

import asyncio
import json
import logging
import secrets
import time
from collections import deque
from dataclasses import dataclass
from typing import Any

from bots_sdk.cards import DECK
from bots_sdk.protocol.tienlen.v1 import bot_gateway_pb2 as gw
from bots_sdk.protocol.tienlen.v1 import organizer_pb2 as org
from bots_sdk.rules import REPLAY_SCHEMA, Game, IllegalMove
from referee_service import wire
from referee_service.fallback import fallback_move
from referee_service.house import HouseBot, HousePacer
from referee_service.sessions import BotSession, SessionRegistry
from referee_service.spec import TableSpec
from referee_service.view_encoder import ViewEncoder

log = logging.getLogger("referee_service.table")

_DISCONNECTED = object()  # put in a pending move's queue when the stream drops
_FORFEITED = object()  # ... when the seat forfeits while its move is pending

STRIKE_NAMES = {
    gw.STRIKE_REASON_TIMEOUT: "timeout",
    gw.STRIKE_REASON_ILLEGAL_MOVES: "illegal_moves",
    gw.STRIKE_REASON_DISCONNECTED: "disconnected",
}


#: Move ids of one seat in one run are its offset plus 1, 2, 3, ...: offsets are random
#: multiples of 2^25 (more requests than a seat can be sent in MAX_GAMES games) below
#: 2^53 (exact as a JavaScript number), so two runs' ids are disjoint unless they drew
#: the same offset.
MOVE_ID_SPACING = 1 << 25
MOVE_ID_OFFSETS = 1 << 28


def new_move_id_base(taken: set[int]) -> int:
    """A random move-id offset for a seat of a new run of a table, none of the ones in
    `taken` (which it joins): the offsets earlier runs of the same table drew on this
    referee, so a late answer meant for one of them never matches this run's requests
    (and across referee processes two runs share an offset with probability 2^-28)."""
    while True:
        base = secrets.randbelow(MOVE_ID_OFFSETS) * MOVE_ID_SPACING
        if base not in taken:
            taken.add(base)
            return base


class TableFailure(Exception):
    """The table cannot start (e.g. a bot never connected); carries a gRPC status name."""

    def __init__(self, status: str, message: str) -> None:
        super().__init__(message)
        self.status = status


class PendingMove:
    """The move a seat is being asked for, and the answers that arrived for it.

    A hand-rolled waiter instead of asyncio.Queue + wait_for: wait_for starts a task per
    call, which on the per-move path cost as much as the gRPC round trip."""

    __slots__ = ("move_id", "game_index", "seat", "deadline", "attempts_left", "_answers",
                 "_waiter")

    def __init__(self, move_id: int, game_index: int, seat: int, deadline: float = 0.0,
                 attempts_left: int = 0) -> None:
        self.move_id = move_id
        self.game_index = game_index
        self.seat = seat
        # what a rejection of a misaddressed answer tells the bot about this request
        self.deadline = deadline  # event-loop time
        self.attempts_left = attempts_left
        self._answers: deque[Any] = deque()
        self._waiter: asyncio.Future[None] | None = None

    def put(self, item: Any) -> None:
        self._answers.append(item)
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def get(self, timeout: float) -> Any:
        """The next answer; TimeoutError after `timeout` seconds without one."""
        if not self._answers:
            loop = asyncio.get_running_loop()
            waiter = self._waiter = loop.create_future()
            handle = loop.call_later(timeout, _expire, waiter)
            try:
                await waiter
            finally:
                handle.cancel()
                self._waiter = None
        return self._answers.popleft()


def _expire(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_exception(TimeoutError())


@dataclass(slots=True)
class MoveTiming:
    seat: int
    move_id: int | None
    elapsed_ms: float
    thinking_ms: float | None = None
    network_ms: float | None = None
    attempts: int = 1
    fallback: str | None = None
    house: bool = False
    played: list[int] | None = None  # card indices applied (None: a pass); not recorded

    def to_dict(self) -> dict[str, Any]:
        return {
            "seat": self.seat,
            "move_id": self.move_id,
            "elapsed_ms": round(self.elapsed_ms, 3),
            "thinking_ms": None if self.thinking_ms is None else round(self.thinking_ms, 3),
            "network_ms": None if self.network_ms is None else round(self.network_ms, 3),
            "attempts": self.attempts,
            "fallback": self.fallback,
            "house": self.house,
        }


def apply_answer(game: Game, move: gw.Move) -> tuple[gw.MoveErrorCode.ValueType, str] | None:
    """Apply a bot's answer to the game; return (MoveErrorCode, reason) if it is illegal.

    Everything a bot can put in a Move is checked here or by the engine, which leaves the
    game unchanged when it refuses a move."""
    cards = list(move.cards)
    try:
        if getattr(move, "pass"):
            if cards:
                return gw.MOVE_ERROR_CODE_PASS_WITH_CARDS, "a pass cannot carry cards"
            game.pass_turn()
            return None
        if not cards:
            return gw.MOVE_ERROR_CODE_EMPTY_PLAY, "no cards played; set pass = true to pass"
        if max(cards) > 51:
            unknown = next(c for c in cards if c > 51)
            return (gw.MOVE_ERROR_CODE_UNKNOWN_CARD,
                    f"unknown card {unknown} (cards are integers 0..51)")
        if len(set(cards)) != len(cards):
            twice = next(c for c in cards if cards.count(c) > 1)
            return (gw.MOVE_ERROR_CODE_DUPLICATE_CARD,
                    f"card {DECK[twice]} named twice")
        game.play([DECK[c] for c in cards])
        return None
    except IllegalMove as exc:
        code = wire.MOVE_ERROR_CODES.get(exc.code, gw.MOVE_ERROR_CODE_ILLEGAL_PLAY)
        return code, str(exc) or "illegal move"


class Participant:
    """One of the table's 2-4 players, whatever seat it has in the current game."""

    house = False

    def __init__(self, runner: TableRunner, index: int, name: str) -> None:
        self.runner = runner
        self.index = index
        self.name = name
        self.seat = index
        self.strikes = 0
        self.forfeited = False
        self.bank_ms = float(runner.spec.time_bank_ms)

    def play_fallback(self, game: Game, seat: int) -> list[int] | None:
        """Apply the documented fallback move; return the card indices (None: pass)."""
        move = fallback_move(game)
        if move is None:
            game.pass_turn()
            return None
        game.play(list(move))
        return [c.index for c in move]

    async def move(self, game: Game, seat: int) -> MoveTiming:
        raise NotImplementedError


class HouseParticipant(Participant):
    """An in-process house bot (the SDK's example bots)."""

    house = True

    def __init__(self, runner: TableRunner, index: int, policy: str) -> None:
        super().__init__(runner, index, f"house:{policy}")
        self.bot = HouseBot(policy, seed=f"{runner.spec.seed}/house/{index}",
                            move_time_ms=runner.spec.move_time_ms,
                            games=runner.spec.total_games)
        self._remotes: list[Participant] | None = None  # the table's remote seats

    async def move(self, game: Game, seat: int) -> MoveTiming:
        start = time.perf_counter()
        # Paced only while a remote seat plays on (it sees the time between its answer and
        # its next request): referee_service/house.py, "Pacing".
        if self._remotes is None:
            self._remotes = [p for p in self.runner.participants if not p.house]
        observed = any(not p.forfeited for p in self._remotes)
        pacer = self.runner.house_pacer
        since = pacer.begin(game) if observed else 0.0
        offered = observed and game.offer is not None
        fallback = None
        played: list[int] | None = None
        try:
            cards = await self.bot.choose(game, seat, self.runner.spec.table_id,
                                          self.runner.game_index, since if observed else None)
            if cards is None:
                game.pass_turn()
            else:
                game.play(list(cards))
                played = [c.index for c in cards]
        except Exception as exc:  # a house bot bug must not stop the table
            log.warning("house bot %s failed: %s", self.name, exc)
            played = self.play_fallback(game, seat)
            fallback = "house_error"
        elapsed = (time.perf_counter() - start) * 1000  # the bot's own time, not the hold
        if observed:
            await pacer.hold(game, since, self.bot.pace_s,
                             declined_offer=offered and played is None)
        return MoveTiming(seat=seat, move_id=None, elapsed_ms=elapsed, thinking_ms=elapsed,
                          network_ms=0.0, fallback=fallback, house=True, played=played)

    def forfeit(self, reason: str) -> None:
        self.forfeited = True


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
            self.pending.put(_DISCONNECTED)
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
            self.pending.put(_FORFEITED)
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
        another move, a lost connection)."""
        runner = self.runner
        spec = runner.spec
        loop = asyncio.get_running_loop()
        start = loop.time()
        budget = (spec.move_time_ms + self.bank_ms) / 1000
        deadline = start + budget
        self.requests_made += 1
        pending = PendingMove(self.move_id_base + self.requests_made, runner.game_index, seat,
                              deadline, spec.max_illegal_attempts)
        self.pending = pending
        attempts = 0
        must_send = True
        strike_reason = None
        detail = ""
        thinking = None
        answered: float | None = None
        played: list[int] | None = None
        try:
            while True:
                remaining = deadline - loop.time()
                if remaining <= 0:
                    strike_reason, detail = gw.STRIKE_REASON_TIMEOUT, "no legal move in time"
                    break
                if self.forfeited:
                    break
                session = self.session
                if session is None:
                    try:
                        async with asyncio.timeout(remaining):
                            await self.connected.wait()
                    except TimeoutError:
                        strike_reason = gw.STRIKE_REASON_DISCONNECTED
                        detail = "disconnected when the move was due"
                        break
                    must_send = True
                    continue
                if must_send:
                    await session.write_now(runner.move_request_bytes(
                        self, pending, remaining, attempts + 1,
                        legal=not session.omit_legal_plays))
                    must_send = False
                try:
                    answer = await pending.get(remaining)
                except TimeoutError:
                    strike_reason, detail = gw.STRIKE_REASON_TIMEOUT, "no legal move in time"
                    break
                if answer is _DISCONNECTED:
                    must_send = True
                    continue
                if answer is _FORFEITED:
                    break
                attempts += 1
                answered = loop.time()
                elapsed_ms = (answered - start) * 1000
                error = apply_answer(game, answer)
                if error is None:
                    played = None if getattr(answer, "pass") else list(answer.cards)
                    if answer.thinking_us:
                        thinking = min(answer.thinking_us / 1000, elapsed_ms)
                    if session.ack_moves:
                        session.send(gw.RefereeMessage(move_accepted=gw.MoveAccepted(
                            table_id=spec.table_id, game_index=pending.game_index,
                            move_id=pending.move_id, elapsed_ms=int(elapsed_ms),
                            elapsed_us=round(elapsed_ms * 1000))))
                    break
                code, reason = error
                left = pending.attempts_left = spec.max_illegal_attempts - attempts
                runner.log_event("illegal_move", participant=self.index, seat=seat,
                                 move_id=pending.move_id, reason=reason)
                self.send(gw.RefereeMessage(move_rejected=gw.MoveRejected(
                    table_id=spec.table_id, game_index=pending.game_index,
                    move_id=pending.move_id, code=code, reason=reason,
                    time_left_ms=max(0, int((deadline - loop.time()) * 1000)),
                    attempts_left=max(0, left), sent_game_index=pending.game_index,
                    sent_move_id=pending.move_id)))
                if left <= 0:
                    strike_reason = gw.STRIKE_REASON_ILLEGAL_MOVES
                    detail = f"{attempts} illegal answers; last: {reason}"
                    break
        finally:
            self.pending = None
        # An accepted move is charged up to its arrival, not the referee's own work.
        end = answered if strike_reason is None and answered is not None else loop.time()
        elapsed_ms = (end - start) * 1000
        self.bank_ms = max(0.0, self.bank_ms - max(0.0, elapsed_ms - spec.move_time_ms))
        timing = MoveTiming(seat=seat, move_id=pending.move_id, elapsed_ms=elapsed_ms,
                            thinking_ms=thinking, attempts=max(attempts, 1), played=played)
        if thinking is not None:
            timing.network_ms = elapsed_ms - thinking
        if strike_reason is None and not self.forfeited:
            return timing
        if strike_reason is None:  # forfeited while waiting
            timing.played = self.play_fallback(game, seat)
            timing.fallback = "forfeited"
            return timing
        played = timing.played = self.play_fallback(game, seat)
        timing.fallback = STRIKE_NAMES[strike_reason]
        # One disconnection is one strike, however many moves it covers.
        counts = not (strike_reason == gw.STRIKE_REASON_DISCONNECTED and self.disconnect_struck)
        if strike_reason == gw.STRIKE_REASON_DISCONNECTED:
            self.disconnect_struck = True
        if counts:
            self.strikes += 1
        forfeits = self.strikes >= spec.max_strikes
        runner.log_event("strike", participant=self.index, seat=seat, move_id=pending.move_id,
                         reason=timing.fallback, detail=detail, strikes=self.strikes,
                         counted=counts)
        self.send(gw.RefereeMessage(strike=gw.Strike(
            table_id=spec.table_id, game_index=pending.game_index, move_id=pending.move_id,
            reason=strike_reason, detail=detail, fallback_pass=played is None,
            fallback_cards=played or (), strikes=self.strikes,
            max_strikes=spec.max_strikes, forfeited=forfeits)))
        if forfeits and not self.forfeited:
            self.forfeit(f"{self.strikes} strikes")
        return timing


class TableRunner:
    """Plays one table to the end and puts TableEvents in `events` as games finish."""

    def __init__(self, spec: TableSpec, registry: SessionRegistry) -> None:
        self.spec = spec
        self.registry = registry
        self.events: asyncio.Queue[org.TableEvent | TableFailure] = asyncio.Queue()
        self.participants: list[Participant] = []
        for index, p in enumerate(spec.participants):
            if p.house:
                self.participants.append(HouseParticipant(self, index, p.house))
            else:
                assert p.bot_id is not None
                self.participants.append(RemoteParticipant(self, index, p.bot_id))
        self.game: Game | None = None
        self.game_index = spec.first_game_index
        self.seating: list[int] = spec.seating(spec.first_game_index)
        self.encoder: ViewEncoder | None = None
        self.totals = [0] * spec.players
        self.games_played = 0
        self.finished = False
        self.next_leader: int | None = spec.resume_leader
        self.next_starting = (spec.resume_starting if spec.resume_starting is not None
                              else spec.resume_leader is None)
        self.task: asyncio.Task[None] | None = None
        self._abort_reason = ""
        self.started = False  # bots were told (TableStart)
        self.house_pacer = HousePacer()  # the house seats' pacing (house.py)

    # ------------------------------------------------------------ lifecycle
    def start(self) -> asyncio.Task[None]:
        self.registry.tables[self.spec.table_id] = self
        self.task = asyncio.get_running_loop().create_task(self._run(),
                                                           name=f"table:{self.spec.table_id}")
        return self.task

    def abort(self, reason: str) -> None:
        if self.task is not None and not self.task.done():
            self._abort_reason = reason
            self.task.cancel()

    def remote_participants(self) -> list[RemoteParticipant]:
        return [p for p in self.participants if isinstance(p, RemoteParticipant)]

    def log_event(self, event: str, **fields: Any) -> None:
        log.info(event, extra={"event": event, "table_id": self.spec.table_id,
                               "game_index": self.game_index, **fields})

    async def _run(self) -> None:
        status = org.TABLE_STATUS_COMPLETED
        detail = ""
        try:
            await self._attach_all()
            self.events.put_nowait(org.TableEvent(started=org.TableStarted(
                table_id=self.spec.table_id, seed=self.spec.seed,
                games=self.spec.total_games,
                participants=[p.label for p in self.spec.participants])))
            self.log_event("table_started", players=self.spec.players,
                           preset=self.spec.preset, games=self.spec.total_games)
            self.started = True
            for participant in self.remote_participants():
                participant.send(self.table_start_message(participant, resumed=False))
            for index in range(self.spec.first_game_index, self.spec.total_games):
                await self._play_game(index)
        except TableFailure as failure:
            self.finished = True
            self._release()
            self.events.put_nowait(failure)
            return
        except asyncio.CancelledError:
            status = org.TABLE_STATUS_ABORTED
            detail = self._abort_reason or "cancelled"
        except Exception as exc:  # an engine bug: end this table only, keep its records
            log.exception("table %s failed", self.spec.table_id)
            status = org.TABLE_STATUS_ABORTED
            detail = f"internal error: {exc}"
        self.finished = True
        reason = (gw.TABLE_END_REASON_COMPLETED if status == org.TABLE_STATUS_COMPLETED
                  else gw.TABLE_END_REASON_ABORTED)
        if self.started:
            for participant in self.remote_participants():
                participant.send(self.table_end_message(participant, reason, detail))
        self._release()
        result = org.TableResult(
            table_id=self.spec.table_id, status=status, detail=detail,
            games_played=self.games_played,
            next_game_index=self.spec.first_game_index + self.games_played,
            totals=self.totals, strikes=[p.strikes for p in self.participants],
            forfeited=[p.index for p in self.participants if p.forfeited],
            next_starting=self.next_starting)
        if self.next_leader is not None:
            result.next_leader = self.next_leader
        if status == org.TABLE_STATUS_COMPLETED:  # never resumed: its offsets can go
            self.registry.move_id_bases.pop(self.spec.table_id, None)
        self.log_event("table_finished", status=org.TableStatus.Name(status),
                       games_played=self.games_played, detail=detail)
        self.events.put_nowait(org.TableEvent(result=result))

    def _release(self) -> None:
        for participant in self.remote_participants():
            participant.release()
        if self.registry.tables.get(self.spec.table_id) is self:
            del self.registry.tables[self.spec.table_id]
        self.registry.released()

    async def _attach_all(self) -> None:
        """Give every remote seat a stream, waiting up to the connect deadline."""
        table_id = self.spec.table_id

        def attach_available() -> bool:
            for participant in self.remote_participants():
                if participant.session is None:
                    stream = self.registry.find_stream(participant.bot_id, table_id)
                    if stream is None:
                        return False
                    participant.attach(stream)
            return True

        if not await self.registry.wait_for(attach_available,
                                            self.spec.connect_deadline_ms / 1000):
            missing = sorted({p.bot_id for p in self.remote_participants()
                              if p.session is None})
            connected = [b for b in missing if self.registry.sessions.get(b)]
            absent = [b for b in missing if b not in connected]
            parts = []
            if absent:
                parts.append("not connected: " + ", ".join(absent))
            if connected:
                parts.append("no free table slot: " + ", ".join(connected))
            raise TableFailure("FAILED_PRECONDITION",
                               f"bots unavailable after {self.spec.connect_deadline_ms} ms ("
                               + "; ".join(parts) + ")")
        self.registry.seated()

    # ------------------------------------------------------------ one game
    async def _play_game(self, index: int) -> None:
        spec = self.spec
        self.game_index = index
        self.seating = spec.seating(index)
        if spec.every_game_starts:
            starting, leader = True, None
        else:
            starting, leader = self.next_starting, self.next_leader
            if starting:
                leader = None
        seed = spec.deal_seed(index)
        game = Game.from_seed(seed, spec.players, preset=spec.preset, starting=starting,
                              leader=leader, options=spec.overrides or None)
        self.game = game
        self.encoder = ViewEncoder(game)
        for seat, p_index in enumerate(self.seating):
            self.participants[p_index].seat = seat
        for remote in self.remote_participants():
            remote.send(self.game_start_message(remote))
        timings: list[MoveTiming] = []
        while not game.is_over:
            mover = game.to_move
            assert mover is not None  # the game is not over
            participant = self.participants[self.seating[mover]]
            timing = await participant.move(game, mover)
            timings.append(timing)
            if participant.house or participant.forfeited:
                # A house bot, or the fallback for a forfeited seat, moves without ever
                # suspending: hand the loop to the other tables, the bot streams and the
                # organiser's stream writer after each such move, or a table of them
                # would hold the loop from deal to end.
                await asyncio.sleep(0)
        self.game = None
        for seat, p_index in enumerate(self.seating):
            self.totals[p_index] += game.points[seat]
        bot_result = wire.result_message(game, with_reasons=False)
        for participant in self.remote_participants():
            participant.send(gw.RefereeMessage(game_end=gw.GameEnd(
                table_id=spec.table_id, game_index=index, seat=participant.seat,
                result=bot_result)))
        if not spec.every_game_starts:
            self.next_leader = game.next_leader
            self.next_starting = bool(game.next_starting)
        self.games_played += 1
        n = spec.players
        moves = [t.to_dict() for t in timings]
        record = org.GameRecord(
            table_id=spec.table_id, game_index=index, seat_participants=self.seating,
            seat_names=[self.participants[p].name for p in self.seating],
            replay_json=json.dumps(game.replay(), separators=(",", ":")),
            timing_json=json.dumps({"schema": "tienlen.timing/1", "moves": moves},
                                   separators=(",", ":")),
            strikes=[p.strikes for p in self.participants],
            forfeited=[p.index for p in self.participants if p.forfeited],
            result=wire.result_message(game),
            replay_schema=REPLAY_SCHEMA, timing=wire.game_timing(moves, n),
            duplicate_set=index // n if spec.duplicate else 0,
            rotation=index % n if spec.duplicate else 0,
            seed=seed)
        self.log_event("game_finished", moves=len(timings),
                       points=list(game.points), fallbacks=sum(1 for t in timings if t.fallback))
        self.events.put_nowait(org.TableEvent(game=record))
        # Let the organiser's stream writer send this record now, while the next game
        # plays, so the caller can store each game as it finishes.
        await asyncio.sleep(0)

    # ------------------------------------------------------------ messages to bots
    def _seat_infos(self) -> list[gw.SeatInfo]:
        return [gw.SeatInfo(seat=seat, name=self.participants[p].name,
                            house=self.participants[p].house)
                for seat, p in enumerate(self.seating)]

    def table_start_message(self, participant: Participant, *, resumed: bool) -> gw.RefereeMessage:
        spec = self.spec
        return gw.RefereeMessage(table_start=gw.TableStart(
            table_id=spec.table_id, seat=participant.seat, players=spec.players,
            preset=spec.preset, options_json=json.dumps(spec.options, sort_keys=True),
            seats=self._seat_infos(), games=spec.total_games, duplicate=spec.duplicate,
            move_time_ms=spec.move_time_ms, time_bank_ms=int(participant.bank_ms),
            max_strikes=spec.max_strikes, max_illegal_attempts=spec.max_illegal_attempts,
            resumed=resumed))

    def game_start_message(self, participant: Participant) -> gw.RefereeMessage:
        game = self.game
        assert game is not None  # sent while a game is being played
        seat = participant.seat
        message = gw.GameStart(
            table_id=self.spec.table_id, game_index=self.game_index, seat=seat,
            hand=[c.index for c in game.hands[seat]], starting=game.starting,
            seats=self._seat_infos())
        if game.starting:
            opening = game.opening_card
            assert opening is not None  # a starting game has one
            message.opening_card = opening
        else:
            message.leader = game.leader
        return gw.RefereeMessage(game_start=message)

    def move_request_bytes(self, participant: Participant, pending: PendingMove,
                           remaining: float, attempt: int, *, legal: bool) -> bytes:
        assert self.encoder is not None
        return self.encoder.move_request_bytes(
            table_id=self.spec.table_id, game_index=pending.game_index,
            move_id=pending.move_id, seat=pending.seat, time_left_ms=int(remaining * 1000),
            time_bank_ms=int(participant.bank_ms), attempt=attempt, legal_plays=legal)

    def table_end_message(self, participant: Participant, reason: gw.TableEndReason.ValueType,
                          detail: str) -> gw.RefereeMessage:
        # totals per seat of the participant's first game seating
        first = self.spec.seating(self.spec.first_game_index)
        return gw.RefereeMessage(table_end=gw.TableEnd(
            table_id=self.spec.table_id, reason=reason, detail=detail,
            games_played=self.games_played, totals=[self.totals[p] for p in first]))
