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
from referee_service.participants import participant_parse

CLIENT_KEEPALIVE = client_keepalive_options()  # agreeing with the referee's

#: What `OrganizerClient.play_table` yields: the payload of each TableEvent.
TableEventPayload = org.TableStarted | org.GameRecord | org.TableResult | org.LiveMove


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


def seat_spec(seat: str | Mapping[str, str]) -> org.SeatSpec:
    """"house:random" / {"house_bot": "random"} -> a house bot; "bot:<id>", "<id>" or
    {"bot_id": "<id>"} -> a registered bot."""
    if isinstance(seat, Mapping):
        if seat.get("house_bot"):
            return org.SeatSpec(house_bot=seat["house_bot"])
        if seat.get("bot_id"):
            return org.SeatSpec(bot_id=str(seat["bot_id"]))
        raise ValueError(f"seat {dict(seat)!r}: give bot_id or house_bot")
    key = participant_parse(str(seat))
    return org.SeatSpec(house_bot=key.house_bot) if key.house else org.SeatSpec(bot_id=key.bot_id)


def table_request(*, seats: Sequence[str | Mapping[str, str]],
                  options: Mapping[str, Any] | None = None,
                  **fields: Any) -> org.PlayTableRequest:
    """A PlayTableRequest from seats as text ("house:random", "bot:<id>", "<id>" or a
    mapping), options as a mapping, and any other PlayTableRequest field by its proto name.

    The message itself is the parameter list (organizer.proto documents each field): an
    unknown name raises ValueError, a None leaves an optional field unset, 0 or "" is the
    referee's default."""
    request = org.PlayTableRequest(
        seats=[seat_spec(s) for s in seats],
        options_json=json.dumps(dict(options)) if options else "",
        **{name: value for name, value in fields.items() if value is not None})
    return request


class OrganizerClient:
    """`OrganizerClient("127.0.0.1:50051", token).play_table(...)` -> the table's events
    (TableStarted, GameRecord per game, TableResult). Use as a context manager or call
    close()."""

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

    def wait_ready(self, timeout: float) -> bool:
        """Wait up to `timeout` seconds for the channel to connect (True once it has): a
        caller that just found the referee unavailable learns when it answers again."""
        self._organizer()
        assert self._channel is not None
        ready = grpc.channel_ready_future(self._channel)
        try:
            ready.result(timeout=timeout)
        except grpc.FutureTimeoutError:
            # Cancelled, it stops watching the channel: left pending, its subscription kept
            # gRPC's connectivity-polling thread running for as long as the channel lived.
            ready.cancel()
            return False
        return True

    def close(self) -> None:
        if self._channel is not None and self._pid == os.getpid():
            self._channel.close()
        self._channel = self._stub = None

    def __enter__(self) -> OrganizerClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def play_table(self, request: org.PlayTableRequest | None = None, /,
                   **fields: Any) -> Iterator[TableEventPayload]:
        """Play a table; yield its events as the referee streams them, as the protobuf
        messages themselves: `TableStarted`, one `GameRecord` per finished game (replay and
        timing JSON as the referee wrote them, points in `record.result`), then one
        `TableResult` (status `TABLE_STATUS_COMPLETED` or `TABLE_STATUS_ABORTED`, totals per
        participant, `next_game_index` for a resume); with `live_moves`, a `LiveMove` after
        each public move too.

        Give a PlayTableRequest, or its fields as keywords (`table_request`): e.g.
        `play_table(table_id="t1", seats=["house:random", "bot:7"], games=4)`. `deal_seeds`:
        one secret deal seed per game to play, from `first_game_index` on (empty: the
        referee draws them); `seed` only seeds the house bots. Raises RefereeError."""
        if request is None:
            request = table_request(**fields)
        elif fields:
            raise TypeError("give a PlayTableRequest or its fields, not both")
        call = self._organizer().PlayTable(request, metadata=self._metadata,
                                           timeout=self.timeout)
        try:
            for event in call:
                kind = event.WhichOneof("event")
                if kind is None:
                    continue  # an event kind newer than this client
                payload: TableEventPayload = getattr(event, kind)
                yield payload
                if kind == "result":
                    return
        except grpc.RpcError as exc:
            raise RefereeError(exc.code().name, exc.details() or "") from None
        finally:
            call.cancel()  # a caller that stops iterating aborts the table

    def list_bots(self) -> list[org.ConnectedBot]:
        """The bots connected right now (ConnectedBot: bot_id, bot_version, streams, ...)."""
        try:
            response = self._organizer().ListBots(org.ListBotsRequest(),
                                                  metadata=self._metadata,
                                                  timeout=self.timeout or 10)
        except grpc.RpcError as exc:
            raise RefereeError(exc.code().name, exc.details() or "") from None
        return list(response.bots)
