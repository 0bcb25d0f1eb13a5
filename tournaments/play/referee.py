"""The typed contract between the tournaments and the referee's organiser API.

In: a `TablePlan` (what the table service decided a worker plays) becomes the referee's
`PlayTableRequest` in one place, `TablePlan.request()`. Out: the organiser client yields the
protobuf messages themselves; `FinishedGame.from_record` and `TableOutcome.from_result` read
each once into what the recorder stores. Everything the recorder reads is a typed field of
the record (the result, the deal seed, the replay's schema, the timing log's totals per
seat); the replay and timing JSON are kept exactly as the referee wrote them (stored
compressed, never parsed nor re-encoded: the worker's CPU is the pipeline's bottleneck).
Seats travel as participant keys (`referee_service.participants`: `bot:<id>` /
`house:<name>`). Channels are created lazily per process: gRPC channels made before a fork hang in the
child (Celery prefork).
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings

from bots_sdk.protocol.tienlen.v1 import organizer_pb2 as org
from referee_service.participants import participant_bot_id


class RefereeUnavailable(Exception):
    """The referee cannot be reached or refused the table for now: retry later."""


class BotsNotConnected(Exception):
    """Some participants are not connected (FAILED_PRECONDITION); retry until the deadline."""

    def __init__(self, message: str, missing: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.missing = list(missing)


class TableBusy(Exception):
    """The referee is already playing this table (ALREADY_EXISTS): another worker has it,
    e.g. after a duplicate delivery of the task. Retry later; never fail the table."""


class RefereeRejected(Exception):
    """The referee refused the request itself (INVALID_ARGUMENT): retrying cannot help."""


@dataclass(frozen=True)
class TablePlan:
    """Everything a worker needs to play (or resume) a table on the referee."""

    table_id: int
    referee_table_id: str
    participants: list[str]  # participant keys in seat order (participant_key)
    preset: str
    options: dict[str, Any]
    games: int
    duplicate_sets: int
    move_time_ms: int
    time_bank_ms: int
    house_seed: str  # seeds the house bots only
    first_game_index: int
    resume_leader: int | None
    resume_starting: bool | None
    connect_deadline_ms: int
    deadline_passed: bool
    games_planned: int = 0
    attempts: int = 0
    # The secret seed of every game still to play, from first_game_index (docs/fair-play.md:
    # each stays secret until its deal is revealed).
    deal_seeds: list[str] = field(default_factory=list, repr=False)
    starting_games: bool = False
    # The referee the table's previous attempt was routed to (Table.referee; "" at first).
    referee: str = ""
    # How long a seat may stay disconnected before it forfeits (0: the referee's default);
    # longer for tables with hosted seats, so a runner that died is replaced in time.
    disconnect_grace_ms: int = 0
    # Participant index -> (move_time_ms, time_bank_ms): those seats' own clocks (a person's
    # seat at a casual table). Empty, as for every tournament table: every seat has the
    # table's clock above.
    seat_clocks: dict[int, tuple[int, int]] = field(default_factory=dict)
    # Stream every public move as it is played (PlayTableRequest.live_moves): casual tables
    # only (tournaments.play.casual); a tournament table's games stay sealed.
    live_moves: bool = False

    @property
    def bot_ids(self) -> list[int]:
        """The registered bots of the table (house bots and stand-ins excluded)."""
        return [int(b) for b in map(participant_bot_id, self.participants) if b is not None]

    def absent(self, connected: Mapping[str, str]) -> list[str]:
        """The participants that forfeit when the connect deadline has passed: the bots not
        in `connected` (the referee's ListBots), or every participant when none is missing
        from it (the referee still found a seat it could not fill)."""
        missing = [p for p in self.participants if (b := participant_bot_id(p)) is not None and b not in connected]
        return missing or list(self.participants)

    def request(self) -> org.PlayTableRequest:
        """The referee's PlayTableRequest for this plan: the one place it is built."""
        from referee_service.organizer_client import seat_spec

        request = org.PlayTableRequest(
            table_id=self.referee_table_id,
            seats=[seat_spec(p) for p in self.participants],
            preset=self.preset,
            options_json=json.dumps(self.options) if self.options else "",
            games=self.games,
            duplicate_sets=self.duplicate_sets,
            move_time_ms=self.move_time_ms,
            time_bank_ms=self.time_bank_ms,
            seed=self.house_seed,
            first_game_index=self.first_game_index,
            connect_deadline_ms=max(1, self.connect_deadline_ms),
            deal_seeds=self.deal_seeds,
            starting_games=self.starting_games,
            disconnect_grace_ms=self.disconnect_grace_ms,
            live_moves=self.live_moves,
        )
        for index, (move_ms, bank_ms) in self.seat_clocks.items():
            request.seats[index].move_time_ms = move_ms
            request.seats[index].time_bank_ms = bank_ms
        if self.resume_leader is not None:
            request.resume_leader = self.resume_leader
        if self.resume_starting is not None:
            request.resume_starting = self.resume_starting
        return request


@dataclass(frozen=True)
class SeatTiming:
    """One seat's totals of a game's timing log (as the referee summed them)."""

    moves: int
    thinking_ms: float
    max_ms: float
    fallbacks: int


@dataclass(frozen=True)
class FinishedGame:
    """One finished game as the worker records it: seats map to participant indices
    (request order). The tournaments layer's name for a game's result; the protocol's is
    `GameResult` (inside the referee's `GameRecord`), a bot's `bots_sdk.bot.GameResult`.

    Build it with `from_record` from the referee's GameRecord, whose typed fields carry all
    the recorder reads: the result (points, finishing order, instant winner, tied seats),
    the deal seed, the replay's schema and the timing log's totals. `replay_text` and
    `timing_text` are the JSON exactly as received, stored as they are and never parsed
    here."""

    game_index: int
    seat_participants: list[int]
    points: list[int]
    finishing_order: list[int]
    instant_winner: int | None
    replay_text: str
    timing_text: str
    schema: str = ""
    tied: list[int] = field(default_factory=list)
    strikes: list[int] = field(default_factory=list)
    forfeited: list[int] = field(default_factory=list)
    seed: str = ""
    moves: int = 0  # in the timing log
    elapsed_ms: float = 0.0  # every move's, summed
    seat_timing: list[SeatTiming] = field(default_factory=list)  # per seat of this game

    @classmethod
    def from_record(cls, record: org.GameRecord) -> FinishedGame:
        """Read a GameRecord's typed fields once (its JSON is kept as text)."""
        result, timing = record.result, record.timing
        return cls(
            game_index=record.game_index,
            seat_participants=list(record.seat_participants),
            points=list(result.points),
            finishing_order=list(result.finishing_order),
            instant_winner=result.instant_winner if result.HasField("instant_winner") else None,
            replay_text=record.replay_json,
            timing_text=record.timing_json,
            schema=record.replay_schema,
            tied=list(result.tied),
            strikes=list(record.strikes),
            forfeited=list(record.forfeited),
            seed=record.seed,
            moves=timing.moves,
            elapsed_ms=timing.elapsed_ms,
            seat_timing=[SeatTiming(s.moves, s.thinking_ms, s.max_ms, s.fallbacks) for s in timing.seats],
        )

    @property
    def players(self) -> int:
        return len(self.seat_participants)

    def places(self) -> list[int]:
        """1-based place per seat; players sharing last place get the same (last) place."""
        n = self.players
        order = self.finishing_order
        shared = set(self.tied)
        if self.instant_winner is not None:
            shared = {s for s in range(n) if s != self.instant_winner}
            order = [self.instant_winner]
        places = [n] * n
        for place, seat in enumerate(order, start=1):
            if seat not in shared:
                places[seat] = place
        return places

    def problem(self, seats: int) -> str | None:
        """What makes this record unfit for a table of `seats` seats, or None."""
        if sorted(self.seat_participants) != list(range(seats)):
            return f"seat_participants {self.seat_participants} do not match the table"
        if len(self.points) != self.players or sum(self.points) != 0:
            return f"points {self.points} are not a zero-sum list per seat"
        order = self.finishing_order
        if len(set(order)) != len(order) or any(not 0 <= seat < self.players for seat in order):
            return f"finishing order {self.finishing_order} is not a list of distinct seats"
        if not self.replay_text or not self.schema:
            return "it carries no replay (or no replay schema)"
        if self.seat_timing and len(self.seat_timing) != self.players:
            return f"its timing totals name {len(self.seat_timing)} seats for {self.players} players"
        return None


@dataclass(frozen=True)
class LiveMove:
    """One public move of a table played with `live_moves`, as the referee streamed it
    (card indices; sealing.casual_public_move gives the form a page may show)."""

    game_index: int
    number: int  # among the game's public moves, from 1
    seat: int
    passed: bool
    cards: list[int]
    offer: str
    card_counts: list[int]
    to_move: int | None
    finished: list[int]
    table_cards: list[int]
    table_kind: str
    table_seat: int | None

    @classmethod
    def from_event(cls, m: org.LiveMove) -> LiveMove:
        return cls(game_index=m.game_index, number=m.number, seat=m.seat, passed=m.passed,
                   cards=list(m.cards), offer=m.offer, card_counts=list(m.card_counts),
                   to_move=m.to_move if m.HasField("to_move") else None,
                   finished=list(m.finished), table_cards=list(m.table_cards),
                   table_kind=m.table_kind,
                   table_seat=m.table_seat if m.HasField("table_seat") else None)


@dataclass(frozen=True)
class TableOutcome:
    completed: bool
    next_game_index: int
    detail: str = ""
    totals: list[int] = field(default_factory=list)
    forfeited: list[int] = field(default_factory=list)

    @classmethod
    def from_result(cls, result: org.TableResult) -> TableOutcome:
        return cls(
            completed=result.status == org.TABLE_STATUS_COMPLETED,
            next_game_index=result.next_game_index,
            detail=result.detail,
            totals=list(result.totals),
            forfeited=list(result.forfeited),
        )


_clients: dict[tuple[int, str, str], Any] = {}
_clients_lock = threading.Lock()
# Let the referee stream far ahead of the recorder (game records are ~5-10 KB): a recording
# batch holding the GIL must never stall the referee on HTTP/2 flow control.
STREAM_OPTIONS = [
    ("grpc.http2.lookahead_bytes", 16 * 1024 * 1024),
    # A referee that restarts is back within seconds: reconnect within a second or two of
    # that, not after gRPC's default backoff (1 s growing 1.6x per failed try up to 120 s),
    # during which every call on the channel fails at once and each table backs off again.
    ("grpc.initial_reconnect_backoff_ms", 250),
    ("grpc.max_reconnect_backoff_ms", 2000),
]


def _client(target: str | None = None) -> Any:
    """One OrganizerClient (one gRPC channel) per process and referee address (default:
    REFEREE_TARGET), shared by every task and thread of the process (a gRPC channel is
    thread-safe) and reused for every table: a table's call costs a stream on an open
    connection, not a connection; a worker routed over a pool keeps one per referee.
    Created after any fork, on first use."""
    target = target or settings.REFEREE_TARGET
    key = (os.getpid(), target, settings.REFEREE_ORGANIZER_TOKEN)
    client = _clients.get(key)
    if client is None:
        from referee_service.organizer_client import OrganizerClient

        with _clients_lock:
            client = _clients.get(key)
            if client is None:
                client = _clients[key] = OrganizerClient(
                    target, settings.REFEREE_ORGANIZER_TOKEN, options=STREAM_OPTIONS
                )
    return client


def referee_channel_drop(*, target: str) -> None:
    """Close this process's channel to the referee at `target` (it is dead): every call on
    it ends at once with an error, which the callers take as the referee being unavailable.
    The next call to that address opens a new channel."""
    key = (os.getpid(), target, settings.REFEREE_ORGANIZER_TOKEN)
    with _clients_lock:
        client = _clients.pop(key, None)
    if client is not None:
        client.close()


def referee_play_table(plan: TablePlan, *, target: str | None = None
                       ) -> Iterator[FinishedGame | TableOutcome | LiveMove]:
    """Play (or resume) a table on the referee at `target` (default: REFEREE_TARGET),
    yielding its games and outcome as they stream in (and each public move, for a plan
    with `live_moves`).

    The plan's `deal_seeds` are the secret seeds of the games still to play (from
    first_game_index), sent on every attempt so a resumed table plays the same deals."""
    from referee_service.organizer_client import RefereeError

    try:
        for event in _client(target).play_table(plan.request()):
            if isinstance(event, org.GameRecord):
                yield FinishedGame.from_record(event)
            elif isinstance(event, org.TableResult):
                yield TableOutcome.from_result(event)
            elif isinstance(event, org.LiveMove) and plan.live_moves:
                yield LiveMove.from_event(event)
    except RefereeError as exc:
        if exc.code == "FAILED_PRECONDITION":
            raise BotsNotConnected(exc.message or "bots not connected") from exc
        if exc.code == "ALREADY_EXISTS":
            raise TableBusy(exc.message or "the table is already running") from exc
        if exc.code in ("INVALID_ARGUMENT", "PERMISSION_DENIED", "UNAUTHENTICATED"):
            raise RefereeRejected(str(exc)) from exc
        raise RefereeUnavailable(str(exc)) from exc


def referee_wait_ready(*, target: str, timeout_s: float) -> bool:
    """Wait up to `timeout_s` for this process's channel to the referee at `target` to
    connect; True once it has (the referee answers again)."""
    return bool(_client(target).wait_ready(timeout_s))


def referee_list_bots(*, target: str | None = None) -> dict[str, str] | None:
    """Bots connected to the referee at `target` (default: REFEREE_TARGET) as
    {bot_id: version}; None when the referee cannot be reached."""
    from referee_service.organizer_client import RefereeError

    try:
        bots = _client(target).list_bots()
    except (RefereeError, OSError):
        return None
    return {bot.bot_id: bot.bot_version for bot in bots}
