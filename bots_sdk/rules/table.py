"""A table: a series of games carrying only who leads next and the starting flag (§8)."""

from __future__ import annotations

from typing import Any

from .game import Game
from .options import Options, resolve_options


class Table:
    def __init__(self, players: int, preset: str = "south",
                 options: Options | dict[str, Any] | None = None) -> None:
        if type(players) is not int or not 2 <= players <= 4:
            raise ValueError(f"a table seats 2 to 4 players, got {players!r}")
        self.players = players
        self.preset = preset
        self.options = resolve_options(preset, options)
        self.next_leader: int | None = None
        self.next_starting = True
        self.totals = [0] * players
        self.games_played = 0
        self.results: list[dict[str, Any]] = []
        self._current: Game | None = None

    def new_game(self, hands: Any = None, seed: str | None = None) -> Game:
        """The next game, dealt from ``seed`` or given ``hands``, with the carried state."""
        if self._current is not None and not self._current.is_over:
            raise ValueError("the current game is not over")
        if (hands is None) == (seed is None):
            raise ValueError("give exactly one of hands or seed")
        starting = self.next_starting
        leader = None if starting else self.next_leader
        if seed is not None:
            game = Game.from_seed(seed, self.players, preset=self.preset, starting=starting,
                                  leader=leader, options=self.options)
        else:
            game = Game(hands, preset=self.preset, starting=starting, leader=leader,
                        options=self.options)
        if game.players != self.players:
            raise ValueError(f"table has {self.players} players, hands are for {game.players}")
        self._current = game
        return game

    def finish_game(self, game: Game) -> None:
        """Add a finished game's points and carry its next leader and starting flag."""
        if not game.is_over:
            raise ValueError("the game is not over")
        for s, p in enumerate(game.points):
            self.totals[s] += p
        self.next_leader = game.next_leader
        self.next_starting = game.next_starting
        self.games_played += 1
        self.results.append({"finishing_order": game.finishing_order,
                             "points": game.points})
        self._current = None
