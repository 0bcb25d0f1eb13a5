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

**Pacing**. A remote bot at the table sees how long the house seats took
between its answer and its next move request. A bot that thinks only when it has a choice
would tell it whether a passing house seat held a legal play (`search`: 108 ms against
6 ms, measured from a remote bot's side). So at a table with a remote seat still playing,
every house decision is held until `house_pace_ms` after it began (the bot class's
attribute, `DEFAULT_PACE_MS` without one): random and greedy 2 ms, heuristic 5 ms, search
its budget plus 20 ms, each above what the bot's own work takes (its CPU time, measured to
the 99.9th percentile). Holds end on an exact clock (`bots_sdk.pacing`: asyncio's
sleep wakes on whole milliseconds and let the work before a hold show through it). An
offloaded bot is told when to stop thinking (`house_deadline`: the pace less room for its
result's way back, `offload_deadline`), so a busy machine makes its search shallower, never
its answer later. A declined offer is never in the public history, so its decision is not
held apart: the next house decision's pace counts from the offer's start, and a declined
offer adds nothing to the gap while a house move follows it (`HousePacer`). A table of
house bots only has no observer and plays at full speed. `benchmarks/house_timing_bench.py`
measures it from the remote side (docs/fair-play.md, benchmarks/README.md).
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections import deque
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any

from bots_sdk.pacing import RELEASE_CLOCK

log = logging.getLogger("referee_service.house")
_POOL: ProcessPoolExecutor | None = None

#: A house bot's pace when its class names none (ms).
DEFAULT_PACE_MS = 2.0
#: Of an offloaded bot's pace, the least kept for its result's way back after it stopped
#: thinking (pickling the bot back, the pool's result thread, the event loop's wakeup);
#: more when the recent ways back took longer (`offload_deadline`).
OFFLOAD_RESERVE_MS = 10.0
#: How late the recent results that thought to their deadline reached the event loop
#: (seconds): a busy machine deschedules the worker in its last simulation and slows the
#: way back, and a search that thinks to its deadline must leave room for both, or its
#: answers would come after the pace while a forced move's never do.
_LATENESS: deque[float] = deque(maxlen=200)


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
    """Stop the worker processes and the release clock (the referee calls this when it
    stops)."""
    global _POOL
    if _POOL is not None:
        _POOL.shutdown(wait=False, cancel_futures=True)
        _POOL = None
    RELEASE_CLOCK.stop()


def _play_in_worker(bot: Any, view: Any, deadline: float | None = None
                    ) -> tuple[tuple[int, ...] | None, Any, float]:
    """Runs in a worker process: the move (card indices, None to pass), the bot with
    whatever state the move changed, so one instance still plays the whole table, and
    when it was done. `deadline` (time.monotonic(), a clock every process of the machine
    shares) is when the bot must stop thinking, for a bot that reads `house_deadline`."""
    from bots_sdk.bot import normalize_move

    _set_deadline(bot, deadline)
    move = normalize_move(bot.play(view))
    _set_deadline(bot, None)
    return (None if move is None else tuple(c.index for c in move)), bot, time.monotonic()


def _set_deadline(bot: Any, deadline: float | None) -> None:
    if hasattr(bot, "house_deadline"):
        bot.house_deadline = deadline


class HousePacer:
    """One table's pacing of its house seats (see the module's docstring).

    `begin` is called when a house decision starts and gives the time (time.monotonic())
    its pace counts from: now, or the start of a declined offer just before it with no
    other move between; `hold` returns at that time plus the pace (at once when nobody
    observes the table)."""

    __slots__ = ("_carry",)

    def __init__(self) -> None:
        self._carry: tuple[int, float] | None = None  # (the game's move count, start)

    def begin(self, game: Any) -> float:
        now = time.monotonic()
        carry, self._carry = self._carry, None
        if carry is not None and carry[0] == game.move_count:
            return carry[1]
        return now

    async def hold(self, game: Any, since: float, pace_s: float, *,
                   declined_offer: bool) -> None:
        """Wait until `since + pace_s`; after a declined offer, carry `since` to the next
        decision instead (it is not in any seat's history: holding it would show that it
        was made)."""
        if declined_offer:
            self._carry = (game.move_count, since)
            return
        if since + pace_s > time.monotonic():
            await RELEASE_CLOCK.until(since + pace_s)


class HouseBot:
    """One example bot instance for one participant of one table."""

    def __init__(self, policy: str, *, seed: str, move_time_ms: int | None = None,
                 games: int | None = None) -> None:
        from bots_sdk.examples import create

        self.bot = create(policy, seed=seed)
        self.offload = bool(getattr(self.bot, "house_offload", False))
        #: how long every decision takes at a table someone observes (seconds)
        self.pace_s = float(getattr(self.bot, "house_pace_ms", DEFAULT_PACE_MS)) / 1000
        self.move_time_ms = move_time_ms
        self.games = games
        self._game_index: int | None = None
        self._table_started = False

    async def choose(self, game: Any, seat: int, table_id: str, game_index: int,
                     paced_since: float | None = None) -> tuple[Any, ...] | None:
        """The bot's move as cards, or None for a pass (not yet checked for legality).
        `paced_since` (time.monotonic()): the decision is paced from then, so a bot that
        reads `house_deadline` is told when to stop thinking (`offload_deadline`)."""
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
        deadline = None
        if paced_since is not None and hasattr(self.bot, "house_deadline"):
            deadline = offload_deadline(paced_since, self.pace_s)
        if not self.offload:
            _set_deadline(self.bot, deadline)
            try:
                return normalize_move(await call_hook(self.bot.play(view)))
            finally:
                _set_deadline(self.bot, None)
        global _POOL
        try:
            indices, self.bot, done = await asyncio.get_running_loop().run_in_executor(
                _pool(), _play_in_worker, self.bot, view, deadline)
            if deadline is not None and done >= deadline - 0.001:  # thought to the end
                _LATENESS.append(time.monotonic() - deadline)
        except BrokenProcessPool:
            _POOL = None  # a worker died: the next move starts a new pool
            raise
        return None if indices is None else tuple(Card.from_index(i) for i in indices)


def offload_deadline(since: float, pace_s: float) -> float:
    """The `house_deadline` of a decision paced from `since` (time.monotonic(), a clock
    every process of the machine shares): the pace less room for the result's way back,
    at least `OFFLOAD_RESERVE_MS`, else the 99th percentile of how late the recent results
    that thought to their deadline arrived, plus 2 ms; at most 80 % of the pace (a starved
    machine makes the search shallow rather than its timing tell). (Measured at
    load 7-11 on 2 cores with a fixed 10 ms: voluntary passes' upper quartile 74-77 ms
    against forced 72-74 ms, AUC 0.55-0.60.)"""
    reserve = OFFLOAD_RESERVE_MS / 1000
    if len(_LATENESS) >= 20:
        late = sorted(_LATENESS)
        reserve = max(reserve, late[int(len(late) * 0.99)] + 0.002)
    return since + pace_s - min(reserve, pace_s * 0.8)
