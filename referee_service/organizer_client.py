"""The Python wrapper tournament workers use to have the referee play tables.

Synchronous on purpose (Celery tasks are synchronous). The gRPC channel is created lazily
and re-created after a fork: a channel made before `fork()` hangs in the child, and
Celery's prefork workers fork after importing the task modules.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import grpc

from bots_sdk.keepalive import KEEPALIVE_TIME_MS, client_keepalive_options
from bots_sdk.protocol.tienlen.v1 import organizer_pb2 as org
from bots_sdk.protocol.tienlen.v1 import organizer_pb2_grpc as org_grpc

CLIENT_KEEPALIVE = client_keepalive_options()  # agreeing with the referee's


class RefereeError(Exception):
    """A call to the referee failed. `code` is the gRPC status name, e.g.
    "INVALID_ARGUMENT" (bad request: do not retry), "FAILED_PRECONDITION" (a bot is not
    connected), "UNAVAILABLE" (referee down or shutting down: retry later)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message

    @property
    def retryable(self) -> bool:
        return self.code in {"UNAVAILABLE", "FAILED_PRECONDITION", "DEADLINE_EXCEEDED",
                             "RESOURCE_EXHAUSTED"}


def _seat(seat: str | Mapping[str, str]) -> org.SeatSpec:
    """"house:random" / {"house_bot": "random"} -> a house bot; "bot:<id>", "<id>" or
    {"bot_id": "<id>"} -> a registered bot."""
    if isinstance(seat, Mapping):
        if seat.get("house_bot"):
            return org.SeatSpec(house_bot=seat["house_bot"])
        if seat.get("bot_id"):
            return org.SeatSpec(bot_id=str(seat["bot_id"]))
        raise ValueError(f"seat {dict(seat)!r}: give bot_id or house_bot")
    text = str(seat)
    if text.startswith("house:"):
        return org.SeatSpec(house_bot=text[len("house:"):])
    if text.startswith("bot:"):
        text = text[len("bot:"):]
    return org.SeatSpec(bot_id=text)


def _game(record: org.GameRecord) -> dict[str, Any]:
    return {
        "type": "game",
        "table_id": record.table_id,
        "game_index": record.game_index,
        "seat_participants": list(record.seat_participants),
        "seat_names": list(record.seat_names),
        "replay": json.loads(record.replay_json),
        "timing": json.loads(record.timing_json) if record.timing_json else None,
        "strikes": list(record.strikes),
        "forfeited": list(record.forfeited),
        "points": list(record.result.points),
        "finishing_order": list(record.result.finishing_order),
        "duplicate_set": record.duplicate_set,
        "rotation": record.rotation,
        "seed": record.seed,
    }


def _result(result: org.TableResult, started: org.TableStarted | None) -> dict[str, Any]:
    return {
        "type": "result",
        "table_id": result.table_id,
        "status": org.TableStatus.Name(result.status).removeprefix("TABLE_STATUS_").lower(),
        "detail": result.detail,
        "games_played": result.games_played,
        "next_game_index": result.next_game_index,
        "totals": list(result.totals),
        "strikes": list(result.strikes),
        "forfeited": list(result.forfeited),
        "next_leader": result.next_leader if result.HasField("next_leader") else None,
        "next_starting": result.next_starting,
        "seed": started.seed if started else None,
        "participants": list(started.participants) if started else [],
    }


