"""The Tiến Lên rules engine: combinations, legal plays, games, tables, replays.

Pure Python and standard library only, so bots, the referee and offline tools all run
exactly the same rules (RULES.md is the authority; docs/rules.md the user guide).
"""

from .combos import Combination, beats, classify
from .deal import deal
from .game import Game, IllegalMove
from .moves import LegalPlays
from .options import PRESETS, Options
from .record import REPLAY_SCHEMA
from .replay import replay_game
from .state import GameState, MoveRecord
from .table import Table
from .view import SeatView
from .visibility import Visibility, seat_visibility

__all__ = [
    "PRESETS", "REPLAY_SCHEMA", "Combination", "Game", "GameState", "IllegalMove", "LegalPlays",
    "MoveRecord", "Options", "SeatView", "Table", "Visibility", "beats", "classify", "deal",
    "replay_game", "seat_visibility",
]  # fmt: skip
