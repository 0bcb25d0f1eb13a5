"""Referee-side conversions between the engine and the protocol messages.

Only what a seat may see goes into a message: `seat_view` copies the engine's per-seat
view (which the engine builds to hide other hands) and nothing else, and game results
carry points and places but never cards.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from bots_sdk import cards
from bots_sdk.protocol.tienlen.v1 import bot_gateway_pb2 as gw
from bots_sdk.protocol.tienlen.v1 import game_pb2 as pb

KIND_CODES = {
    "single": pb.COMBINATION_KIND_SINGLE,
    "pair": pb.COMBINATION_KIND_PAIR,
    "triple": pb.COMBINATION_KIND_TRIPLE,
    "straight": pb.COMBINATION_KIND_STRAIGHT,
    "pair_sequence": pb.COMBINATION_KIND_PAIR_SEQUENCE,
    "four_of_a_kind": pb.COMBINATION_KIND_FOUR_OF_A_KIND,
}

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

# The engine's deck table (card index <-> text), the platform's only one.
CARD_TEXT = cards.CARD_TEXT
_TEXT_INDEX = cards.CARD_INDEX


def card_index(card: Any) -> int:
    """Index of a Card, an int, or a card name as the engine's JSON shapes use ("10H")."""
    if isinstance(card, int):
        return card
    if isinstance(card, str):
        return _TEXT_INDEX[card.upper()]
    return int(card.index)


def card_indices(cards: Iterable[Any]) -> list[int]:
    return sorted(card_index(c) for c in cards)


class HistoryEncoder:
    """Converts a game's public history to protocol messages once per move, not per view:
    the history only grows, so each entry is converted the first time it is seen.

    `seat_view` with this is the reference encoding of the engine's view; the referee's
    move path uses the faster `view_encoder`, which a test checks against it."""

    __slots__ = ("moves",)

    def __init__(self) -> None:
        self.moves: list[pb.PublicMove] = []

    def update(self, history: Sequence[dict[str, Any]]) -> list[pb.PublicMove]:
        for entry in history[len(self.moves):]:
            if entry.get("pass"):
                move = pb.PublicMove(seat=entry["seat"])
                setattr(move, "pass", True)  # `pass` is a Python keyword
            else:
                move = pb.PublicMove(seat=entry["seat"], cards=card_indices(entry["cards"]),
                                     offer=entry.get("offer") or "")
            self.moves.append(move)
        return self.moves


def seat_view(view: Any, history: HistoryEncoder, *, legal_plays: bool = True) -> pb.SeatView:
    """The protocol SeatView of an engine SeatView."""
    message = pb.SeatView(
        seat=view.seat,
        players=view.players,
        preset=view.preset,
        hand=[c.index for c in view.hand],
        card_counts=list(view.card_counts),
        can_pass=bool(view.can_pass),
        offer=view.offer or "",
        locked_out=list(view.locked_out),
        finished=list(view.finished),
        history=history.update(view.history),
        over=view.points is not None,
        starting=bool(getattr(view, "starting", False)),
        leader=getattr(view, "leader", 0) or 0,
        frozen=list(getattr(view, "frozen", ()) or ()),
    )
    if view.to_move is not None:
        message.to_move = view.to_move
    table = view.table
    if table:
        kind = str(table.get("kind") or "")
        message.table.seat = table["seat"]
        message.table.cards.extend(card_indices(table["cards"]))
        message.table.kind = KIND_CODES.get(kind, pb.COMBINATION_KIND_UNSPECIFIED)
        message.table.kind_name = kind
    if view.points is not None:
        message.points.extend(view.points)
    if legal_plays:
        message.legal_plays.extend(
            pb.Cards(cards=[c.index for c in play]) for play in view.legal_plays
        )
    return message


def game_result(game: Any, *, with_reasons: bool = True) -> pb.GameResult:
    """The result of a finished game. Payment reasons are text the engine writes; the
    bot-facing copy leaves them out (a stuck-card reason could name a card of a hand)."""
    result = pb.GameResult(
        finishing_order=list(game.finishing_order),
        points=list(game.points),
        frozen=list(getattr(game, "frozen", ()) or ()),
    )
    if game.instant_winner is not None:
        result.instant_winner = game.instant_winner
    for payment in getattr(game, "payments", ()) or ():
        result.payments.add(
            from_seat=payment["from"],
            to_seat=payment["to"],
            points=payment["points"],
            reason=_reason_category(payment.get("reason", "")) if not with_reasons
            else str(payment.get("reason", "")),
        )
    return result


def _reason_category(reason: str) -> str:
    """The leading keyword of a payment reason ("stuck", "chop", "frozen", ...)."""
    word = []
    for ch in str(reason):
        if ch.isalpha() or ch == "_":
            word.append(ch)
        else:
            break
    return "".join(word)

