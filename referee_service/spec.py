"""A table to play, checked: the organiser's request turned into plain values.

Every bad field is refused here, before any bot is contacted, with a message naming the
field, so a tournament worker gets INVALID_ARGUMENT instead of a half-played table.
The deal and seat-rotation rules (docs/protocol.md) live here too, so they are testable
without a server. Deal seeds come from the organiser (`deal_seeds`, one per game, so a
resumed table plays the same deals) or are drawn here with `secrets`; they are never
derived from the table's `seed`, which only seeds the house bots. Error messages name
fields and indices, never a seed value (they end up in public table errors).
"""

from __future__ import annotations

import json
import re
import secrets
from dataclasses import dataclass, field, replace
from typing import Any

from bots_sdk.protocol.tienlen.v1 import organizer_pb2 as org
from referee_service.participants import participant_key

DEFAULT_MOVE_TIME_MS = 1000
DEFAULT_TIME_BANK_MS = 2000
DEFAULT_CONNECT_DEADLINE_MS = 10_000
DEFAULT_MAX_STRIKES = 3
DEFAULT_MAX_ILLEGAL_ATTEMPTS = 3
DEFAULT_DISCONNECT_GRACE_MS = 10_000
MAX_MOVE_TIME_MS = 600_000
MAX_GAMES = 100_000
# options_json is a flat object whose values are at most lists of strings (chop tables):
# these limits leave room for that and keep hostile JSON out of the parser's recursion.
MAX_OPTIONS_JSON_BYTES = 16 * 1024
MAX_OPTIONS_JSON_DEPTH = 8
# Points travel as 32-bit integers (GameResult, TableResult.totals): bounded option values
# keep a table's totals inside them over MAX_GAMES games.
MAX_OPTION_POINTS = 100
MAX_DEAL_SEED_CHARS = 128
_TABLE_ID_RE = re.compile(r"^[A-Za-z0-9_.:/-]{1,128}$")


class SpecError(ValueError):
    """A field of PlayTableRequest is unusable; the message names it."""


@dataclass(frozen=True, slots=True)
class ParticipantSpec:
    """One participant: a registered bot (`bot_id`) or a house bot (`house`)."""

    bot_id: str | None = None
    house: str | None = None
    # The seat's own clock (SeatSpec.move_time_ms / time_bank_ms); None: the table's.
    move_time_ms: int | None = None
    time_bank_ms: int | None = None

    @property
    def label(self) -> str:
        return participant_key(bot_id=self.bot_id or "", house_bot=self.house or "")


@dataclass(frozen=True, slots=True)
class TableSpec:
    table_id: str
    participants: tuple[ParticipantSpec, ...]
    preset: str = "south"
    overrides: dict[str, Any] = field(default_factory=dict)
    options: dict[str, Any] = field(default_factory=dict)  # every option value
    games: int = 1
    duplicate_sets: int = 0
    move_time_ms: int = DEFAULT_MOVE_TIME_MS
    time_bank_ms: int = DEFAULT_TIME_BANK_MS
    seed: str = ""  # seeds the house bots only
    first_game_index: int = 0
    # One deal seed per game from first_game_index on (given or drawn with `secrets`).
    deal_seeds: tuple[str, ...] = ()
    starting_games: bool = False
    resume_leader: int | None = None
    resume_starting: bool | None = None
    connect_deadline_ms: int = DEFAULT_CONNECT_DEADLINE_MS
    max_strikes: int = DEFAULT_MAX_STRIKES
    max_illegal_attempts: int = DEFAULT_MAX_ILLEGAL_ATTEMPTS
    disconnect_grace_ms: int = DEFAULT_DISCONNECT_GRACE_MS
    # Stream each public move to the organiser (LiveMove): casual tables only.
    live_moves: bool = False

    @property
    def players(self) -> int:
        return len(self.participants)

    def move_time_of(self, index: int) -> int:
        """Participant `index`'s time a move: its own clock, else the table's."""
        own = self.participants[index].move_time_ms
        return self.move_time_ms if own is None else own

    def time_bank_of(self, index: int) -> int:
        """Participant `index`'s bank for the table: its own clock, else the table's."""
        own = self.participants[index].time_bank_ms
        return self.time_bank_ms if own is None else own

    @property
    def duplicate(self) -> bool:
        return self.duplicate_sets > 0

    @property
    def total_games(self) -> int:
        return self.duplicate_sets * self.players if self.duplicate else self.games

    def seating(self, game_index: int) -> list[int]:
        """Participant index at each seat of game `game_index`."""
        n = self.players
        rotation = game_index % n if self.duplicate else 0
        return [(seat + rotation) % n for seat in range(n)]

    @property
    def every_game_starts(self) -> bool:
        """Every game is a starting game: duplicate sets, or the organiser asked for it."""
        return self.duplicate or self.starting_games

    def deal_seed(self, game_index: int) -> str:
        """The deal seed of game `game_index` (first_game_index <= game_index < total)."""
        offset = game_index - self.first_game_index
        if not 0 <= offset < len(self.deal_seeds):
            raise IndexError(f"game {game_index} is not played by this request")
        return self.deal_seeds[offset]


