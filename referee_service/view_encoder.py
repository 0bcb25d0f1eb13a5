"""The MoveRequest a remote seat receives, encoded straight to protobuf bytes.

Every move sends the seat's whole view, whose history grows through the game and whose
legal plays can number in the hundreds. Building that as protobuf objects (and asking
the engine for a fresh view, which re-renders the whole history) cost more than the gRPC
round trip itself, so the referee keeps the public history as already-encoded bytes,
appends one entry per move, and writes the legal plays as packed bytes. Protobuf allows
fields in any order and concatenated repeated fields, so the result parses as the same
`RefereeMessage` a bot would get from `wire.seat_view` (a test checks they are equal).

The content is exactly the engine's per-seat view: own hand, public counts and moves,
declined offers left out (they would reveal a hidden bomb).
"""

from __future__ import annotations

from typing import Any

from bots_sdk.protocol.tienlen.v1 import bot_gateway_pb2 as gw
from bots_sdk.protocol.tienlen.v1 import game_pb2 as pb
from referee_service.wire import KIND_CODES

_HISTORY_TAG = b"\x62"  # SeatView.history = 12, length-delimited
_LEGAL_TAG = 0x7A  # SeatView.legal_plays = 15, length-delimited
_CARDS_TAG = 0x0A  # Cards.cards = 1, packed
_VIEW_TAG = b"\x22"  # MoveRequest.view = 4
_MOVE_REQUEST_TAG = b"\x22"  # RefereeMessage.move_request = 4


def varint(value: int) -> bytes:
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _field(tag: bytes, payload: bytes) -> bytes:
    return tag + varint(len(payload)) + payload


def legal_plays_bytes(plays: Any) -> bytes:
    """SeatView.legal_plays entries for an iterable of plays (each a list of Card).

    The engine's lazy `LegalPlays` hands out each play as a 52-bit card set (bit i is
    card index i); reading the indices off the bits skips building a Card per card,
    which was half of the encoding time per move."""
    mask_at = getattr(plays, "mask_at", None)
    if mask_at is None:
        parts = []
        for play in plays:
            n = len(play)  # at most 13 cards, each index < 128: one byte per varint
            parts.append(bytes((_LEGAL_TAG, n + 2, _CARDS_TAG, n, *[c.index for c in play])))
        return b"".join(parts)
    out = bytearray()
    for i in range(len(plays)):
        mask = mask_at(i)  # also records the play as issued, as iterating would
        indices = []
        while mask:
            low = mask & -mask
            indices.append(low.bit_length() - 1)
            mask ^= low
        n = len(indices)
        out += bytes((_LEGAL_TAG, n + 2, _CARDS_TAG, n, *indices))
    return bytes(out)


class ViewEncoder:
    """The public history of one game, kept encoded, and the views built from it."""

    __slots__ = ("game", "_history", "_history_bytes", "_hands")

    def __init__(self, game: Any) -> None:
        self.game = game
        self._history: list[bytes] = []
        self._history_bytes: bytes | None = b""
        # Each seat's hand as card indices, updated by record(): asking the engine for
        # one hand renders all of them.
        self._hands = [{c.index for c in hand} for hand in game.hands]

    def record(self, seat: int, cards: list[int] | None, offer: str | None) -> None:
        """Call after every applied move: `cards` (indices) None for a pass; `offer` is
        what `game.offer` was before the move (a declined offer stays private)."""
        if cards is None:
            if offer:
                return
            move = pb.PublicMove(seat=seat)
            setattr(move, "pass", True)
        else:
            move = pb.PublicMove(seat=seat, cards=sorted(cards), offer=offer or "")
            self._hands[seat].difference_update(cards)
        self._history.append(_field(_HISTORY_TAG, move.SerializeToString()))
        self._history_bytes = None

    def history_bytes(self) -> bytes:
        if self._history_bytes is None:
            self._history_bytes = b"".join(self._history)
        return self._history_bytes

    def seat_view_bytes(self, seat: int, *, legal_plays: bool = True) -> bytes:
        game = self.game
        over = game.is_over
        to_move = game.to_move
        mine = not over and to_move == seat
        view = pb.SeatView(
            seat=seat,
            players=game.players,
            preset=game.preset,
            hand=sorted(self._hands[seat]),
            card_counts=game.card_counts,
            can_pass=bool(game.can_pass) if mine else False,
            offer=(game.offer or "") if mine else "",
            locked_out=game.locked_out,
            finished=game.finishing_order,
            over=over,
            starting=game.starting,
            leader=game.leader,
            frozen=game.frozen,
        )
        # While a seat is being offered a play, the others must not learn who (it would
        # reveal that seat's bomb): as in the engine's view, they see nobody to move.
        if to_move is not None and (mine or game.offer is None):
            view.to_move = to_move
        table = game.table
        if table is not None:
            view.table.seat = game.table_seat
            view.table.cards.extend(c.index for c in table.cards)
            view.table.kind = KIND_CODES.get(table.kind, pb.COMBINATION_KIND_UNSPECIFIED)
            view.table.kind_name = table.kind
        if over:
            view.points.extend(game.points)
        data = view.SerializeToString() + self.history_bytes()
        if mine and legal_plays:
            data += legal_plays_bytes(game.legal_plays())
        return data

    def move_request_bytes(self, *, table_id: str, game_index: int, move_id: int, seat: int,
                           time_left_ms: int, time_bank_ms: int, attempt: int,
                           legal_plays: bool = True) -> bytes:
        """A serialized RefereeMessage{move_request}."""
        head = gw.MoveRequest(table_id=table_id, game_index=game_index, move_id=move_id,
                              time_left_ms=time_left_ms, time_bank_ms=time_bank_ms,
                              attempt=attempt).SerializeToString()
        request = head + _field(_VIEW_TAG, self.seat_view_bytes(seat, legal_plays=legal_plays))
        return _field(_MOVE_REQUEST_TAG, request)
