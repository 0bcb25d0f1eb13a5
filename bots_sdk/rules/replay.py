"""The JSON replay record (schema ``tienlen.replay/1``, docs/replay-format.md).

A replay holds everything needed to re-simulate a game exactly (preset, every option
value, initial hands, every move including declined offers) and the result, so anyone can
check a result by replaying it: ``replay_game`` raises if the stored result differs.

``replay_read`` is the one reader of a replay, wherever it comes from (a file, the
platform's database, an HTTP answer, the referee's stream): it parses it and checks its
shape, and says in a ``ReplayError`` what is wrong. Every tool and page reads replays
through it, so a malformed replay gives the same clear message everywhere.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from bots_sdk.cards import CARD_TEXT, parse_cards

from .deal import deal
from .game import Game, IllegalMove
from .options import PRESETS, Options
from .record import REPLAY_SCHEMA, game_replay, replay_result

__all__ = ["REPLAY_SCHEMA", "ReplayError", "game_replay", "replay_result", "replay_game", "replay_read"]

_REQUIRED = ("preset", "players", "hands", "moves", "starting")
_CARDS = frozenset(CARD_TEXT)


class ReplayError(ValueError):
    """Not a replay the engine can read or re-simulate; the message says what is wrong."""


def replay_read(source: str | bytes | bytearray | Mapping[str, Any]) -> dict[str, Any]:
    """Read a ``tienlen.replay/1`` record: JSON text or bytes, or an already parsed object.

    Checks the shape every reader relies on (the schema, a known preset, 2-4 players with
    a hand of text cards each, moves that are plays or passes by a seat, a result object
    or null) and returns the record as a dict; raises ``ReplayError`` otherwise. It does not
    re-simulate the moves: ``replay_game`` does, and checks the result.
    """
    if isinstance(source, str | bytes | bytearray):
        try:
            doc: Any = json.loads(source)
        except (ValueError, RecursionError) as exc:  # UnicodeDecodeError is a ValueError
            raise ReplayError(f"not a replay: the text is not JSON ({exc})") from None
    else:
        doc = source
    if not isinstance(doc, Mapping):
        raise ReplayError(f"not a replay: expected a JSON object, got {type(doc).__name__}")
    replay = dict(doc)
    schema = replay.get("schema")
    if schema != REPLAY_SCHEMA:
        raise ReplayError(f"unsupported replay schema {schema!r} (expected {REPLAY_SCHEMA!r})")
    missing = [key for key in _REQUIRED if key not in replay]
    if missing:
        raise ReplayError(f"not a valid replay: missing {', '.join(map(repr, missing))}")
    preset = replay["preset"]
    if not isinstance(preset, str) or preset not in PRESETS:
        raise ReplayError(f"replay has unknown preset {preset!r} (known: {', '.join(PRESETS)})")
    if replay.get("options") is not None and not isinstance(replay["options"], Mapping):
        raise ReplayError("replay options must be a JSON object")
    players = replay["players"]
    if type(players) is not int or not 2 <= players <= 4:
        raise ReplayError(f"replay players must be 2, 3 or 4, not {players!r}")
    hands = replay["hands"]
    if not isinstance(hands, list) or len(hands) != players:
        raise ReplayError(f"replay hands do not match its number of players ({players})")
    for seat, hand in enumerate(hands):
        if not isinstance(hand, list):
            raise ReplayError(f"replay hand of seat {seat} is not a list of cards")
        try:
            if _CARDS.issuperset(hand):
                continue  # the form writers use ("10H"); other forms go through the card parser
        except TypeError:
            pass  # an unhashable item, named below
        try:
            odd = next((c for c in hand if not isinstance(c, str | int) or isinstance(c, bool)), None)
            if odd is not None:
                raise ValueError(f"unknown card {odd!r}")
            parse_cards(hand)
        except (ValueError, TypeError) as exc:
            raise ReplayError(f"bad hands in replay: seat {seat}: {exc}") from None
    if not isinstance(replay["starting"], bool):
        raise ReplayError(f"replay 'starting' must be true or false, not {replay['starting']!r}")
    leader = replay.get("leader")
    if leader is not None and (type(leader) is not int or not 0 <= leader < players):
        raise ReplayError(f"replay leader {leader!r} is not a seat")
    seed = replay.get("seed")
    if seed is not None and not isinstance(seed, str):
        raise ReplayError(f"replay seed must be a string or null, not {seed!r}")
    moves = replay["moves"]
    if not isinstance(moves, list):
        raise ReplayError("replay moves must be a list")
    for i, move in enumerate(moves):
        mover = move.get("seat") if isinstance(move, dict) else None
        if type(mover) is not int or not 0 <= mover < players:
            raise ReplayError(f"replay move {i} is malformed (no seat of the game): {move!r}")
        if not move.get("pass") and not isinstance(move.get("cards"), list):
            raise ReplayError(f"replay move {i} is neither a play nor a pass: {move!r}")
    if replay.get("result") is not None and not isinstance(replay["result"], Mapping):
        raise ReplayError("replay result must be a JSON object or null")
    return replay


def replay_game(replay: str | bytes | Mapping[str, Any], check: bool = True) -> Game:
    """Re-simulate a replay (anything ``replay_read`` reads); raise ``ReplayError`` (a
    ValueError) on a bad record, an illegal move or a result that differs."""
    replay = replay_read(replay)
    preset = replay["preset"]
    try:
        options = Options.from_dict(replay.get("options") or {}, base=PRESETS[preset])
    except (ValueError, TypeError) as exc:
        raise ReplayError(f"replay options are not valid: {exc}") from None
    hands = replay["hands"]
    seed = replay.get("seed")
    if seed is not None:
        dealt = [[str(c) for c in h] for h in deal(seed, replay["players"])]
        if [sorted(parse_cards(h)) for h in hands] != [parse_cards(h) for h in dealt]:
            raise ReplayError(f"replay hands are not the deal of its seed {seed!r}")
    try:
        game = Game(hands, preset=preset, starting=replay["starting"],
                    leader=replay.get("leader"), options=options, seed=seed)
    except (ValueError, TypeError) as exc:
        raise ReplayError(f"replay cannot set the game up: {exc}") from None
    for i, move in enumerate(replay["moves"]):
        try:
            if move.get("pass"):
                game.pass_turn(seat=move["seat"])
            else:
                game.play(move["cards"], seat=move["seat"])
        except (IllegalMove, ValueError) as exc:
            raise ReplayError(f"replay move {i} ({move!r}) is illegal: {exc}") from None
    if check and replay.get("result") is not None:
        if not game.is_over:
            raise ReplayError("replay stores a result but its moves do not finish the game")
        got = replay_result(game)
        stored = replay["result"]
        for key, value in got.items():
            if key in stored and stored[key] != value:
                raise ReplayError(f"replay result differs on {key!r}: stored {stored[key]!r}, "
                                 f"re-simulated {value!r}")
    return game
