"""Holding an answer until an exact time, so that how long a seat took says nothing.

The other seats at a table see the time between their answer and their next move
request. The referee paces its house bots with this (referee_service/house.py) and the
SDK client a bot's answers when it sets `min_answer_ms` (bots_sdk/client.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import itertools
import threading
import time

__all__ = ["RELEASE_CLOCK", "ReleaseClock"]


class ReleaseClock:
    """Wakes the event loop at an exact time: `await RELEASE_CLOCK.until(when)`.

    `asyncio.sleep` cannot pace an answer: the event loop's epoll waits whole milliseconds
    counted from when it starts waiting, so a hold that starts 0.3 ms after another ends
    0.3 ms after it too, and the work done before the hold shows through it (measured on
    the referee's house bots: AUC 0.53-0.70 for heuristic's voluntary against forced
    passes behind a 5 ms pace, 0.42-0.58 with this clock; benchmarks/README.md).

    One thread sleeps to the absolute time on the monotonic clock (`Condition.wait`: the
    kernel's high-resolution timer) and hands the result to the waiting loop through its
    self-pipe, which wakes it at once. One thread serves every hold of the process (every
    table, every event loop); it ends when it has had nothing to do for `IDLE_S` and
    starts again with the next hold."""

    IDLE_S = 0.5

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._heap: list[tuple[float, int, asyncio.AbstractEventLoop,
                               asyncio.Future[None]]] = []
        self._order = itertools.count()
        self._thread: threading.Thread | None = None
        self._stopping = False

    async def until(self, when: float) -> None:
        """Return at `when` (time.monotonic())."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[None] = loop.create_future()
        with self._cond:
            heapq.heappush(self._heap, (when, next(self._order), loop, future))
            if self._thread is None:
                self._stopping = False
                self._thread = threading.Thread(target=self._run, name="release-clock",
                                                daemon=True)
                self._thread.start()
            self._cond.notify()
        await future

    def _run(self) -> None:
        with self._cond:
            idle_since = time.monotonic()
            while not self._stopping:
                now = time.monotonic()
                if not self._heap:
                    if now - idle_since >= self.IDLE_S:
                        break
                    self._cond.wait(self.IDLE_S)
                    continue
                when, _, loop, future = self._heap[0]
                if when > now:
                    self._cond.wait(when - now)
                    continue
                heapq.heappop(self._heap)
                idle_since = now
                with contextlib.suppress(RuntimeError):  # its loop has closed
                    loop.call_soon_threadsafe(_release, future)
            self._thread = None
            for _, _, loop, future in self._heap:  # stopped: release every hold at once
                with contextlib.suppress(RuntimeError):  # its loop has closed
                    loop.call_soon_threadsafe(_release, future)
            self._heap.clear()

    def stop(self, wait_s: float = 0.0) -> None:
        """Release every hold now and end the thread (it starts again with the next hold).
        Waits up to `wait_s` for the thread to end: never on an event loop, which the
        thread may be handing results to."""
        with self._cond:
            thread = self._thread
            self._stopping = True
            self._cond.notify()
        if wait_s and thread is not None and thread is not threading.current_thread():
            thread.join(wait_s)


def _release(future: asyncio.Future[None]) -> None:
    if not future.done():  # not cancelled meanwhile (the table was aborted)
        future.set_result(None)


RELEASE_CLOCK = ReleaseClock()
