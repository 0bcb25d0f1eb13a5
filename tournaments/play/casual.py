"""A casual table, played: the referee plays it like any table, and the person's seat is
a seat gateway that speaks the bot protocol on the person's behalf (docs/web.md, "Play").

The worker's task (tasks.casual_table_play_task) runs, for one table:

- the **seat gateway**: an SDK `BotClient` (the same client a bot author runs) connected
  to the referee with the seat's own token (services.casual.seat_token, accepted by
  tournaments.token_store for that running table only), in a thread of its own with its
  own event loop. On every move request it writes the person's view to the table's row,
  split in two (`public_state`: the seats' names, card counts, the round's plays, whose
  move it is; `seat_state`: the hand, the engine's legal plays, the offer and the clock,
  which only the person is shown: sealing.casual_state_for), and waits for the answer the
  web stored (services.casual.casual_answer, checked against those legal plays). No
  answer before the clock runs out: the gateway sends nothing, so the referee's timeout
  applies exactly as to a bot (a strike, its fallback move, forfeit after the last
  strike). The person leaving stops the gateway: a disconnected seat forfeits as a bot's.
- the **organiser call**: `referee_play_table`, the tournaments' own path, with the
  person's seat as a registered bot id (`person-<table>`), every other seat a bot's
  participant key and no deal seed, so the referee draws each deal with `secrets` for
  this table only, and `live_moves`: the referee streams every public move as it is
  played, stored for the watchers (services.casual.casual_live_move, in the form
  sealing.casual_public_move gives). Each game record is stored as it comes
  (services.casual).
- the **clocks**: the bots play on the table's bot clock (the request's move time and
  bank), the person's seat on its own (`TablePlan.seat_clocks`: SeatSpec's clock).
- **hosted bots** at the table: their sessions are started on a runner for this table
  (services.hosting.casual_hosted_sessions_ensure) before the referee is called, which
  then waits longer for them to connect.

The browser never talks to the referee; a reload or a lost connection only loses the
page, never the seat (the gateway keeps its stream).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from django.conf import settings
from django.db import connections

from bots_sdk.bot import Bot, GameInfo, GameResult, TableInfo, View
from bots_sdk.client import BotClient
from bots_sdk.protocol.tienlen.v1 import bot_gateway_pb2 as gw
from bots_sdk.wire import move_message, view_from_proto
from referee_service.participants import participant_key
from tournaments.models import CasualSeat, CasualTable, Hosting
from tournaments.play.referee import (
    FinishedGame,
    LiveMove,
    TableOutcome,
    TablePlan,
    referee_play_table,
)
from tournaments.services import casual as casual_services
from tournaments.services import hosting as hosting_services

log = logging.getLogger("tournaments.play.casual")

#: How often the gateway looks for the person's answer (seconds).
ANSWER_POLL_S = 0.1
#: How long the referee waits for the seats to connect.
CONNECT_DEADLINE_MS = 20_000
#: ... or, with a hosted bot at the table, this long (its session starts on a runner first).
HOSTED_CONNECT_S = 120.0
#: A seat that lost its connection forfeits after this long (the gateway reconnects in far
#: less; the person's page may be gone for much longer: the gateway does not need it).
DISCONNECT_GRACE_MS = 10_000


def _public_view(view: View, names: list[str], person_seat: int) -> dict[str, Any]:
    """What anyone may see of the game at this moment: never a card still in a hand."""
    d = view.seat_view.to_dict()
    table = d.get("table")
    return {
        "players": d["players"], "preset": d["preset"], "names": names,
        "person_seat": person_seat, "card_counts": d["card_counts"], "to_move": d["to_move"],
        "table": table, "finished": d["finished"], "locked_out": d["locked_out"],
        "history": d["history"], "starting": d["starting"], "frozen": d["frozen"],
    }


class SeatBot(Bot):
    """The person's seat as the SDK sees it; its hooks keep the table's row current."""

    def __init__(self, gateway: SeatGateway) -> None:
        self.gateway = gateway

    def play(self, view: View) -> None:  # never called: SeatClient answers for it
        raise RuntimeError("the seat gateway answers move requests itself")

    async def on_table_start(self, table: TableInfo) -> None:
        self.gateway.move_time_ms = table.move_time_ms or 0

    async def on_game_start(self, game: GameInfo) -> None:
        await self.gateway.game_started(game)

    async def on_game_end(self, result: GameResult) -> None:
        await self.gateway.game_ended(result)


class SeatClient(BotClient):
    """The SDK client, answering each move request with the person's choice, or not at all
    (the referee's clock then applies as to any bot)."""

    gateway: SeatGateway

    async def _on_move_request(self, link: Any, m: gw.MoveRequest) -> None:
        state = self.tables.get(m.table_id)
        if state is None:
            return
        view = view_from_proto(m.view, history=state.history.decode(m.game_index, m.view.history),
                               table_id=m.table_id, game_index=m.game_index,
                               time_left_ms=m.time_left_ms, table_score=state.score)
        answer = await self.gateway.ask(view, m)
        if answer is None:
            return  # no answer: the referee times the seat out
        cards = None if answer["pass"] else tuple(c for c in view.hand if c.index in answer["cards"])
        state.pending[m.move_id] = (view, cards)
        await link.write(move_message(m.table_id, m.game_index, m.move_id, cards, 0, None))


class SeatGateway:
    """One person's seat at one table: the SDK client in a thread with its own loop."""

    def __init__(self, table: CasualTable, names: list[str], person_index: int) -> None:
        self.table_id = table.pk
        self.names = names  # by participant index
        self.person_index = person_index
        self.move_time_ms = table.move_time_ms
        self.bank_ms = table.time_bank_ms
        self.seat = person_index
        self.game_index = 0
        self.left = False
        self.timeouts = 0  # moves the person let the clock run out on (a strike each)
        self.asking: int | None = None  # the move id of the newest request
        # Django's ORM must not run on an event loop's thread: one thread of its own
        # (closed with its connection when the gateway stops).
        self._db = ThreadPoolExecutor(max_workers=1, thread_name_prefix="casual-db")
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self.client = SeatClient(lambda: SeatBot(self), target=settings.REFEREE_TARGET,
                                 token=casual_services.seat_token(table.pk),
                                 bot_name="person", bot_version="web", follow_pool=False,
                                 retry_first_connection=True, backoff_initial_s=0.2,
                                 backoff_max_s=2.0)
        self.client.gateway = self
        self.error: BaseException | None = None

    # ------------------------------------------------------------------ the thread
    def start(self) -> None:
        ready = threading.Event()

        def run() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            ready.set()
            try:
                loop.run_until_complete(self.client.run())
            except BaseException as exc:  # reported by the table's task
                self.error = exc
            finally:
                # the loop's own executor (name lookups) ends with it: no thread outlives the seat
                loop.run_until_complete(loop.shutdown_default_executor())
                loop.close()

        self._thread = threading.Thread(target=run, name=f"casual-seat-{self.table_id}", daemon=True)
        self._thread.start()
        ready.wait()

    def stop(self) -> None:
        loop = self._loop
        if loop is not None and not loop.is_closed():
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(self.client.stop, True)
        if self._thread is not None:
            self._thread.join(timeout=10)
        self._db.submit(connections.close_all).result()
        self._db.shutdown(wait=True)

    async def _in_db(self, fn: Any, **kwargs: Any) -> Any:
        return await asyncio.get_running_loop().run_in_executor(self._db, lambda: fn(**kwargs))

    # ------------------------------------------------------------------ the seat
    async def game_started(self, game: GameInfo) -> None:
        self.game_index = game.game_index
        self.seat = game.seat
        players = len(self.names)
        await self._in_db(casual_services.casual_state_write, table_id=self.table_id,
                          public={"game_index": game.game_index, "players": players,
                                  "names": self._names_by_seat(players), "person_seat": game.seat,
                                  "card_counts": [len(game.hand)] * players, "history": [],
                                  "to_move": None, "table": None, "finished": [],
                                  "locked_out": [], "frozen": []},
                          seat={"hand": [str(c) for c in sorted(game.hand)], "move_id": None,
                                "game_index": game.game_index, "seat": game.seat,
                                "timeouts": self.timeouts},
                          clear_answer=True)

    def _names_by_seat(self, players: int) -> list[str]:
        # Seats are the participants in order at a casual table (no duplicate rotation).
        names = self.names
        return [names[s] if s < len(names) else f"seat {s + 1}" for s in range(players)]

    async def game_ended(self, result: GameResult) -> None:
        await self._in_db(casual_services.casual_game_over, table_id=self.table_id,
                          game_index=result.game_index)
        await self._in_db(casual_services.casual_state_write, table_id=self.table_id,
                          seat={"hand": [], "move_id": None, "game_index": result.game_index,
                                "seat": result.seat, "timeouts": self.timeouts}, clear_answer=True)

    async def ask(self, view: View, m: gw.MoveRequest) -> dict[str, Any] | None:
        """Publish the request and wait for the person's answer until the clock runs out."""
        if self.left:
            return None
        # The newest request is the one asked: the SDK client handles each in a task of its
        # own, so the next one can arrive (the referee timed this one out and the bots played
        # on) while this one still waits out its own, slightly later, deadline.
        if self.asking is not None and self.asking != m.move_id:
            self.timeouts += 1  # the previous request is still waiting: the referee timed it out
        self.asking = m.move_id
        d = view.seat_view.to_dict()
        public = _public_view(view, self._names_by_seat(view.players), view.seat)
        public["game_index"] = m.game_index
        deadline = time.time() + m.time_left_ms / 1000
        seat = {
            "game_index": m.game_index, "seat": view.seat, "move_id": m.move_id,
            "hand": d["hand"], "legal_plays": d["legal_plays"], "can_pass": d["can_pass"],
            "offer": d["offer"], "time_left_ms": m.time_left_ms,
            "time_bank_ms": m.time_bank_ms, "move_time_ms": self.move_time_ms,
            "deadline_unix_ms": int(deadline * 1000), "timeouts": self.timeouts,
        }
        await self._in_db(casual_services.casual_state_write, table_id=self.table_id,
                          public=public, seat=seat, clear_answer=True)
        loop = asyncio.get_running_loop()
        end = loop.time() + m.time_left_ms / 1000
        while loop.time() < end and self.asking == m.move_id:
            await asyncio.sleep(ANSWER_POLL_S)
            answer = await self._in_db(casual_services.casual_answer_take, table_id=self.table_id,
                                       move_id=m.move_id)
            if answer is False:  # the person left: stop answering and disconnect
                self.left = True
                self.client.stop(force=True)
                return None
            if answer:
                self.asking = None
                seat["move_id"] = None
                await self._in_db(casual_services.casual_state_write, table_id=self.table_id,
                                  seat={**seat, "legal_plays": [], "offer": None, "answered": True})
                return dict(answer)
        if self.asking != m.move_id:
            return None  # a newer request is shown (and counted this timeout): leave it be
        self.asking = None
        self.timeouts += 1
        await self._in_db(casual_services.casual_state_write, table_id=self.table_id,
                          seat={**seat, "move_id": None, "legal_plays": [], "offer": None,
                                "timed_out": True, "timeouts": self.timeouts})
        return None


def casual_table_play(table_id: int) -> None:
    """Play one casual table to its end (the worker's task)."""
    table = casual_services.casual_start(table_id=table_id)
    if table is None:
        return
    seats = list(CasualSeat.objects.filter(table=table).select_related("bot").order_by("index"))
    person = next(s.index for s in seats if s.bot is None)
    participants = [
        participant_key(bot_id=f"{casual_services.PERSON_PREFIX}{table.pk}") if s.bot is None
        else participant_key(bot_id=s.bot.pk, house_bot=s.bot.house_bot) for s in seats]
    names = [s.name for s in seats]
    # Hosted bots play with no author process: a runner starts each one's session for this
    # table now, as for a tournament table (services.hosting), and ends it when the table
    # closes. Their seats get the time a session takes to start, and a runner's failover.
    hosted = any(s.bot is not None and s.bot.hosting == Hosting.HOSTED for s in seats)
    connect_ms, grace_ms = CONNECT_DEADLINE_MS, DISCONNECT_GRACE_MS
    if hosted:
        hosting_services.casual_hosted_sessions_ensure(casual_table_id=table.pk)
        connect_ms = _setting_ms("TIENLEN_HOSTED_CONNECT_S", HOSTED_CONNECT_S)
        grace_ms = _setting_ms("TIENLEN_HOSTED_DISCONNECT_GRACE_S", 60.0)
    plan = TablePlan(
        table_id=table.pk, referee_table_id=f"casual-{table.pk}-{secrets.token_hex(4)}",
        participants=participants, preset=table.preset, options={}, games=table.games,
        # The bots play on the table's bot clock; the person's seat on its own clock.
        duplicate_sets=0, move_time_ms=table.bot_move_time_ms, time_bank_ms=table.bot_time_bank_ms,
        seat_clocks={person: (table.move_time_ms, table.time_bank_ms)},
        house_seed=secrets.token_hex(16), first_game_index=0, resume_leader=None,
        resume_starting=None, connect_deadline_ms=connect_ms, deadline_passed=False,
        disconnect_grace_ms=grace_ms, live_moves=True)
    gateway = SeatGateway(table, names, person)
    gateway.start()
    completed, detail = False, ""
    try:
        for event in referee_play_table(plan):
            if isinstance(event, FinishedGame):
                casual_services.casual_game_record(
                    table_id=table.pk, index=event.game_index,
                    seat_participants=event.seat_participants, points=event.points,
                    replay_text=event.replay_text)
            elif isinstance(event, LiveMove):
                casual_services.casual_live_move(table_id=table.pk, move=event)
            elif isinstance(event, TableOutcome):
                completed, detail = event.completed, event.detail
    except Exception as exc:  # the referee refused or was lost: the table ends, said why
        log.warning("casual table %s failed: %s", table.pk, exc)
        detail = _failure_text(exc)
    finally:
        gateway.stop()
        casual_services.casual_finish(table_id=table.pk, completed=completed, detail=detail)


def _setting_ms(name: str, default_s: float) -> int:
    return int(float(getattr(settings, name, default_s)) * 1000)


def _failure_text(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    if "not connected" in text:
        return "a bot at the table is not connected to the referee: " + text
    return text