class OrganizerClient:
    """`OrganizerClient("127.0.0.1:50051", token).play_table(...)` -> game dicts, then the
    table result dict. Use as a context manager or call close()."""

    def __init__(self, target: str, token: str, *, timeout: float | None = None,
                 options: Sequence[tuple[str, Any]] = (),
                 root_certificates: bytes | None = None, tls: bool = False,
                 keepalive_ms: int = KEEPALIVE_TIME_MS) -> None:
        self.target = target
        self._metadata = (("authorization", f"Bearer {token}"),)
        self.timeout = timeout
        self._options = [*client_keepalive_options(keepalive_ms), *options]
        self._channel: grpc.Channel | None = None
        self._stub: org_grpc.OrganizerStub | None = None
        self._pid: int | None = None
        self._credentials = (grpc.ssl_channel_credentials(root_certificates)
                             if tls or root_certificates else None)

    def _organizer(self) -> org_grpc.OrganizerStub:
        if self._stub is None or self._pid != os.getpid():
            if self._credentials is not None:
                self._channel = grpc.secure_channel(self.target, self._credentials,
                                                    options=self._options)
            else:
                self._channel = grpc.insecure_channel(self.target, options=self._options)
            self._stub = org_grpc.OrganizerStub(self._channel)
            self._pid = os.getpid()
        return self._stub

    def close(self) -> None:
        if self._channel is not None and self._pid == os.getpid():
            self._channel.close()
        self._channel = self._stub = None

    def __enter__(self) -> OrganizerClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def play_table(
        self,
        *,
        table_id: str,
        seats: Sequence[str | Mapping[str, str]],
        preset: str = "south",
        options: Mapping[str, Any] | None = None,
        games: int = 0,
        duplicate_sets: int = 0,
        move_time_ms: int = 0,
        time_bank_ms: int | None = None,
        seed: str = "",
        first_game_index: int = 0,
        resume_leader: int | None = None,
        resume_starting: bool | None = None,
        connect_deadline_ms: int = 0,
        max_strikes: int = 0,
        max_illegal_attempts: int = 0,
        disconnect_grace_ms: int = 0,
        deal_seeds: Sequence[str] = (),
        starting_games: bool = False,
    ) -> Iterator[dict[str, Any]]:
        """Play a table; yield one dict per finished game (type "game": replay, timing,
        strikes, seat map), then one table result (type "result": status "completed" or
        "aborted", totals per participant, next_game_index for a resume).

        `deal_seeds`: one secret deal seed per game to play, from `first_game_index` on
        (empty: the referee draws them); `seed` only seeds the house bots. Zero means the
        referee's default for every numeric option. Raises RefereeError."""
        request = org.PlayTableRequest(
            table_id=table_id, seats=[_seat(s) for s in seats], preset=preset,
            options_json=json.dumps(dict(options)) if options else "",
            games=games, duplicate_sets=duplicate_sets, move_time_ms=move_time_ms,
            seed=seed, first_game_index=first_game_index,
            connect_deadline_ms=connect_deadline_ms, max_strikes=max_strikes,
            max_illegal_attempts=max_illegal_attempts,
            disconnect_grace_ms=disconnect_grace_ms, deal_seeds=list(deal_seeds),
            starting_games=starting_games)
        if time_bank_ms is not None:
            request.time_bank_ms = time_bank_ms
        if resume_leader is not None:
            request.resume_leader = resume_leader
        if resume_starting is not None:
            request.resume_starting = resume_starting
        call = self._organizer().PlayTable(request, metadata=self._metadata,
                                           timeout=self.timeout)
        started = None
        try:
            for event in call:
                kind = event.WhichOneof("event")
                if kind == "started":
                    started = event.started
                elif kind == "game":
                    yield _game(event.game)
                elif kind == "result":
                    yield _result(event.result, started)
                    return
        except grpc.RpcError as exc:
            raise RefereeError(exc.code().name, exc.details() or "") from None
        finally:
            call.cancel()  # a caller that stops iterating aborts the table

    def list_bots(self) -> list[dict[str, Any]]:
        try:
            response = self._organizer().ListBots(org.ListBotsRequest(),
                                                  metadata=self._metadata,
                                                  timeout=self.timeout or 10)
        except grpc.RpcError as exc:
            raise RefereeError(exc.code().name, exc.details() or "") from None
        return [
            {
                "bot_id": b.bot_id, "bot_name": b.bot_name, "bot_version": b.bot_version,
                "streams": b.streams, "max_tables": b.max_tables,
                "active_tables": b.active_tables,
                "connected_since_unix_ms": b.connected_since_unix_ms,
            }
            for b in response.bots
        ]
