"""A table's players, whatever seat each has in the current game: `Participant` (what
every seat has: strikes, its time bank, the fallback move) and `HouseParticipant` (a house
bot, played in-process and paced while a remote seat watches). A registered bot's seat,
`RemoteParticipant`, is in referee_service/remote_seat.py.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

from bots_sdk.bot import play_safe_move
from bots_sdk.rules import Game
from referee_service.house import HouseBot
from referee_service.moves import MoveTiming

if TYPE_CHECKING:
    from referee_service.table import TableRunner

__all__ = ["HouseParticipant", "Participant"]

# The table's one logger, whichever of its modules writes (referee_service/table.py).
log = logging.getLogger("referee_service.table")


class Participant:
    """One of the table's 2-4 players, whatever seat it has in the current game."""

    house = False

    def __init__(self, runner: TableRunner, index: int, name: str) -> None:
        self.runner = runner
        self.index = index
        self.name = name
        self.seat = index
        self.strikes = 0
        self.forfeited = False
        # This seat's own clock (a person's seat at a casual table), else the table's.
        self.move_time_ms = runner.spec.move_time_of(index)
        self.bank_ms = float(runner.spec.time_bank_of(index))

    def play_fallback(self, game: Game, seat: int) -> list[int] | None:
        """Apply the documented fallback move; return the card indices (None: pass)."""
        move = play_safe_move(game)
        return None if move is None else [c.index for c in move]

    async def move(self, game: Game, seat: int) -> MoveTiming:
        raise NotImplementedError


class HouseParticipant(Participant):
    """An in-process house bot (the SDK's example bots)."""

    house = True

    def __init__(self, runner: TableRunner, index: int, policy: str) -> None:
        super().__init__(runner, index, f"house:{policy}")
        self.bot = HouseBot(policy, seed=f"{runner.spec.seed}/house/{index}",
                            move_time_ms=self.move_time_ms,
                            games=runner.spec.total_games)
        self._remotes: list[Participant] | None = None  # the table's remote seats

    async def move(self, game: Game, seat: int) -> MoveTiming:
        start = time.perf_counter()
        # Paced only while a remote seat plays on (it sees the time between its answer and
        # its next request): referee_service/house.py, "Pacing".
        if self._remotes is None:
            self._remotes = [p for p in self.runner.participants if not p.house]
        observed = any(not p.forfeited for p in self._remotes)
        pacer = self.runner.house_pacer
        since = pacer.begin(game) if observed else 0.0
        offered = observed and game.offer is not None
        fallback = None
        played: list[int] | None = None
        try:
            cards = await self.bot.choose(game, seat, self.runner.spec.table_id,
                                          self.runner.game_index, since if observed else None)
            if cards is None:
                game.pass_turn()
            else:
                game.play(list(cards))
                played = [c.index for c in cards]
        except Exception as exc:  # a house bot bug must not stop the table
            log.warning("house bot %s failed: %s", self.name, exc)
            played = self.play_fallback(game, seat)
            fallback = "house_error"
        elapsed = (time.perf_counter() - start) * 1000  # the bot's own time, not the hold
        if observed:
            await pacer.hold(game, since, self.bot.pace_s,
                             declined_offer=offered and played is None)
        return MoveTiming(seat=seat, move_id=None, elapsed_ms=elapsed, thinking_ms=elapsed,
                          network_ms=0.0, fallback=fallback, house=True, played=played)

    def forfeit(self, reason: str) -> None:
        self.forfeited = True

