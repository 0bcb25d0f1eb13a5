"""Playing one table: deals, seats, the games in order, the records and the result.

The engine is the only authority on the game; the referee decides who is asked for a
move, how long they get, and what happens when they do not answer properly. Each table
runs in its own asyncio task and only touches its own game, so a misbehaving bot can
slow down or forfeit its own seat but never another table.

This module runs the table (`TableRunner`) and writes what it tells the bots. The seats
are in `seats.py` (every seat; house bots) and `remote_seat.py` (a registered bot's seat:
its stream, one move asked until settled, strikes); one move's id, answer check and
timing are in `moves.py`. Their names stay importable from here.
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

from bots_sdk.protocol.tienlen.v1 import bot_gateway_pb2 as gw
from bots_sdk.protocol.tienlen.v1 import organizer_pb2 as org
from bots_sdk.rules import REPLAY_SCHEMA, Game
from bots_sdk.rules.notes import with_notes
from bots_sdk.rules.visibility import is_public
from referee_service import wire
from referee_service.house import HousePacer
from referee_service.moves import (
    MOVE_ID_OFFSETS,
    MOVE_ID_SPACING,
    STRIKE_NAMES,
    MoveTiming,
    PendingMove,
    apply_answer,
    new_move_id_base,
)
from referee_service.remote_seat import RemoteParticipant
from referee_service.seats import HouseParticipant, Participant
from referee_service.sessions import SessionRegistry
from referee_service.spec import TableSpec
from referee_service.view_encoder import ViewEncoder

__all__ = ["MOVE_ID_OFFSETS", "MOVE_ID_SPACING", "STRIKE_NAMES", "HouseParticipant", "MoveTiming",
           "Participant", "PendingMove", "RemoteParticipant", "TableFailure", "TableRunner",
           "apply_answer", "new_move_id_base"]

log = logging.getLogger("referee_service.table")


class TableFailure(Exception):
    """The table cannot start (e.g. a bot never connected); carries a gRPC status name."""

    def __init__(self, status: str, message: str) -> None:
        super().__init__(message)
        self.status = status


def _public_to_move(game: Game) -> int | None:
    """Whose move it is as anyone may be told: while a seat is being offered a play, the
    seat the turn goes to if every offer is declined (that an offer is pending would
    reveal a bomb in a hand: docs/rules.md §2); None once the game is over."""
    if game.is_over:
        return None
    if game.offer is None:
        return game.to_move
    declined = game.copy()
    while declined.offer is not None and not declined.is_over:
        declined.pass_turn()
    return None if declined.is_over else declined.to_move


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
        live = spec.live_moves  # a casual table watched live; never a tournament's
        live_from = live_public = 0
        while not game.is_over:
            mover = game.to_move
            assert mover is not None  # the game is not over
            participant = self.participants[self.seating[mover]]
            timing = await participant.move(game, mover)
            timings.append(timing)
            if live:
                live_public = self._live_moves(game, index, live_from, live_public)
                live_from = game.move_count
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
            # Each move's note (one timing per move of the record) joins the record, the
            # only place it goes: no view, result or timing log sent to a seat has it.
            replay_json=json.dumps(with_notes(game.replay(), [t.note for t in timings]),
                                   separators=(",", ":")),
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

    def _live_moves(self, game: Game, index: int, start: int, public: int) -> int:
        """Put a LiveMove in `events` for each public move of the log from `start` (a
        declined offer gives none), as a seat's view shows it; returns the public moves
        counted so far in this game."""
        for move in game.moves_since(start):
            if not is_public(move):
                continue
            public += 1
            event = org.LiveMove(
                table_id=self.spec.table_id, game_index=index, number=public, seat=move.seat,
                passed=move.mask is None, offer=move.offer or "",
                card_counts=game.card_counts, finished=game.finishing_order)
            if move.mask is not None:
                event.cards.extend(i for i in range(52) if move.mask >> i & 1)
            to_move = _public_to_move(game)
            if to_move is not None:
                event.to_move = to_move
            table = game.table
            if table is not None:
                event.table_cards.extend(c.index for c in table.cards)
                event.table_kind = table.kind
                if game.table_seat is not None:
                    event.table_seat = game.table_seat
            self.events.put_nowait(org.TableEvent(move=event))
        return public

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
            move_time_ms=participant.move_time_ms, time_bank_ms=int(participant.bank_ms),
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
