"""Referee-side conversions between the engine and the protocol messages (other than the
seat view, which is `view_encoder`'s).

Game results carry points and places but never cards; the bot-facing copy also leaves
out the payment reasons' text.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from bots_sdk.cards import CARD_INDEX, Card
from bots_sdk.protocol.tienlen.v1 import bot_gateway_pb2 as gw
from bots_sdk.protocol.tienlen.v1 import game_pb2 as pb
from bots_sdk.protocol.tienlen.v1 import organizer_pb2 as org
from bots_sdk.rules import GameState

#: The engine's IllegalMove.code -> the wire's MoveErrorCode.
MOVE_ERROR_CODES = {
    "unknown_card": gw.MOVE_ERROR_CODE_UNKNOWN_CARD,
    "not_in_hand": gw.MOVE_ERROR_CODE_NOT_IN_HAND,
    "duplicate_card": gw.MOVE_ERROR_CODE_DUPLICATE_CARD,
    "invalid_combination": gw.MOVE_ERROR_CODE_NOT_A_COMBINATION,
    "does_not_beat": gw.MOVE_ERROR_CODE_DOES_NOT_BEAT,
    "must_contain_start_card": gw.MOVE_ERROR_CODE_MUST_CONTAIN_START_CARD,
    "cannot_pass": gw.MOVE_ERROR_CODE_CANNOT_PASS,
    "locked_out": gw.MOVE_ERROR_CODE_LOCKED_OUT,
    "not_offered": gw.MOVE_ERROR_CODE_NOT_OFFERED,
}


def card_indices(cards: list[Card] | list[str]) -> list[int]:
    """Card indices, ascending, of Cards or canonical card names ("10H")."""
    return sorted(c.index if isinstance(c, Card) else CARD_INDEX[c] for c in cards)


def result_message(game: GameState, *, with_reasons: bool = True) -> pb.GameResult:
    """The result of a finished game as its protocol message (the engine's is
    `bots_sdk.rules.record.replay_result`, the bot's `bots_sdk.wire.game_result`). Payment
    reasons are text the engine writes; the bot-facing copy leaves them out (a stuck-card
    reason could name a card of a hand)."""
    result = pb.GameResult(
        finishing_order=game.finishing_order,
        points=game.points,
        frozen=game.frozen,
        tied=game.tied,
    )
    if game.instant_winner is not None:
        result.instant_winner = game.instant_winner
    for payment in game.payments:
        reason = str(payment.get("reason", ""))
        result.payments.add(
            from_seat=payment["from"],
            to_seat=payment["to"],
            points=payment["points"],
            reason=reason if with_reasons else _reason_category(reason),
        )
    return result


def game_timing(moves: Sequence[Mapping[str, Any]], players: int) -> org.GameTiming:
    """The totals of a game's timing log (the `moves` written to GameRecord.timing_json),
    per seat, so the organiser stores them without parsing the log."""
    seats = [org.SeatTiming() for _ in range(players)]
    elapsed = 0.0
    for move in moves:
        ms = float(move.get("elapsed_ms") or 0.0)
        elapsed += ms
        seat = move.get("seat")
        if isinstance(seat, int) and 0 <= seat < players:
            row = seats[seat]
            row.moves += 1
            row.thinking_ms += float(move.get("thinking_ms") or ms)
            row.max_ms = max(row.max_ms, ms)
            row.fallbacks += bool(move.get("fallback"))
    return org.GameTiming(moves=len(moves), elapsed_ms=elapsed, seats=seats)


def _reason_category(reason: str) -> str:
    """The leading keyword of a payment reason ("stuck", "chop", "frozen", ...)."""
    word = []
    for ch in reason:
        if ch.isalpha() or ch == "_":
            word.append(ch)
        else:
            break
    return "".join(word)
