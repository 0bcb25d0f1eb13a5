"""A protocol round trip for `tienlen-bot check`: the bot, through the real gRPC client,
plays a short table against house bots on an in-process referee (loopback port).

This is the one SDK module that imports the referee (`referee_service`): it is a tool
that runs both ends, and it imports lazily so the rest of the SDK never needs it.
"""

from __future__ import annotations

import asyncio
import secrets
from dataclasses import dataclass, field

import grpc

from bots_sdk.bot import Bot

__all__ = ["RoundTripResult", "round_trip"]


@dataclass
class RoundTripResult:
    games_planned: int
    games_played: int = 0
    strikes: int = 0
    rejected: int = 0
    fallbacks: int = 0
    totals: list[int] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return (
            not self.problems
            and self.games_played == self.games_planned
            and self.strikes == 0
            and self.rejected == 0
        )

    @property
    def summary(self) -> str:
        text = (
            f"{self.games_played}/{self.games_planned} games over gRPC against house bots, "
            f"{self.rejected} rejected move(s), {self.strikes} strike(s), "
            f"{self.fallbacks} fallback(s), bot's points {self.totals[0] if self.totals else 0:+d}"
        )
        if self.problems:
            text += "; " + "; ".join(self.problems)
        return text


async def round_trip(
    bot_cls: type[Bot],
    *,
    games: int = 4,
    opponents: tuple[str, ...] = ("random", "greedy", "heuristic"),
    move_time_ms: int = 1000,
    preset: str = "south",
    timeout_s: float = 120.0,
) -> RoundTripResult:
    from bots_sdk.client import BotClient
    from bots_sdk.protocol.tienlen.v1 import organizer_pb2 as org
    from bots_sdk.protocol.tienlen.v1 import organizer_pb2_grpc as org_grpc
    from referee_service.auth import BotIdentity, StaticTokenStore
    from referee_service.server import running_referee

    token = secrets.token_urlsafe(16)
    organizer_token = secrets.token_urlsafe(16)
    store = StaticTokenStore({token: BotIdentity("check-bot", bot_cls.display_name())})
    result = RoundTripResult(games_planned=games)
    async with running_referee(store, organizer_token=organizer_token) as referee:
        client = BotClient(
            bot_cls, target=referee.target, token=token, max_tables=1, max_connect_attempts=3
        )
        task = asyncio.create_task(client.run())
        try:
            for _ in range(200):
                if client.connected is not None and client.connected.is_set():
                    break
                if task.done():
                    await task  # raises the client's error
                await asyncio.sleep(0.02)
            else:
                result.problems.append("the client did not connect within 4 s")
                return result
            seats = [org.SeatSpec(bot_id="check-bot")] + [
                org.SeatSpec(house_bot=name) for name in opponents
            ]
            request = org.PlayTableRequest(
                table_id=f"check-{secrets.token_hex(4)}",
                seats=seats,
                preset=preset,
                games=games,
                move_time_ms=move_time_ms,
                seed="check",
            )
            async with grpc.aio.insecure_channel(referee.target) as channel:
                stub = org_grpc.OrganizerStub(channel)
                call = stub.PlayTable(
                    request, metadata=(("authorization", f"Bearer {organizer_token}"),)
                )

                async def consume() -> None:
                    async for event in call:
                        kind = event.WhichOneof("event")
                        if kind == "game":
                            result.games_played += 1
                        elif kind == "result":
                            result.totals = list(event.result.totals)
                            result.strikes = event.result.strikes[0] if event.result.strikes else 0
                            if event.result.forfeited:
                                result.problems.append("the bot forfeited the table")

                await asyncio.wait_for(consume(), timeout_s)
        finally:
            client.stop(force=True)
            try:
                await asyncio.wait_for(task, 10)
            except Exception as exc:  # report, do not mask the table's result
                result.problems.append(f"client: {type(exc).__name__}: {exc}")
        result.rejected = client.stats.rejected
        result.fallbacks = client.stats.fallbacks
    return result
