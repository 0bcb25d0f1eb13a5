"""Harness for the referee tests: a real server on a loopback port and real bot clients.

`RawBot` speaks the protocol with the generated stubs only (as a bot in another language
would), records every message the referee sends it, and lets a test script misbehaviour
through its `policy`.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
from collections.abc import AsyncIterator, Callable
from typing import Any

import grpc

from bots_sdk.protocol.tienlen.v1 import bot_gateway_pb2 as gw
from bots_sdk.protocol.tienlen.v1 import organizer_pb2 as org
from bots_sdk.protocol.tienlen.v1 import organizer_pb2_grpc as org_grpc
from tests.waits import TABLE_WITHIN_S, collect

ORGANIZER_TOKEN = "org-secret"
BOTS = ("alice", "bob", "carol", "dave", "erin", "frank", "grace", "heidi")
CONNECT = "/tienlen.v1.BotGateway/Connect"

# A policy gets the MoveRequest (and how many times this move was asked) and returns a
# Move, a raw bytes message, None (stay silent) or a list of those.
Policy = Callable[[gw.MoveRequest, "RawBot"], Any]


def token_of(bot_id: str) -> str:
    return f"token-{bot_id}-0123456789"


def move(request: gw.MoveRequest, cards: list[int] | None) -> gw.BotMessage:
    """A Move answering `request`: cards, or a pass when cards is None."""
    m = gw.Move(table_id=request.table_id, game_index=request.game_index,
                move_id=request.move_id)
    if cards is None:
        setattr(m, "pass", True)
    else:
        m.cards.extend(cards)
    return gw.BotMessage(move=m)


def random_policy(seed: int = 0) -> Policy:
    rng = random.Random(seed)

    def policy(request: gw.MoveRequest, bot: RawBot) -> gw.BotMessage:
        view = request.view
        options: list[list[int] | None] = [list(p.cards) for p in view.legal_plays]
        if view.can_pass:
            options.append(None)
        return move(request, rng.choice(options))

    return policy


class RawBot:
    """A bot built on the raw generated stubs, in its own task."""

    def __init__(self, target: str, bot_id: str, *, policy: Policy | None = None,
                 max_tables: int = 4, token: str | None = None, hello: bool = True,
                 omit_legal_plays: bool = False, ack_moves: bool = False) -> None:
        self.target = target
        self.bot_id = bot_id
        self.token = token if token is not None else token_of(bot_id)
        self.policy = policy or random_policy(hash(bot_id) & 0xFFFF)
        self.max_tables = max_tables
        self.send_hello = hello
        self.omit_legal_plays = omit_legal_plays
        self.ack_moves = ack_moves
        self.received: list[gw.RefereeMessage] = []
        self.outgoing: asyncio.Queue[bytes | None] = asyncio.Queue()
        self.welcome = asyncio.Event()
        self.table_ends: dict[str, gw.TableEnd] = {}
        self.status: grpc.StatusCode | None = None
        self.details = ""
        self.channel: grpc.aio.Channel | None = None
        self.task: asyncio.Task[None] | None = None
        self.requests: dict[int, gw.MoveRequest] = {}

    async def table_end(self, table_id: str, timeout: float = 5) -> gw.TableEnd:
        """The table's TableEnd, waiting for it if need be: it travels on this bot's
        stream, which can deliver it after the organiser's stream reported the result."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while table_id not in self.table_ends and loop.time() < deadline:
            await asyncio.sleep(0.01)
        return self.table_ends[table_id]

    def of_kind(self, kind: str) -> list[Any]:
        return [getattr(m, kind) for m in self.received if m.WhichOneof("body") == kind]

    def send(self, message: gw.BotMessage | bytes) -> None:
        data = message if isinstance(message, bytes) else message.SerializeToString()
        self.outgoing.put_nowait(data)

    async def _requests(self) -> AsyncIterator[bytes]:
        if self.send_hello:
            yield gw.BotMessage(hello=gw.Hello(
                token=self.token, bot_name=self.bot_id.title(), bot_version="1.0",
                max_tables=self.max_tables, protocol_version=1,
                omit_legal_plays=self.omit_legal_plays,
                ack_moves=self.ack_moves)).SerializeToString()
        while True:
            data = await self.outgoing.get()
            if data is None:
                return
            yield data

    async def _run(self) -> None:
        self.channel = grpc.aio.insecure_channel(self.target)
        call = self.channel.stream_stream(
            CONNECT, request_serializer=None,
            response_deserializer=gw.RefereeMessage.FromString)(self._requests())
        try:
            async for message in call:
                self.received.append(message)
                kind = message.WhichOneof("body")
                if kind == "welcome":
                    self.welcome.set()
                elif kind == "table_end":
                    self.table_ends[message.table_end.table_id] = message.table_end
                elif kind == "move_request":
                    self.requests[message.move_request.move_id] = message.move_request
                    self._answer(message.move_request)
                elif kind == "move_rejected":
                    self._retry(message.move_rejected)
            self.status = grpc.StatusCode.OK
        except grpc.aio.AioRpcError as exc:
            self.status = exc.code()
            self.details = exc.details() or ""
        finally:
            await self.channel.close()

    def _answer(self, request: gw.MoveRequest) -> None:
        answer = self.policy(request, self)
        for item in answer if isinstance(answer, list) else [answer]:
            if item is not None:
                self.send(item)

    def _retry(self, rejected: gw.MoveRejected) -> None:
        """Answer a rejection again, as docs/protocol.md says a bot may: the policy sees
        the original request with `attempt` counting the answers so far."""
        request = self.requests.get(rejected.move_id)
        if request is None or rejected.attempts_left == 0 or rejected.code in (
                gw.MOVE_ERROR_CODE_STALE_MOVE, gw.MOVE_ERROR_CODE_UNKNOWN_TABLE,
                gw.MOVE_ERROR_CODE_WRONG_GAME):
            return
        retry = gw.MoveRequest()
        retry.CopyFrom(request)
        retry.attempt = request.attempt + 1
        retry.time_left_ms = rejected.time_left_ms
        self.requests[rejected.move_id] = retry
        self._answer(retry)

    def start(self) -> RawBot:
        self.task = asyncio.get_running_loop().create_task(self._run())
        return self

    async def connected(self, timeout: float = 10) -> RawBot:
        await asyncio.wait_for(self.welcome.wait(), timeout)
        return self

    async def close(self) -> None:
        """Half-close the stream (a clean disconnect) and wait for the end."""
        self.outgoing.put_nowait(None)
        if self.task is not None:
            with_timeout = asyncio.wait_for(asyncio.shield(self.task), 10)
            try:
                await with_timeout
            except TimeoutError:
                self.task.cancel()

    async def kill(self) -> None:
        """Drop the connection abruptly, as a crashed process would."""
        if self.task is not None:
            self.task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self.task
        if self.channel is not None:
            await self.channel.close()


