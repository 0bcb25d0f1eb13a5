"""The referee's stream of a table, read by a thread of its own and handed over in batches.

A reader thread drains the gRPC stream so the referee never waits for the database; the
attempt (`tournaments.play.attempt`) records whatever piled up meanwhile in one
transaction. After a game arrives it waits up to `BATCH_WINDOW_S` for the next ones: a
batch costs about the queries of one game (~8 ms of the worker's CPU), and with fast bots
(the house bots play a game in ~4 ms) the games of a table arrive within a few ms of each
other, or tens of ms apart on a busy machine: at 20 ms a 4-game table took 2.2 batches on
average there (profiled under load ~11), at 100 ms about one. Small beside any game with
remote bots (seconds), whose results wait at most that long to be recorded.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Iterator

from tournaments.play import referee, routing
from tournaments.play.referee import FinishedGame, TableOutcome, TablePlan

_END = object()
MAX_BATCH = 64
#: After a game arrives, seconds the recorder waits for the next ones (see the docstring).
BATCH_WINDOW_S = 0.1

Event = FinishedGame | TableOutcome


def event_batches(
    plan: TablePlan, target: str | None = None, watch: Callable[[], None] | None = None,
) -> Iterator[list[Event]]:
    """The referee's events for `plan` in batches of whatever has arrived.

    The games that arrived before an error are yielded first, then the error is raised.
    `watch` runs whenever the stream has been silent for routing.WATCH_INTERVAL_S (it
    raises when the referee is gone). Leaving the loop early closes the stream, which
    cancels (aborts) the table at the referee."""
    events: queue.Queue = queue.Queue()
    stop = threading.Event()

    def read() -> None:
        try:
            for event in referee.referee_play_table(plan, target=target):
                events.put(event)
                if stop.is_set():  # closing the stream cancels (aborts) the table
                    break
        except BaseException as exc:  # handed to the attempt's thread
            events.put(exc)
        finally:
            events.put(_END)

    thread = threading.Thread(target=read, name=f"referee-{plan.table_id}", daemon=True)
    thread.start()
    try:
        while True:
            items, error, done = _split(_next_batch(events, watch))
            if items:
                yield items  # the games that arrived before an error are recorded first
            if error is not None:
                raise error
            if done:
                return
    finally:
        stop.set()


def _next_batch(events: queue.Queue, watch: Callable[[], None] | None) -> list:
    """The next event (waiting as long as it takes, running `watch` while the stream is
    silent), then whatever follows within the batch window."""
    while True:
        try:
            batch = [events.get(timeout=routing.WATCH_INTERVAL_S if watch else None)]
            break
        except queue.Empty:
            if watch is not None:
                watch()
    window_ends = time.monotonic() + BATCH_WINDOW_S
    while len(batch) < MAX_BATCH and batch[-1] is not _END and not isinstance(batch[-1], BaseException):
        try:
            batch.append(events.get(timeout=max(0.0, window_ends - time.monotonic())))
        except queue.Empty:
            break
    return batch


def _split(batch: list) -> tuple[list[Event], BaseException | None, bool]:
    """(the events, the error that ended the stream, whether the stream ended)."""
    items: list[Event] = []
    for item in batch:
        if item is _END:
            return items, None, True
        if isinstance(item, BaseException):
            return items, item, False
        items.append(item)
    return items, None, False
