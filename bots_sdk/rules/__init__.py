"""The Tiến Lên rules engine: combinations, legal plays, games, tables, replays.

Pure Python and standard library only, so bots, the referee and offline tools all run
exactly the same rules (RULES.md is the authority; docs/rules.md the user guide).
"""

from .combos import Combination, beats, classify
from .deal import deal
from .game import Game, IllegalMove
from .moves import LegalPlays
from .options import PRESETS, Options
from .replay import REPLAY_SCHEMA, replay_game
from .table import Table
from .view import SeatView

__all__ = [
    "PRESETS", "REPLAY_SCHEMA", "Combination", "Game", "IllegalMove", "LegalPlays", "Options",
    "SeatView", "Table", "beats", "classify", "deal", "replay_game",
]  # fmt: skip
