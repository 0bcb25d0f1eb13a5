"""Bounded waits for tests: a wait on the system under test fails in seconds, saying what it
waited for, instead of sitting until pytest-timeout and printing only where the loop was
(a hung `.ci/run` once said nothing more than that)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterable, Awaitable, Callable
from typing import TypeVar

import pytest

T = TypeVar("T")

# Below pytest-timeout (120 s, pyproject.toml): the test's own message comes first.
TABLE_WITHIN_S = 90.0


async def within(awaitable: Awaitable[T], what: str, seconds: float = 30.0) -> T:
    """Await something the system under test must deliver within `seconds`."""
    try:
        async with asyncio.timeout(seconds):
            return await awaitable
    except TimeoutError:
        pytest.fail(f"timed out after {seconds:g} s waiting for {what}")


async def collect(stream: AsyncIterable[T], what: str, seconds: float = TABLE_WITHIN_S) -> list[T]:
    """Every item of a stream that must end within `seconds` (a PlayTable call: its events)."""
    items: list[T] = []
    try:
        async with asyncio.timeout(seconds):
            async for item in stream:
                items.append(item)
    except TimeoutError:
        last = repr(items[-1])[:300] if items else "none"
        pytest.fail(f"timed out after {seconds:g} s waiting for {what} to end "
                    f"({len(items)} events so far; the last: {last})")
    return items


def wait_until(predicate: Callable[[], object], seconds: float, what: str, interval: float = 0.25) -> None:
    """Poll `predicate` until it is true; fail after `seconds` naming `what`."""
    deadline = time.monotonic() + seconds
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {seconds:g} s waiting for {what}")
        time.sleep(interval)
