"""Admitting connecting bots: their token checks batched, their set-up paced.

A burst of connecting bots (a referee starting, or every bot of a restarted referee
coming back) costs the referee's one event loop a share that the tables being played
there pay in games/s. Two things keep that share down (benchmarks/README.md, "Many
connected bots"):

- `TokenChecks`: the Hellos that arrive while one token check runs are checked together
  when it ends, in one hop to a worker thread (and, with a store that has
  `authenticate_bots`, as the platform's does, one database query), instead of a thread
  hop and a query each.
- `AdmissionPacer`: at most `rate` bots a second whose token checked good go on to
  their session and Welcome, in the order they arrived, with a burst of `burst` at once;
  the rest wait their turn (a waiting stream costs only its call). While the referee's
  event loop comes round late (its tables and the connects busy), the rate goes down,
  to a quarter at most, and back up when it keeps up again. None is refused: a bot
  beyond the rate is welcomed later, and the SDK waits for its Welcome with no timeout.
  Unknown tokens are refused before the pacer, so a flood of them cannot hold up bots
  with real tokens.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Sequence

from referee_service.auth import BotIdentity, TokenStore

log = logging.getLogger("referee_service.admission")

#: Tokens checked in one batch at most (one query's IN list).
MAX_BATCH = 500
#: Hellos a second a referee takes on by default, and at once: 5,000 bots a referee are
#: welcomed in ~13 s at best. It bounds only what follows the Hello; gRPC's connection
#: and call set-up before it is not paced, and at 400 a second a canary table on the same
#: referee still lost most of its games/s during a burst (benchmarks/README.md).
DEFAULT_ADMISSION_RATE = 400.0
DEFAULT_ADMISSION_BURST = 200
#: How late the referee's event loop may come round (mean over a quarter of a second)
#: before the pacer slows the Hellos down to let the tables play (0: a fixed rate).
DEFAULT_ADMISSION_LAG_S = 0.010


class TokenChecks:
    """The token store's answers for connecting bots, in batches: one check runs at a
    time, and every token that arrived meanwhile goes into the next (up to MAX_BATCH)."""

    def __init__(self, store: TokenStore, max_batch: int = MAX_BATCH) -> None:
        self.store = store
        self.max_batch = max_batch
        self._waiting: list[tuple[str, asyncio.Future[BotIdentity | None]]] = []
        self._draining: asyncio.Task[None] | None = None
        self.batches = 0  # checks run (tests, benchmarks)

    async def check(self, token: str) -> BotIdentity | None:
        """The bot this token stands for (None: unknown or revoked); raises what the
        store raised for it."""
        future: asyncio.Future[BotIdentity | None] = (
            asyncio.get_running_loop().create_future())
        self._waiting.append((token, future))
        if self._draining is None:
            self._draining = asyncio.get_running_loop().create_task(self._drain())
        return await future

    async def _drain(self) -> None:
        try:
            while self._waiting:
                batch = self._waiting[:self.max_batch]
                del self._waiting[:self.max_batch]
                self.batches += 1
                try:
                    answers = await asyncio.to_thread(self._answers, [t for t, _ in batch])
                except Exception as exc:  # the whole batch failed (e.g. the database)
                    answers = [exc] * len(batch)
                for (_, future), answer in zip(batch, answers, strict=True):
                    if future.done():  # the stream went away meanwhile
                        continue
                    if isinstance(answer, Exception):
                        future.set_exception(answer)
                    else:
                        future.set_result(answer)
        finally:
            self._draining = None

    def _answers(self, tokens: Sequence[str]) -> list[BotIdentity | None | Exception]:
        """In the worker thread: the store's batch method if it has one, else one
        `authenticate_bot` per token (a failure is that token's alone: the gateway
        logs it and tells that bot to retry)."""
        many = getattr(self.store, "authenticate_bots", None)
        if callable(many):
            return list(many(tokens))
        answers: list[BotIdentity | None | Exception] = []
        for token in tokens:
            try:
                answers.append(self.store.authenticate_bot(token))
            except Exception as exc:
                answers.append(exc)
        return answers


class AdmissionPacer:
    """A token bucket on Hellos, released in arrival order: at most `rate` a second,
    `burst` at once (rate 0: no pacing).

    With `lag_target_s` (the default) it also yields to the tables: the task releasing the
    waiting Hellos measures by how much its own timer fired late, which is how long the
    referee's event loop takes to come round (the tables' moves, gRPC's callbacks, the
    Hellos' set-up). Over each `window_s` the mean lateness is compared with the target:
    above it the rate is cut by a quarter (down to `rate` x MIN_RATE_SHARE), below half
    of it the rate climbs back by a tenth of `rate` a window (so too each window in which
    no Hello waited: a later burst does not start at the floor). The Hellos that wait are
    not refused; they are welcomed later, still in order."""

    #: The governor's floor, as a share of the configured rate.
    MIN_RATE_SHARE = 0.25

    def __init__(self, rate: float = DEFAULT_ADMISSION_RATE,
                 burst: int = DEFAULT_ADMISSION_BURST, *,
                 lag_target_s: float = DEFAULT_ADMISSION_LAG_S, window_s: float = 0.25) -> None:
        self.max_rate = rate
        self.rate = rate  # now: the governor moves it within [min_rate, max_rate]
        self.min_rate = rate * self.MIN_RATE_SHARE
        self.burst = max(1, burst)
        self.lag_target_s = lag_target_s  # 0: a fixed rate
        self.window_s = window_s
        self._tokens = float(self.burst)
        self._filled_at: float | None = None
        self._queue: deque[asyncio.Future[None]] = deque()
        self._releaser: asyncio.Task[None] | None = None
        self._window: tuple[float, float, int] | None = None  # start, lateness sum, samples
        self._observed_at: float | None = None  # loop time of the last lateness seen
        self.waited = 0  # Hellos that had to wait their turn (tests, benchmarks)
        self.slowed = 0  # windows in which the governor cut the rate (tests, benchmarks)

    async def admit(self) -> None:
        """Return when this Hello's turn has come (in the order admit was called)."""
        if self.max_rate <= 0:
            return
        loop = asyncio.get_running_loop()
        self._refill(loop.time())
        if not self._queue and self._tokens >= 1:
            self._tokens -= 1
            return
        self.waited += 1
        turn: asyncio.Future[None] = loop.create_future()
        self._queue.append(turn)
        if self._releaser is None:
            self.idle_until(loop.time())
            self._releaser = loop.create_task(self._release())
        await turn  # a stream that goes away meanwhile cancels its turn: skipped

    def _refill(self, now: float) -> None:
        if self._filled_at is not None:
            self._tokens = min(float(self.burst),
                               self._tokens + (now - self._filled_at) * self.rate)
        self._filled_at = now

    async def _release(self) -> None:
        loop = asyncio.get_running_loop()
        try:
            while self._queue:
                now = loop.time()
                self._refill(now)
                while self._queue and self._tokens >= 1:
                    turn = self._queue.popleft()
                    if not turn.done():
                        self._tokens -= 1
                        turn.set_result(None)
                if not self._queue:
                    break
                due = now + (1 - self._tokens) / self.rate
                await asyncio.sleep(due - now)
                woke = loop.time()
                self.observe_lateness(woke - due, woke)
        finally:
            self._releaser = None

    def idle_until(self, now: float) -> None:
        """Nobody waited since the last lateness seen: a loop with no Hello held back
        keeps up, so the rate climbs back as if every window since had been on time."""
        if self._observed_at is None or self.rate >= self.max_rate:
            return
        windows = int((now - self._observed_at) / self.window_s)
        if windows > 0:
            self._window = None
            self.rate = min(self.max_rate, self.rate + 0.1 * self.max_rate * windows)

    def observe_lateness(self, late_s: float, now: float) -> None:
        """The releaser's timer fired `late_s` late at loop time `now`: at the end of each
        window, the rate goes down (the loop is slow to come round) or back up."""
        if self.lag_target_s <= 0:
            return
        self._observed_at = now
        if self._window is None:
            self._window = (now, 0.0, 0)
        start, total, samples = self._window
        total, samples = total + max(0.0, late_s), samples + 1
        if now - start < self.window_s:
            self._window = (start, total, samples)
            return
        self._window = None  # the next lateness starts the next window
        mean = total / samples
        if mean > self.lag_target_s:
            if self.rate == self.max_rate:
                log.info("admission slowed", extra={
                    "event": "admission_slowed", "lateness_ms": round(mean * 1000, 1),
                    "waiting": len(self._queue)})
            self.rate = max(self.min_rate, self.rate * 0.75)
            self.slowed += 1
        elif mean < self.lag_target_s / 2 and self.rate < self.max_rate:
            self.rate = min(self.max_rate, self.rate + 0.1 * self.max_rate)
            if self.rate == self.max_rate:
                log.info("admission back at full rate", extra={
                    "event": "admission_full_rate", "slowed_windows": self.slowed})
