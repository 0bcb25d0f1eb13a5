"""The Tiến Lên rules engine: combinations, legal plays, games, tables, replays.

Pure Python and standard library only, so bots, the referee and offline tools all run
exactly the same rules (docs/rules.md is the authority, cited by section).
"""

from bots_sdk import engine_build

from . import game as _game_module
from .combos import Combination, beats, classify
from .deal import deal
from .game import Game, IllegalMove
from .moves import LegalPlays
from .notes import MAX_NOTE_BYTES
from .options import PRESETS, Options
from .record import REPLAY_SCHEMA
from .replay import ReplayError, replay_game, replay_read
from .state import GameState, MoveRecord
from .table import Table
from .view import SeatView
from .visibility import Visibility, seat_visibility

#: "mypyc" when the compiled engine runs, "python" for the pure-Python source.
ENGINE_BUILD = "python" if _game_module.__file__.endswith(".py") else "mypyc"
assert ENGINE_BUILD == engine_build.BUILD, "bots_sdk.engine_build.select() ran too late"

__all__ = [
    "ENGINE_BUILD", "MAX_NOTE_BYTES", "PRESETS", "REPLAY_SCHEMA", "Combination", "Game", "GameState", "IllegalMove", "LegalPlays",
    "MoveRecord", "Options", "ReplayError", "SeatView", "Table", "Visibility", "beats", "classify", "deal",
    "replay_game", "replay_read", "seat_visibility",
]  # fmt: skip
