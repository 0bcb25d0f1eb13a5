"""The JSON replay record (schema ``tienlen.replay/1``, docs/replay-format.md).

A replay holds everything needed to re-simulate a game exactly (preset, every option
value, initial hands, every move including declined offers) and the result, so anyone can
check a result by replaying it: ``replay_game`` raises if the stored result differs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from bots_sdk.cards import cards_of_mask, parse_cards

from .options import PRESETS, Options

if TYPE_CHECKING:
    from .game import Game

REPLAY_SCHEMA = "tienlen.replay/1"


def game_result(game: Game) -> dict[str, Any]:
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


def game_replay(game: Game) -> dict[str, Any]:
    return {
        "schema": REPLAY_SCHEMA,
        "preset": game.preset,
        "options": game.options.to_dict(),
        "players": game.players,
        "seed": game.seed,
        "starting": game.starting,
        "leader": None if game.starting else game.leader,
        "hands": [[str(c) for c in hand] for hand in game.initial_hands],
        "undealt": _undealt(game),
        "moves": game.history,
        "result": game_result(game) if game.is_over else None,
    }


def _undealt(game: Game) -> list[str]:
    dealt = 0
    for m in game._initial:
        dealt |= m
    return [str(c) for c in cards_of_mask(((1 << 52) - 1) & ~dealt)]


def replay_game(replay: dict[str, Any], check: bool = True) -> Game:
    """Re-simulate a replay; raise ValueError on a bad record or a result that differs."""
    from .game import Game, IllegalMove

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
        from .deal import deal

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
