"""The JSON replay record of a game (schema ``tienlen.replay/1``, docs/replay-format.md).

Built from the engine's read API (``GameState``) only. Re-simulating a record is
``replay.replay_game``; keeping the two apart lets ``game.py`` build records without
importing the module that imports it.
"""

from __future__ import annotations

from typing import Any

from .state import GameState

REPLAY_SCHEMA = "tienlen.replay/1"


def replay_result(game: GameState) -> dict[str, Any]:
    """The result block of a replay (everything ``replay_game`` checks). The protocol's is
    ``referee_service.wire.result_message``, what a bot receives ``bots_sdk.wire.game_result``."""
    return {
        "finishing_order": game.finishing_order,
        "points": game.points,
        "instant_winner": game.instant_winner,
        "frozen": game.frozen,
        "tied": list(game.tied),
        "payments": game.payments,
        "next_leader": game.next_leader,
        "next_starting": game.next_starting,
        "end_reason": game.end_reason,
        "den_bai": game.den_bai,
        "instant_win_kind": game.instant_win_kind,
    }


def game_replay(game: GameState) -> dict[str, Any]:
    """The whole replay record: preset, every option, hands, moves, result."""
    return {
        "schema": REPLAY_SCHEMA,
        "preset": game.preset,
        "options": game.options.to_dict(),
        "players": game.players,
        "seed": game.seed,
        "starting": game.starting,
        "leader": None if game.starting else game.leader,
        "hands": [[str(c) for c in hand] for hand in game.initial_hands],
        "undealt": [str(c) for c in game.undealt],
        "moves": game.history,
        "result": replay_result(game) if game.is_over else None,
    }
