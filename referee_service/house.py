"""House bots: the SDK's example bots playing seats in-process.

They fill seats for testing and for tables short of entrants. They see exactly what a
remote bot sees (the engine's per-seat view, wrapped in the SDK's `View`), the table's
options (`on_table_start`) and its move clock (`view.time_left_ms` = the table's move time).

A bot that thinks for long is not run on the referee's event loop, which serves every other
table and every bot stream: the `search` example (`house_offload = True`) plays each move
in a worker process (a pool of `TIENLEN_HOUSE_WORKERS` processes, default one per core but
one, started on first use). On the loop it would hold everything for its whole budget
(50 ms a move by default); offloaded, other tables do not notice it
(`benchmarks/house_bench.py`, recorded in benchmarks/README.md).
"""

from __future__ import annotations

import asyncio
import logging
import os
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any

log = logging.getLogger("referee_service.house")
_POOL: ProcessPoolExecutor | None = None


def house_bot_names() -> frozenset[str]:
    from bots_sdk.examples import EXAMPLES

    return frozenset(EXAMPLES)


def house_workers() -> int:
    """Worker processes for offloaded house bots (env TIENLEN_HOUSE_WORKERS)."""
    raw = os.environ.get("TIENLEN_HOUSE_WORKERS")
    if raw is None:
        return max(1, (os.cpu_count() or 2) - 1)
    try:
        value = int(raw)
    except ValueError:
        raise ValueError(f"TIENLEN_HOUSE_WORKERS must be a whole number, got {raw!r}") from None
    if not 1 <= value <= 64:
        raise ValueError(f"TIENLEN_HOUSE_WORKERS must be 1..64, got {raw!r}")
    return value


def _pool() -> ProcessPoolExecutor:
    global _POOL
    if _POOL is None:
        import multiprocessing

        # spawn, not fork: the referee holds gRPC channels and an event loop, which a
        # forked child must not inherit.
        _POOL = ProcessPoolExecutor(max_workers=house_workers(),
                                    mp_context=multiprocessing.get_context("spawn"))
    return _POOL


def shutdown_house_workers() -> None:
    """Stop the worker processes (the referee calls this when it stops)."""
    global _POOL
    if _POOL is not None:
        _POOL.shutdown(wait=False, cancel_futures=True)
        _POOL = None


def _play_in_worker(bot: Any, view: Any) -> tuple[tuple[int, ...] | None, Any]:
    """Runs in a worker process: the move (card indices, None to pass) and the bot with
    whatever state the move changed, so one instance still plays the whole table."""
    from bots_sdk.bot import normalize_move

    move = normalize_move(bot.play(view))
    return (None if move is None else tuple(c.index for c in move)), bot


class HouseBot:
    """One example bot instance for one participant of one table."""

    def __init__(self, policy: str, *, seed: str, move_time_ms: int | None = None,
                 games: int | None = None) -> None:
        from bots_sdk.examples import create

        self.bot = create(policy, seed=seed)
        self.offload = bool(getattr(self.bot, "house_offload", False))
        self.move_time_ms = move_time_ms
        self.games = games
        self._game_index: int | None = None
        self._table_started = False

    async def choose(self, game: Any, seat: int, table_id: str,
                     game_index: int) -> tuple[Any, ...] | None:
        """The bot's move as cards, or None for a pass (not yet checked for legality)."""
        from bots_sdk.bot import GameInfo, TableInfo, View, call_hook, normalize_move
        from bots_sdk.cards import Card

        if not self._table_started:
            self._table_started = True
            await call_hook(self.bot.on_table_start(TableInfo(
                table_id=table_id, seat=seat, players=game.players, preset=game.preset,
                options=game.options.to_dict(), games=self.games,
                move_time_ms=self.move_time_ms)))
        if game_index != self._game_index:
            self._game_index = game_index
            await call_hook(self.bot.on_game_start(GameInfo.of_game(
                game, table_id=table_id, game_index=game_index, seat=seat)))
        view = View(game.view(seat), table_id=table_id, game_index=game_index,
                    time_left_ms=self.move_time_ms)
        if not self.offload:
            return normalize_move(await call_hook(self.bot.play(view)))
        global _POOL
        try:
            indices, self.bot = await asyncio.get_running_loop().run_in_executor(
                _pool(), _play_in_worker, self.bot, view)
        except BrokenProcessPool:
            _POOL = None  # a worker died: the next move starts a new pool
            raise
        return None if indices is None else tuple(Card.from_index(i) for i in indices)