def drawn_deal_seeds(first: int, total: int, players: int, duplicate: bool) -> tuple[str, ...]:
    """Fresh secret seeds for games first..total-1: one per game, or one per duplicate set
    repeated in each of its rotations (standalone use, when the organiser sends none)."""
    per_set: dict[int, str] = {}
    seeds = []
    for index in range(first, total):
        if duplicate:
            seeds.append(per_set.setdefault(index // players, secrets.token_hex(16)))
        else:
            seeds.append(secrets.token_hex(16))
    return tuple(seeds)


def checked_deal_seeds(given: list[str], first: int, total: int, players: int,
                       duplicate: bool) -> tuple[str, ...]:
    """The organiser's deal seeds, checked (SpecError naming the field, never a seed)."""
    wanted = total - first
    if len(given) != wanted:
        raise SpecError(
            f"deal_seeds: {len(given)} given, expected {wanted} (one per game to play, "
            f"games {first}..{total - 1})")
    for offset, seed in enumerate(given):
        if not 1 <= len(seed) <= MAX_DEAL_SEED_CHARS or not seed.isprintable():
            raise SpecError(
                f"deal_seeds[{offset}] (game {first + offset}): a deal seed is 1-"
                f"{MAX_DEAL_SEED_CHARS} printable characters")
    if duplicate:
        for offset in range(1, wanted):
            index = first + offset
            if index % players and given[offset] != given[offset - 1]:
                start = index - index % players
                raise SpecError(
                    f"deal_seeds[{offset}] (game {index}): a duplicate set plays one deal in "
                    f"every rotation, so games {start}..{start + players - 1} need the same seed")
    return tuple(given)


def json_depth(text: str) -> int:
    """How deeply arrays and objects nest in JSON text, found without recursion (so
    without parsing): brackets inside strings do not count."""
    depth = deepest = 0
    in_string = escaped = False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in "]}":
            depth -= 1
    return deepest


def parse_options_json(text: str) -> dict[str, Any]:
    """PlayTableRequest.options_json as a dict of overrides (SpecError naming the field)."""
    size = len(text.encode("utf-8"))
    if size > MAX_OPTIONS_JSON_BYTES:
        raise SpecError(f"options_json: {size} bytes, at most {MAX_OPTIONS_JSON_BYTES}")
    depth = json_depth(text)
    if depth > MAX_OPTIONS_JSON_DEPTH:
        raise SpecError(f"options_json: nested {depth} levels deep, at most "
                        f"{MAX_OPTIONS_JSON_DEPTH}")
    try:
        overrides = json.loads(text)
    except (json.JSONDecodeError, RecursionError) as exc:
        raise SpecError(f"options_json: not valid JSON ({exc})") from None
    if not isinstance(overrides, dict):
        raise SpecError("options_json: must be a JSON object of option values")
    return overrides


def resolve_options(preset: str, overrides: dict[str, Any]) -> dict[str, Any]:
    """Every option value of `preset` with `overrides` applied (SpecError if invalid)."""
    from bots_sdk.rules import PRESETS, Options

    if preset not in PRESETS:
        known = ", ".join(sorted(PRESETS))
        raise SpecError(f"preset: unknown preset {preset!r} (known: {known})")
    base = PRESETS[preset].to_dict()
    try:
        options = Options.from_dict({**base, **overrides}).to_dict()
    except (ValueError, TypeError) as exc:
        raise SpecError(f"options_json: {exc}") from None
    for key, value in options.items():
        if (key != "start_card" and isinstance(value, int) and not isinstance(value, bool)
                and abs(value) > MAX_OPTION_POINTS):
            raise SpecError(f"options_json: option {key} must be between "
                            f"-{MAX_OPTION_POINTS} and {MAX_OPTION_POINTS}, got {value}")
    return options


def _seat_clock(seat: org.SeatSpec, number: int) -> tuple[int | None, int | None]:
    """A seat's own (move time, bank), checked (SpecError naming the field): None for an
    absent field, which is the table's."""
    move_time = bank = None
    if seat.HasField("move_time_ms"):
        if not 1 <= seat.move_time_ms <= MAX_MOVE_TIME_MS:
            raise SpecError(f"seats[{number}].move_time_ms: 1 to {MAX_MOVE_TIME_MS}, "
                            f"got {seat.move_time_ms}")
        move_time = seat.move_time_ms
    if seat.HasField("time_bank_ms"):
        if seat.time_bank_ms > MAX_MOVE_TIME_MS:
            raise SpecError(f"seats[{number}].time_bank_ms: at most {MAX_MOVE_TIME_MS}, "
                            f"got {seat.time_bank_ms}")
        bank = seat.time_bank_ms
    return move_time, bank


def table_spec(request: org.PlayTableRequest, house_bots: set[str] | frozenset[str]) -> TableSpec:
    """Check a PlayTableRequest and turn it into a TableSpec (SpecError naming the field)."""
    table_id = request.table_id.strip()
    if not _TABLE_ID_RE.match(table_id):
        raise SpecError(
            "table_id: required, 1-128 characters of letters, digits and _ . : / -"
        )
    if not 2 <= len(request.seats) <= 4:
        raise SpecError(f"seats: a table has 2 to 4 seats, got {len(request.seats)}")
    participants = []
    bot_seats: dict[str, int] = {}
    for number, seat in enumerate(request.seats):
        which = seat.WhichOneof("player")
        if which == "bot_id" and seat.bot_id.strip():
            bot_id = seat.bot_id.strip()
            if bot_id in bot_seats:
                # One stream would see both hands, and the messages of two seats of one
                # table could not be told apart (docs/protocol.md).
                raise SpecError(
                    f"seats[{number}]: bot {bot_id!r} already plays seats[{bot_seats[bot_id]}];"
                    " a bot plays at most one seat of a table (house bots may repeat)"
                )
            bot_seats[bot_id] = number
            participants.append(ParticipantSpec(bot_id=bot_id))
        elif which == "house_bot":
            if seat.house_bot not in house_bots:
                known = ", ".join(sorted(house_bots))
                raise SpecError(
                    f"seats[{number}]: unknown house bot {seat.house_bot!r} (known: {known})"
                )
            participants.append(ParticipantSpec(house=seat.house_bot))
        else:
            raise SpecError(f"seats[{number}]: give a bot_id or a house_bot")
        move_time, bank = _seat_clock(seat, number)
        participants[-1] = replace(participants[-1], move_time_ms=move_time, time_bank_ms=bank)
    preset = request.preset or "south"
    overrides: dict[str, Any] = {}
    if request.options_json.strip():
        overrides = parse_options_json(request.options_json)
    options = resolve_options(preset, overrides)
    if request.duplicate_sets and request.games and request.games != request.duplicate_sets * len(participants):
        raise SpecError("games: give either games or duplicate_sets, not both")
    if request.duplicate_sets > MAX_GAMES or request.games > MAX_GAMES:
        raise SpecError(f"games: at most {MAX_GAMES} games per table")
    games = request.games if not request.duplicate_sets else 0
    if not request.duplicate_sets and games == 0:
        raise SpecError("games: play at least one game (or set duplicate_sets)")
    move_time = request.move_time_ms or DEFAULT_MOVE_TIME_MS
    if move_time > MAX_MOVE_TIME_MS:
        raise SpecError(f"move_time_ms: at most {MAX_MOVE_TIME_MS}")
    bank = request.time_bank_ms if request.HasField("time_bank_ms") else DEFAULT_TIME_BANK_MS
    if bank > MAX_MOVE_TIME_MS:
        raise SpecError(f"time_bank_ms: at most {MAX_MOVE_TIME_MS}")
    spec = TableSpec(
        table_id=table_id,
        participants=tuple(participants),
        preset=preset,
        overrides=overrides,
        options=options,
        games=games,
        duplicate_sets=request.duplicate_sets,
        move_time_ms=move_time,
        time_bank_ms=bank,
        seed=request.seed or secrets.token_hex(8),
        first_game_index=request.first_game_index,
        resume_leader=request.resume_leader if request.HasField("resume_leader") else None,
        resume_starting=(
            request.resume_starting if request.HasField("resume_starting") else None
        ),
        connect_deadline_ms=request.connect_deadline_ms or DEFAULT_CONNECT_DEADLINE_MS,
        max_strikes=request.max_strikes or DEFAULT_MAX_STRIKES,
        max_illegal_attempts=request.max_illegal_attempts or DEFAULT_MAX_ILLEGAL_ATTEMPTS,
        disconnect_grace_ms=request.disconnect_grace_ms or DEFAULT_DISCONNECT_GRACE_MS,
        starting_games=request.starting_games,
        live_moves=request.live_moves,
    )
    if spec.first_game_index >= spec.total_games:
        raise SpecError(
            f"first_game_index: {spec.first_game_index} is past the last game "
            f"({spec.total_games} games)"
        )
    if spec.resume_leader is not None and spec.resume_leader >= spec.players:
        raise SpecError(f"resume_leader: seat {spec.resume_leader} does not exist")
    if spec.starting_games and (spec.resume_leader is not None or spec.resume_starting is not None):
        raise SpecError("resume_leader: every game starts afresh with starting_games; "
                        "leave resume_leader and resume_starting unset")
    if request.deal_seeds:
        seeds = checked_deal_seeds(list(request.deal_seeds), spec.first_game_index,
                                   spec.total_games, spec.players, spec.duplicate)
    else:
        seeds = drawn_deal_seeds(spec.first_game_index, spec.total_games, spec.players,
                                 spec.duplicate)
    return replace(spec, deal_seeds=seeds)
