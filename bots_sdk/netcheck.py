"""A protocol round trip for `tienlen-bot check`: the bot, through the real gRPC client,
plays a short table against house bots on a real referee started for it.

The referee is the platform's, not the SDK's: this module never imports it. It runs the
`tienlen-referee` command (installed with the platform, `pip install -e .` in a checkout)
as a child process on a loopback port, with a fresh bot token and organiser
token, and drives it through the public organiser API as the platform's workers do. An
SDK installed alone has no referee: the round trip is then skipped (`referee_command`
returns None) and the check says so.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import secrets
import shutil
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

import grpc

from bots_sdk.bot import Bot
from bots_sdk.client import BotClient
from bots_sdk.protocol.tienlen.v1 import organizer_pb2 as org
from bots_sdk.protocol.tienlen.v1 import organizer_pb2_grpc as org_grpc

__all__ = ["RefereeUnavailable", "RoundTripResult", "referee_command", "round_trip"]

REFEREE = "tienlen-referee"
BOT_ID = "check-bot"


class RefereeUnavailable(Exception):
    """The referee could not be started; the message says why (with its last log lines)."""


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


def referee_command() -> list[str] | None:
    """How to start a referee here: the `tienlen-referee` installed next to this Python
    (the same environment), else one on PATH; None when the platform is not installed."""
    beside = Path(sys.executable).with_name(REFEREE)
    if beside.is_file() and os.access(beside, os.X_OK):
        return [str(beside)]
    found = shutil.which(REFEREE)
    return [found] if found else None


@contextlib.asynccontextmanager
async def running_referee(command: list[str], bot_token: str, organizer_token: str,
                          *, start_timeout_s: float = 60.0) -> AsyncIterator[str]:
    """A referee child process on a loopback port; yields its address. Its port is read
    from its own `listening` log line (JSON), so no port is guessed."""
    env = {**os.environ, "TIENLEN_BOT_TOKENS": f"{BOT_ID}:{bot_token}",
           "TIENLEN_ORGANIZER_TOKEN": organizer_token}
    proc = await asyncio.create_subprocess_exec(
        *command, "--listen", "127.0.0.1:0", "--token-store", "env", "--pool", "none",
        "--log-format", "json", "--log-level", "info", "--shutdown-grace", "0",
        env=env, stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE)
    assert proc.stderr is not None
    tail: list[str] = []

    async def target() -> str:
        assert proc.stderr is not None
        while True:
            line = await proc.stderr.readline()
            if not line:
                raise RefereeUnavailable(
                    f"{command[0]} exited (status {await proc.wait()}) before listening: "
                    + (" | ".join(tail[-3:]) or "no output"))
            text = line.decode("utf-8", "replace").strip()
            tail.append(text)
            with contextlib.suppress(ValueError):
                record = json.loads(text)
                if isinstance(record, dict) and record.get("event") == "listening":
                    return str(record["target"])

    async def drain() -> None:  # keep reading its log, or a full pipe would stall it
        assert proc.stderr is not None
        while await proc.stderr.readline():
            pass

    draining: asyncio.Task[None] | None = None
    try:
        try:
            async with asyncio.timeout(start_timeout_s):
                address = await target()
        except TimeoutError:
            raise RefereeUnavailable(
                f"{command[0]} did not start listening within {start_timeout_s:g} s") from None
        draining = asyncio.ensure_future(drain())
        yield address
    finally:
        if proc.returncode is None:
            proc.terminate()
            try:
                async with asyncio.timeout(20):
                    await proc.wait()
            except TimeoutError:
                proc.kill()
                await proc.wait()
        if draining is not None:
            draining.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await draining


async def round_trip(
    bot_cls: type[Bot],
    *,
    command: list[str],
    games: int = 4,
    opponents: tuple[str, ...] = ("random", "greedy", "heuristic"),
    move_time_ms: int = 1000,
    preset: str = "south",
    timeout_s: float = 120.0,
) -> RoundTripResult:
    """`bot_cls` plays `games` games through the gRPC client on a referee started with
    `command` (see `referee_command`). RefereeUnavailable if that referee cannot start."""
    token = secrets.token_urlsafe(16)
    organizer_token = secrets.token_urlsafe(16)
    result = RoundTripResult(games_planned=games)
    async with running_referee(command, token, organizer_token) as target:
        client = BotClient(bot_cls, target=target, token=token, max_tables=1,
                           max_connect_attempts=3, follow_pool=False)
        task = asyncio.create_task(client.run())
        try:
            for _ in range(500):
                if client.connected is not None and client.connected.is_set():
                    break
                if task.done():
                    await task  # raises the client's error
                await asyncio.sleep(0.02)
            else:
                result.problems.append("the client did not connect within 10 s")
                return result
            seats = [org.SeatSpec(bot_id=BOT_ID)] + [
                org.SeatSpec(house_bot=name) for name in opponents
            ]
            request = org.PlayTableRequest(
                table_id=f"check-{secrets.token_hex(4)}",
                seats=seats,
                preset=preset,
                games=games,
                move_time_ms=move_time_ms,
            )
            async with grpc.aio.insecure_channel(target) as channel:
                call = org_grpc.OrganizerStub(channel).PlayTable(
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

                async with asyncio.timeout(timeout_s):
                    await consume()
        finally:
            client.stop(force=True)
            try:
                async with asyncio.timeout(10):
                    await task
            except Exception as exc:  # report, do not mask the table's result
                result.problems.append(f"client: {type(exc).__name__}: {exc}")
        result.rejected = client.stats.rejected
        result.fallbacks = client.stats.fallbacks
    return result
