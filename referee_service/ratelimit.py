"""A token bucket per bot stream, so one flooding bot cannot starve the event loop."""

from __future__ import annotations

import time


class TokenBucket:
    """`rate` messages per second sustained, bursts up to `burst`.

    Also counts what it refused in the current second, so a stream that keeps flooding
    far past the limit can be closed instead of merely throttled."""

    __slots__ = ("rate", "burst", "tokens", "stamp", "refused", "window")

    def __init__(self, rate: float, burst: float | None = None) -> None:
        self.rate = float(rate)
        self.burst = float(burst if burst is not None else 2 * rate)
        self.tokens = self.burst
        self.stamp = time.monotonic()
        self.refused = 0
        self.window = self.stamp

    def allow(self) -> bool:
        now = time.monotonic()
        if self.tokens < self.burst:
            self.tokens = min(self.burst, self.tokens + (now - self.stamp) * self.rate)
        self.stamp = now
        if now - self.window >= 1.0:
            self.window = now
            self.refused = 0
        if self.tokens >= 1.0:
            self.tokens -= 1.0
            return True
        self.refused += 1
        return False

    def credit(self, tokens: float = 1.0) -> None:
        """Allow one more message: the referee asked for it (a move request), so the
        answer never counts against the bot's allowance for everything else."""
        self.tokens = min(self.tokens + tokens, 10 * self.burst)

    def flooding(self, factor: float = 5.0) -> bool:
        """True when more than `factor` x rate messages were refused within a second."""
        return self.refused > factor * self.rate
