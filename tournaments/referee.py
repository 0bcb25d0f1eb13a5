"""The tournaments' side of the referee's organiser API.

`OrganizerClient.play_table` yields one dict per event; this module turns those into plain
dataclasses the services record, and owns the mapping between table seats and referee
participants (`bot:<id>` / `house:<name>`), so the rest of the app never sees the wire.
Channels are created lazily per process: gRPC channels made before a fork hang in the
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
class GameResult:
    """One finished game as recorded: seats map to participant indices (request order)."""

    game_index: int
    seat_participants: list[int]
    replay: dict[str, Any]
    replay_text: str
    timing: dict[str, Any]
    strikes: list[int] = field(default_factory=list)
    forfeited: list[int] = field(default_factory=list)
    seed: str = ""

    @property
    def players(self) -> int:
        return len(self.seat_participants)

    @property
    def result(self) -> dict[str, Any]:
        return self.replay.get("result") or {}

    @property
    def points(self) -> list[int]:
        return [int(p) for p in self.result.get("points", [])]

    @property
    def finishing_order(self) -> list[int]:
        return [int(s) for s in self.result.get("finishing_order", [])]

    def places(self) -> list[int]:
        """1-based place per seat; players sharing last place get the same (last) place."""
        n = self.players
        order = self.finishing_order
        instant = self.result.get("instant_winner")
        shared = set(self.result.get("shared_last") or self.result.get("tied") or [])
        if instant is not None:
            shared = {s for s in range(n) if s != int(instant)}
            order = [int(instant)]
        places = [n] * n
        for place, seat in enumerate(order, start=1):
            if seat not in shared:
                places[seat] = place
        return places


@dataclass(frozen=True)
class TableOutcome:
    completed: bool
    next_game_index: int
    detail: str = ""
    totals: list[int] = field(default_factory=list)
    forfeited: list[int] = field(default_factory=list)


def participant_key(*, bot_id: int, house_bot: str) -> str:
    return f"house:{house_bot}" if house_bot else f"bot:{bot_id}"


def _get(obj: Any, name: str, default: Any = None) -> Any:
    if isinstance(obj, Mapping):
        return obj.get(name, default)
    return getattr(obj, name, default)


def _loads(value: Any) -> dict[str, Any]:
    if not value:
        return {}
    if isinstance(value, Mapping):
        return dict(value)
    return json.loads(value)


def event_parse(event: Any) -> GameResult | TableOutcome | None:
    """One `OrganizerClient.play_table` dict as a GameResult or a TableOutcome."""
    kind = _get(event, "type")
    if kind == "game":
        replay = _get(event, "replay")
        text = _get(event, "replay_json")
        if replay is None:
            replay = _loads(text)
        if not isinstance(text, str):
            text = json.dumps(replay, separators=(",", ":"), ensure_ascii=False)
        return GameResult(
            game_index=int(_get(event, "game_index", 0)),
            seat_participants=[int(p) for p in _get(event, "seat_participants", [])],
            replay=replay,
            replay_text=text,
            timing=_loads(_get(event, "timing") or _get(event, "timing_json")),
            strikes=[int(x) for x in _get(event, "strikes", []) or []],
            forfeited=[int(x) for x in _get(event, "forfeited", []) or []],
            seed=str(_get(event, "seed", "") or replay.get("seed") or ""),
        )
    if kind == "result":
        status = str(_get(event, "status", "")).lower()
        return TableOutcome(
            completed=status in ("completed", "table_status_completed", "1"),
            next_game_index=int(_get(event, "next_game_index", 0) or 0),
            detail=str(_get(event, "detail", "") or ""),
            totals=[int(t) for t in _get(event, "totals", []) or []],
            forfeited=[int(f) for f in _get(event, "forfeited", []) or []],
        )
    return None


_local = threading.local()
# Let the referee stream far ahead of the recorder (game records are ~5-10 KB): a recording
# batch holding the GIL must never stall the referee on HTTP/2 flow control.
STREAM_OPTIONS = [("grpc.http2.lookahead_bytes", 16 * 1024 * 1024)]


def _client() -> Any:
    """One OrganizerClient per process (created after any fork)."""
    key = (os.getpid(), settings.REFEREE_TARGET, settings.REFEREE_ORGANIZER_TOKEN)
    cached = getattr(_local, "client", None)
    if cached is None or cached[0] != key:
        from referee_service.organizer_client import OrganizerClient

        cached = (key, OrganizerClient(
            settings.REFEREE_TARGET, settings.REFEREE_ORGANIZER_TOKEN, options=STREAM_OPTIONS
        ))
        _local.client = cached
    return cached[1]


def referee_play_table(
    *,
    table_id: str,
    participants: Sequence[str],
    preset: str,
    options: Mapping[str, Any],
    games: int,
    duplicate_sets: int,
    move_time_ms: int,
    time_bank_ms: int,
    house_seed: str,
    first_game_index: int,
    resume_leader: int | None,
    resume_starting: bool | None,
    connect_deadline_ms: int,
    deal_seeds: Sequence[str],
    starting_games: bool = False,
) -> Iterator[GameResult | TableOutcome]:
    """Play (or resume) a table on the referee, yielding parsed events as they stream in.

    `deal_seeds` are the secret seeds of the games still to play (from first_game_index),
    sent on every attempt so a resumed table plays the same deals; `house_seed` only seeds
    the house bots."""
    from referee_service.organizer_client import RefereeError

    kwargs: dict[str, Any] = {
        "table_id": table_id,
        "seats": list(participants),
        "preset": preset,
        "options": dict(options) if options else None,
        "games": games,
        "duplicate_sets": duplicate_sets,
        "move_time_ms": move_time_ms,
        "time_bank_ms": time_bank_ms,
        "seed": house_seed,
        "first_game_index": first_game_index,
        "deal_seeds": list(deal_seeds),
        "starting_games": starting_games,
        "resume_leader": resume_leader,
        "resume_starting": resume_starting,
        "connect_deadline_ms": max(1, connect_deadline_ms),
    }
    try:
        for event in _client().play_table(**kwargs):
            parsed = event_parse(event)
            if parsed is not None:
                yield parsed
    except RefereeError as exc:
        if exc.code == "FAILED_PRECONDITION":
            raise BotsNotConnected(exc.message or "bots not connected") from exc
        if exc.code == "ALREADY_EXISTS":
            raise TableBusy(exc.message or "the table is already running") from exc
        if exc.code in ("INVALID_ARGUMENT", "PERMISSION_DENIED", "UNAUTHENTICATED"):
            raise RefereeRejected(str(exc)) from exc
        raise RefereeUnavailable(str(exc)) from exc


def referee_list_bots() -> dict[str, str] | None:
    """Connected bots as {bot_id: version}; None when the referee cannot be reached."""
    from referee_service.organizer_client import RefereeError

    try:
        bots = _client().list_bots()
    except (RefereeError, OSError):
        return None
    return {str(_get(b, "bot_id", "")): str(_get(b, "bot_version", "") or "") for b in bots}
