"""A bot that thinks for a while before each move: it stretches a table over enough
seconds for the fault tests to kill and restart processes in the middle of it."""

from __future__ import annotations

import os
import time

from bots_sdk.bot import Move, View
from bots_sdk.examples.greedy import GreedyBot

THINK_S = float(os.environ.get("TIENLEN_E2E_THINK_MS", "15")) / 1000


class SlowGreedyBot(GreedyBot):
    name = "slow-greedy"

    def play(self, view: View) -> Move:
        time.sleep(THINK_S)
        return super().play(view)
