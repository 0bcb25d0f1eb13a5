"""Conversions between the protocol's messages and the SDK's types (the bot's side).

Kept apart from the client so the conversions can be tested without a network, and so a
bot sees the same `View` (the engine's `SeatView` with its table context) whether it plays
in the arena or against the referee. The referee's encoder of the same messages is
`referee_service.view_encoder`; a test checks that decoding its bytes gives `Game.view`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from bots_sdk.bot import GameInfo, View
from bots_sdk.cards import CARD_TEXT, DECK, Card
from bots_sdk.protocol.tienlen.v1 import bot_gateway_pb2 as gw
from bots_sdk.protocol.tienlen.v1 import game_pb2 as pb
from bots_sdk.rules import SeatView
from bots_sdk.rules.combos import KIND_NAMES

__all__ = [
    "KIND_BY_WIRE",
    "WIRE_KINDS",
    "HistoryCache",
    "game_info",
    "game_result",
    "move_message",
    "view_from_proto",
]

#: The wire's CombinationKind of each engine kind (indexed by the engine's kind code, as
#: in ``Game.table_key``), found by name in the generated enum: a kind the protocol
#: lacks fails here, at import.
WIRE_KINDS: tuple[int, ...] = tuple(pb.CombinationKind.Value("COMBINATION_KIND_" + name.upper())
                                    for name in KIND_NAMES)
#: The engine's kind name of each wire CombinationKind.
KIND_BY_WIRE: dict[int, str] = dict(zip(WIRE_KINDS, KIND_NAMES, strict=True))


def _cards(values: Iterable[int]) -> tuple[Card, ...]:
    return tuple([DECK[v] for v in values])


class HistoryCache:
    """One table's history as already decoded, so each move decodes only the entries that
    are new since the last view (the history only grows within a game; decoding all of it
    every move made a game quadratic in its length)."""

    __slots__ = ("entries", "game_index")

    def __init__(self) -> None:
        self.game_index = -1
        self.entries: list[dict[str, Any]] = []

    def decode(self, game_index: int, history: Sequence[pb.PublicMove]) -> tuple[dict[str, Any], ...]:
        entries = self.entries
        if game_index != self.game_index or len(history) < len(entries):
            self.game_index = game_index
            entries.clear()
        for m in history[len(entries):]:
            entries.append(_history_entry(m))
        return tuple(entries)


def _history_entry(m: pb.PublicMove) -> dict[str, Any]:
    """A public move as in ``SeatView.history`` and the replay JSON."""
    d: dict[str, Any] = {"seat": m.seat}
    if getattr(m, "pass"):  # `pass` is a Python keyword
        d["pass"] = True
    else:
        d["cards"] = [CARD_TEXT[c] for c in m.cards]
    if m.offer:
        d["offer"] = m.offer
    return d


def view_from_proto(v: pb.SeatView, *, history: tuple[dict[str, Any], ...] | None = None,
                    table_id: str = "local", game_index: int = 0,
                    time_left_ms: int | None = None, table_score: int = 0) -> View:
    """The bot's `View` of a protocol SeatView, in exactly the shapes `Game.view`
    produces (table cards as Card, history cards as names), so a bot sees the same view
    in the arena and on the referee. `history`: the entries already decoded (see
    `HistoryCache`)."""
    table = None
    if v.HasField("table"):
        table = {
            "seat": v.table.seat,
            "cards": list(_cards(v.table.cards)),
            "kind": v.table.kind_name or KIND_BY_WIRE.get(v.table.kind, ""),
        }
    if history is None:
        history = tuple(_history_entry(m) for m in v.history)
    seat_view = SeatView(
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
        plays=tuple(_cards(p.cards) for p in v.legal_plays),
        starting=v.starting,
        leader=v.leader,
        frozen=tuple(v.frozen),
    )
    return View(seat_view, table_id=table_id, game_index=game_index,
                time_left_ms=time_left_ms, table_score=table_score)


def game_info(m: gw.GameStart) -> GameInfo:
    """What `Bot.on_game_start` is told of a GameStart."""
    return GameInfo(
        table_id=m.table_id,
        game_index=m.game_index,
        seat=m.seat,
        hand=_cards(m.hand),
        starting=m.starting,
        leader=m.leader if m.HasField("leader") else None,
        opening_card=DECK[m.opening_card] if m.HasField("opening_card") else None,
    )


def move_message(
    table_id: str, game_index: int, move_id: int, cards: Sequence[Card] | None, thinking_us: int,
    note: str | None = None,
) -> gw.BotMessage:
    move = gw.Move(table_id=table_id, game_index=game_index, move_id=move_id,
                   thinking_us=thinking_us, note=note or "")
    if cards is None:
        setattr(move, "pass", True)  # `pass` is a Python keyword
    else:
        move.cards.extend(c.index for c in cards)
    return gw.BotMessage(move=move)


def game_result(r: pb.GameResult) -> dict[str, Any]:
    """The fields of the bot's `GameResult` (bots_sdk.bot) from the protocol's message."""
    return {
        "finishing_order": tuple(r.finishing_order),
        "points": tuple(r.points),
        "instant_winner": r.instant_winner if r.HasField("instant_winner") else None,
        "frozen": tuple(r.frozen),
    }
