"""Conversions between the protocol's messages and the SDK's types.

Kept apart from the client so the conversions can be tested without a network, and so the
engine's `SeatView` stays the one shape a bot sees whether it plays in the arena or
against the referee.
"""

from __future__ import annotations

from typing import Any

from bots_sdk.cards import Card
from bots_sdk.protocol.tienlen.v1 import bot_gateway_pb2 as gw
from bots_sdk.protocol.tienlen.v1 import game_pb2 as pb

__all__ = ["game_result", "move_message", "seat_view_from_proto"]

_KIND_NAMES = {
    pb.COMBINATION_KIND_SINGLE: "single",
    pb.COMBINATION_KIND_PAIR: "pair",
    pb.COMBINATION_KIND_TRIPLE: "triple",
    pb.COMBINATION_KIND_STRAIGHT: "straight",
    pb.COMBINATION_KIND_PAIR_SEQUENCE: "pair_sequence",
    pb.COMBINATION_KIND_FOUR_OF_A_KIND: "four_of_a_kind",
}


def _cards(values: Any) -> tuple[Card, ...]:
    return tuple(Card.from_index(int(v)) for v in values)


def _names(values: Any) -> list[str]:
    return [str(Card.from_index(int(v))) for v in values]


class HistoryCache:
    """One table's history as already decoded, so each move decodes only the entries that
    are new since the last view (the history only grows within a game; decoding all of it
    every move made a game quadratic in its length)."""

    __slots__ = ("game_index", "entries")

    def __init__(self) -> None:
        self.game_index = -1
        self.entries: list[dict[str, Any]] = []

    def decode(self, game_index: int, history: Any) -> tuple[dict[str, Any], ...]:
        entries = self.entries
        if game_index != self.game_index or len(history) < len(entries):
            self.game_index = game_index
            entries.clear()
        for m in history[len(entries):]:
            entries.append(_history_entry(m))
        return tuple(entries)


def _history_entry(m: Any) -> dict[str, Any]:
    d: dict[str, Any] = {"seat": m.seat}
    if getattr(m, "pass"):  # `pass` is a Python keyword
        d["pass"] = True
    else:
        d["cards"] = _names(m.cards)
    if m.offer:
        d["offer"] = m.offer
    return d


def seat_view_from_proto(v: pb.SeatView, *, history: tuple[dict[str, Any], ...] | None = None
                         ) -> Any:
    """The engine's SeatView for a protocol SeatView, in exactly the shapes `Game.view`
    produces (table cards as Card, history cards as names), so a bot sees the same view
    in the arena and on the referee. `history`: the entries already decoded (see
    `HistoryCache`)."""
    from bots_sdk.rules import SeatView

    table = None
    if v.HasField("table"):
        table = {
            "seat": v.table.seat,
            "cards": list(_cards(v.table.cards)),
            "kind": v.table.kind_name or _KIND_NAMES.get(v.table.kind, ""),
        }
    if history is None:
        history = tuple(_history_entry(m) for m in v.history)
    return SeatView(
        seat=v.seat,
        players=v.players,
        preset=v.preset,
        hand=_cards(v.hand),
        card_counts=tuple(v.card_counts),
        to_move=v.to_move if v.HasField("to_move") else None,
        can_pass=v.can_pass,
        offer=v.offer or None,
        table=table,
        locked_out=tuple(v.locked_out),
        finished=tuple(v.finished),
        history=history,
        points=tuple(v.points) if v.over else None,
        legal_plays=tuple(_cards(p.cards) for p in v.legal_plays),
        starting=v.starting,
        leader=v.leader,
        frozen=tuple(v.frozen),
    )


def move_message(
    table_id: str, game_index: int, move_id: int, cards: tuple[Card, ...] | None, thinking_us: int
) -> gw.BotMessage:
    if cards is None:
        fields = {"pass": True}  # `pass` is a Python keyword
        move = gw.Move(
            table_id=table_id,
            game_index=game_index,
            move_id=move_id,
            thinking_us=thinking_us,
            **fields,
        )
    else:
        move = gw.Move(
            table_id=table_id,
            game_index=game_index,
            move_id=move_id,
            cards=[c.index for c in cards],
            thinking_us=thinking_us,
        )
    return gw.BotMessage(move=move)


def game_result(r: pb.GameResult) -> dict[str, Any]:
    return {
        "finishing_order": tuple(r.finishing_order),
        "points": tuple(r.points),
        "instant_winner": r.instant_winner if r.HasField("instant_winner") else None,
        "frozen": tuple(r.frozen),
    }
