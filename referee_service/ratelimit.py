"""A token bucket per bot (shared by all its streams), so one bot cannot starve the loop.

The gateway does not read-and-drop what is over the rate: it stops reading that bot's
streams until the bucket refills. Unread messages stay in gRPC's flow-control window, on
the flooding bot's side of the connection, where they cost the referee nothing; reading
them only to throw them away would cost the event loop as much as serving them.
"""

from __future__ import annotations

import time


class TokenBucket:
    """`rate` messages per second sustained, bursts up to `burst`."""

    __slots__ = ("rate", "burst", "tokens", "stamp", "throttled")

    def __init__(self, rate: float, burst: float | None = None) -> None:
        self.rate = float(rate)
        self.burst = float(burst if burst is not None else 2 * rate)
        self.tokens = self.burst
        self.stamp = time.monotonic()
        self.throttled = 0  # times a reader had to wait for the bucket

    def _refill(self) -> float:
        now = time.monotonic()
        if self.tokens < self.burst:
            self.tokens = min(self.burst, self.tokens + (now - self.stamp) * self.rate)
        self.stamp = now
        return now

    def allow(self) -> bool:
        """Take one message's token if there is one."""
        self._refill()
        if self.tokens >= 1.0:
            self.tokens -= 1.0
            return True
        return False

    def wait_time(self) -> float:
        """Seconds until one token will be there (0.0: now)."""
        self._refill()
        return 0.0 if self.tokens >= 1.0 else (1.0 - self.tokens) / self.rate

    def credit(self, tokens: float = 1.0) -> None:
        """Allow one more message: the referee asked for it (a move request), so the
        answer never counts against the bot's allowance for everything else."""
        self.tokens = min(self.tokens + tokens, 10 * self.burst)
