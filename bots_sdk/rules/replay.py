"""The JSON replay record (schema ``tienlen.replay/1``, docs/replay-format.md).

A replay holds everything needed to re-simulate a game exactly (preset, every option
value, initial hands, every move including declined offers) and the result, so anyone can
check a result by replaying it: ``replay_game`` raises if the stored result differs.
"""

from __future__ import annotations

from typing import Any

from bots_sdk.cards import parse_cards

from .deal import deal
from .game import Game, IllegalMove
from .options import PRESETS, Options
from .record import REPLAY_SCHEMA, game_replay, game_result

__all__ = ["REPLAY_SCHEMA", "game_replay", "game_result", "replay_game"]


def replay_game(replay: dict[str, Any], check: bool = True) -> Game:
    """Re-simulate a replay; raise ValueError on a bad record or a result that differs."""
    if not isinstance(replay, dict):
        raise ValueError("a replay must be a JSON object")
    schema = replay.get("schema")
    if schema != REPLAY_SCHEMA:
        raise ValueError(f"unsupported replay schema {schema!r} (want {REPLAY_SCHEMA!r})")
    for key in ("preset", "players", "hands", "moves", "starting"):
        if key not in replay:
            raise ValueError(f"replay is missing {key!r}")
    preset = replay["preset"]
    if preset not in PRESETS:
        raise ValueError(f"replay has unknown preset {preset!r}")
    options = Options.from_dict(replay.get("options") or {}, base=PRESETS[preset])
    hands = replay["hands"]
    if not isinstance(hands, list) or len(hands) != replay["players"]:
        raise ValueError("replay hands do not match its number of players")
    seed = replay.get("seed")
    if seed is not None:
        dealt = [[str(c) for c in h] for h in deal(seed, replay["players"])]
        if [sorted(parse_cards(h)) for h in hands] != [parse_cards(h) for h in dealt]:
            raise ValueError(f"replay hands are not the deal of its seed {seed!r}")
    game = Game(hands, preset=preset, starting=bool(replay["starting"]),
                leader=replay.get("leader"), options=options, seed=replay.get("seed"))
    for i, move in enumerate(replay["moves"]):
        if not isinstance(move, dict) or "seat" not in move:
            raise ValueError(f"replay move {i} is malformed: {move!r}")
        try:
            if move.get("pass"):
                game.pass_turn(seat=move["seat"])
            elif "cards" in move:
                game.play(move["cards"], seat=move["seat"])
            else:
                raise ValueError(f"replay move {i} is neither a play nor a pass: {move!r}")
        except IllegalMove as exc:
            raise ValueError(f"replay move {i} ({move!r}) is illegal: {exc}") from None
    if check and replay.get("result") is not None:
        if not game.is_over:
            raise ValueError("replay stores a result but its moves do not finish the game")
        got = game_result(game)
        stored = replay["result"]
        for key, value in got.items():
            if key in stored and stored[key] != value:
                raise ValueError(f"replay result differs on {key!r}: stored {stored[key]!r}, "
                                 f"re-simulated {value!r}")
    return game