async def start_bots(target: str, bot_ids: list[str], **kwargs: Any) -> list[RawBot]:
    bots = [RawBot(target, b, **kwargs).start() for b in bot_ids]
    for bot in bots:
        await bot.connected()
    return bots


def organizer_stub(target: str) -> tuple[grpc.aio.Channel, org_grpc.OrganizerStub]:
    channel = grpc.aio.insecure_channel(target)
    return channel, org_grpc.OrganizerStub(channel)


AUTH = (("authorization", f"Bearer {ORGANIZER_TOKEN}"),)


def fixed_deal_seeds(fields: dict[str, Any], players: int) -> list[str]:
    """Fixed deals for a test that names a `seed`: the games still to play are dealt from
    "<seed>/game/<i>" (or "<seed>/set/<d>" in duplicate sets), so its games are the same on
    every run (a random deal may be an instant win, which ends a game before any move).
    Pass `deal_seeds=[]` to have the referee draw them."""
    seed, first = fields["seed"], fields.get("first_game_index", 0)
    if fields.get("duplicate_sets"):
        total = fields["duplicate_sets"] * players
        return [f"{seed}/set/{i // players}" for i in range(first, total)]
    return [f"{seed}/game/{i}" for i in range(first, fields.get("games", 0))]


async def play_table(target: str, **fields: Any) -> list[org.TableEvent]:
    """Run PlayTable to the end; return every event (raises AioRpcError on failure; fails
    the test, naming the table, if it has not ended within `within_s`)."""
    within_s = fields.pop("within_s", TABLE_WITHIN_S)
    fields.setdefault("move_time_ms", 5000)
    fields.setdefault("connect_deadline_ms", 5000)
    seats = fields.pop("seats")
    # {seat index: (move_time_ms, time_bank_ms)}: those seats' own clocks (SeatSpec).
    seat_clocks = fields.pop("seat_clocks", {})
    if "deal_seeds" not in fields and fields.get("seed"):
        fields["deal_seeds"] = fixed_deal_seeds(fields, len(seats))
    request = org.PlayTableRequest(
        seats=[org.SeatSpec(house_bot=s[len("house:"):]) if s.startswith("house:")
               else org.SeatSpec(bot_id=s) for s in seats],
        **fields)
    for index, (move_ms, bank_ms) in seat_clocks.items():
        request.seats[index].move_time_ms = move_ms
        request.seats[index].time_bank_ms = bank_ms
    channel, stub = organizer_stub(target)
    try:
        return await collect(stub.PlayTable(request, metadata=AUTH), f"table {request.table_id!r}", within_s)
    finally:
        await channel.close()


def games_of(events: list[org.TableEvent]) -> list[org.GameRecord]:
    return [e.game for e in events if e.WhichOneof("event") == "game"]


def result_of(events: list[org.TableEvent]) -> org.TableResult:
    results = [e.result for e in events if e.WhichOneof("event") == "result"]
    assert len(results) == 1, events
    return results[0]
