"""The seat view a remote bot receives: the one module that encodes it.

What a seat may see is decided by the engine's ``seat_visibility`` (its own hand only;
who is to move, the offer, ``can_pass`` and the legal plays on its own move only, nobody
to move while another seat is being offered a play; declined offers never in the public
history); both encodings below read it from there and add only the public game.

- ``seat_view_message(view)``: the reference encoding, a protobuf ``SeatView`` built from
  the engine's ``SeatView`` (``Game.view``), field by field. Clear, and slow.
- ``ViewEncoder``: the referee's move path. Every move sends the seat's whole view, whose
  history grows through the game and whose legal plays can number in the hundreds, and
  this encoding sits between a bot's answer and the next bot's request: building protobuf
  objects cost more than the gRPC round trip itself, so it writes the wire format
  directly. The public history is kept encoded (each move once, as the log grows); what
  every seat sees alike is encoded once per move, each hand once per change of that hand;
  each legal play's entry is looked up by card set in a cache shared by all tables.
  Protobuf allows fields in any order and concatenated repeated fields, so the bytes parse
  as the reference message (a property test checks they are equal, for every preset and
  seat count).

Field numbers and wire types come from the generated descriptors (``_key``), never from
hand-written tags; a change to the protocol that this encoder cannot follow (a field's
type or cardinality) fails at import, naming the field.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from google.protobuf.descriptor import FieldDescriptor

from bots_sdk.cards import CARD_INDEX, Card
from bots_sdk.protocol.tienlen.v1 import bot_gateway_pb2 as gw
from bots_sdk.protocol.tienlen.v1 import game_pb2 as pb
from bots_sdk.rules import GameState, SeatView, seat_visibility
from bots_sdk.wire import WIRE_KINDS

__all__ = ["ViewEncoder", "seat_view_message", "varint"]


# ------------------------------------------------------------------ wire format


def _varint(value: int) -> bytes:
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


# Lengths, move times and most move ids fit in two bytes: look those up.
_VARINTS = tuple(_varint(v) for v in range(1 << 14))


def varint(value: int) -> bytes:
    """A non-negative integer as a protobuf varint."""
    return _VARINTS[value] if value < 16384 else _varint(value)


_F = FieldDescriptor
# How this module writes each kind of field: the descriptor's (type, repeated) it accepts.
_SHAPES: dict[str, tuple[frozenset[int], bool]] = {
    "uint": (frozenset({_F.TYPE_UINT32, _F.TYPE_UINT64}), False),
    "enum": (frozenset({_F.TYPE_ENUM}), False),
    "bool": (frozenset({_F.TYPE_BOOL}), False),
    "string": (frozenset({_F.TYPE_STRING}), False),
    "message": (frozenset({_F.TYPE_MESSAGE}), False),
    "messages": (frozenset({_F.TYPE_MESSAGE}), True),
    "packed uint": (frozenset({_F.TYPE_UINT32}), True),
    "packed sint": (frozenset({_F.TYPE_SINT32}), True),
}
_LENGTH_DELIMITED = {"string", "message", "messages", "packed uint", "packed sint"}


def _key(message: Any, name: str, shape: str) -> bytes:
    """The key (field number and wire type) of ``message.name``, which this module
    writes as ``shape``; refuses a field whose declared type is not that shape."""
    field = message.DESCRIPTOR.fields_by_name[name]
    types, repeated = _SHAPES[shape]
    packed = not shape.startswith("packed") or field.is_packed
    if field.type not in types or field.is_repeated != repeated or not packed:
        raise TypeError(f"{message.DESCRIPTOR.full_name}.{name} is no longer a {shape} field: "
                        "update referee_service/view_encoder.py to the protocol")
    return varint(field.number << 3 | (2 if shape in _LENGTH_DELIMITED else 0))


# SeatView
_SEAT = _key(pb.SeatView, "seat", "uint")
_PLAYERS = _key(pb.SeatView, "players", "uint")
_PRESET = _key(pb.SeatView, "preset", "string")
_HAND = _key(pb.SeatView, "hand", "packed uint")
_COUNTS = _key(pb.SeatView, "card_counts", "packed uint")
_TO_MOVE = _key(pb.SeatView, "to_move", "uint")
_CAN_PASS = _key(pb.SeatView, "can_pass", "bool")
_OFFER = _key(pb.SeatView, "offer", "string")
_TABLE = _key(pb.SeatView, "table", "message")
_LOCKED = _key(pb.SeatView, "locked_out", "packed uint")
_FINISHED = _key(pb.SeatView, "finished", "packed uint")
_HISTORY = _key(pb.SeatView, "history", "messages")
_OVER = _key(pb.SeatView, "over", "bool")
_POINTS = _key(pb.SeatView, "points", "packed sint")
_LEGAL = _key(pb.SeatView, "legal_plays", "messages")
_STARTING = _key(pb.SeatView, "starting", "bool")
_LEADER = _key(pb.SeatView, "leader", "uint")
_FROZEN = _key(pb.SeatView, "frozen", "packed uint")
# TablePlay, PublicMove, Cards
_TABLE_SEAT = _key(pb.TablePlay, "seat", "uint")
_TABLE_CARDS = _key(pb.TablePlay, "cards", "packed uint")
_TABLE_KIND = _key(pb.TablePlay, "kind", "enum")
_TABLE_KIND_NAME = _key(pb.TablePlay, "kind_name", "string")
_MOVE_SEAT = _key(pb.PublicMove, "seat", "uint")
_MOVE_PASS = _key(pb.PublicMove, "pass", "bool")
_MOVE_CARDS = _key(pb.PublicMove, "cards", "packed uint")
_MOVE_OFFER = _key(pb.PublicMove, "offer", "string")
_CARDS = _key(pb.Cards, "cards", "packed uint")
# MoveRequest in a RefereeMessage
_REQ_TABLE_ID = _key(gw.MoveRequest, "table_id", "string")
_REQ_GAME_INDEX = _key(gw.MoveRequest, "game_index", "uint")
_REQ_MOVE_ID = _key(gw.MoveRequest, "move_id", "uint")
_REQ_VIEW = _key(gw.MoveRequest, "view", "message")
_REQ_TIME_LEFT = _key(gw.MoveRequest, "time_left_ms", "uint")
_REQ_TIME_BANK = _key(gw.MoveRequest, "time_bank_ms", "uint")
_REQ_ATTEMPT = _key(gw.MoveRequest, "attempt", "uint")
_MOVE_REQUEST = _key(gw.RefereeMessage, "move_request", "message")
_TRUE = b"\x01"


def _uint(key: bytes, value: int) -> bytes:
    """A scalar field, left out at 0 (proto3's default)."""
    if not value:
        return b""
    return key + (_VARINTS[value] if value < 16384 else _varint(value))


def _string(key: bytes, text: str) -> bytes:
    if not text:
        return b""
    return _nested(key, text.encode())


def _nested(key: bytes, body: bytes) -> bytes:
    n = len(body)
    return key + (_VARINTS[n] if n < 16384 else _varint(n)) + body


def _packed(key: bytes, values: Sequence[int]) -> bytes:
    """A packed repeated uint32 field of small values (seats, counts, card indices: all
    below 128, so one byte each, and never more than 52 of them)."""
    if not values:
        return b""
    return key + bytes((len(values), *values))


def _indices(mask: int) -> list[int]:
    """The card indices of a 52-bit card set, ascending."""
    out = []
    while mask:
        low = mask & -mask
        out.append(low.bit_length() - 1)
        mask ^= low
    return out


# Legal play entries by card set, and table plays by (seat, kind, card set), shared by
# every table: the same plays recur all the time.
_ENTRIES: dict[int, bytes] = {}
_TABLES: dict[tuple[int, int, int], bytes] = {}
_CACHE_MAX = 200_000


def _legal_entry(mask: int) -> bytes:
    entry = _ENTRIES.get(mask)
    if entry is None:
        entry = _nested(_LEGAL, _packed(_CARDS, _indices(mask)))
        if len(_ENTRIES) >= _CACHE_MAX:
            _ENTRIES.clear()
        _ENTRIES[mask] = entry
    return entry


def _table_bytes(game: GameState) -> bytes:
    """SeatView.table (a TablePlay), or nothing while the table is clear."""
    key = game.table_key
    if key is None:
        return b""
    kind, mask = key
    seat = game.table_seat or 0
    cached = _TABLES.get((seat, kind, mask))
    if cached is None:
        table = game.table
        assert table is not None
        body = (_uint(_TABLE_SEAT, seat) + _packed(_TABLE_CARDS, _indices(mask))
                + _uint(_TABLE_KIND, WIRE_KINDS[kind]) + _string(_TABLE_KIND_NAME, table.kind))
        cached = _nested(_TABLE, body)
        if len(_TABLES) >= _CACHE_MAX:
            _TABLES.clear()
        _TABLES[(seat, kind, mask)] = cached
    return cached


def _history_entry(seat: int, mask: int | None, offer: str | None) -> bytes:
    if mask is None:
        body = _uint(_MOVE_SEAT, seat) + _MOVE_PASS + _TRUE
    else:
        body = (_uint(_MOVE_SEAT, seat) + _packed(_MOVE_CARDS, _indices(mask))
                + _string(_MOVE_OFFER, offer or ""))
    return _nested(_HISTORY, body)


def _zigzag(values: Iterable[int]) -> list[int]:
    return [(v << 1) ^ (v >> 63) for v in values]


class ViewEncoder:
    """The views of one game's seats, as wire bytes (see the module docstring)."""

    __slots__ = ("_hand_bytes", "_history", "_history_bytes", "_logged", "_public",
                 "_public_at", "_static", "game")

    def __init__(self, game: GameState) -> None:
        self.game = game
        self._history: list[bytes] = []
        self._history_bytes = b""
        self._logged = 0  # moves of the game's log already read into _history
        self._hand_bytes: list[tuple[int, bytes]] = [(-1, b"")] * game.players
        self._public = b""
        self._public_at = -1  # the log length _public was encoded at
        players_preset = _uint(_PLAYERS, game.players) + _string(_PRESET, game.preset)
        self._static = [_uint(_SEAT, seat) + players_preset for seat in range(game.players)]

    def _public_bytes(self) -> bytes:
        """What every seat sees alike: counts, table, locked out, finished, frozen,
        points once over, starting, leader."""
        game = self.game
        data = (_packed(_COUNTS, game.card_counts) + _table_bytes(game)
                + _packed(_LOCKED, game.locked_out) + _packed(_FINISHED, game.finishing_order)
                + _packed(_FROZEN, game.frozen))
        if game.is_over:
            points = b"".join(varint(z) for z in _zigzag(game.points))
            data += _OVER + _TRUE + _nested(_POINTS, points)
        if game.starting:
            data += _STARTING + _TRUE
        return data + _uint(_LEADER, game.leader)

    def seat_view_bytes(self, seat: int, *, legal_plays: bool = True) -> bytes:
        """A serialized SeatView of ``seat`` now (``legal_plays=False``: without them,
        for bots that asked for Hello.omit_legal_plays)."""
        game = self.game
        vis = seat_visibility(game, seat, moves_from=self._logged)
        if vis.moves_to != self._logged:  # the game moved on since the last view
            history = self._history
            for seat_, mask, offer in vis.moves:
                history.append(_history_entry(seat_, mask, offer))
            self._history_bytes = b"".join(history)
            self._logged = vis.moves_to
        if self._public_at != vis.moves_to:
            self._public = self._public_bytes()
            self._public_at = vis.moves_to
        held, hand = self._hand_bytes[seat]
        if held != vis.hand:
            hand = _packed(_HAND, _indices(vis.hand))
            self._hand_bytes[seat] = (vis.hand, hand)
        parts = [self._static[seat], hand, self._public, self._history_bytes]
        if vis.to_move is not None:  # tracks presence: seat 0 is written
            parts.append(_TO_MOVE + _VARINTS[vis.to_move])
        if vis.mine:
            if vis.can_pass:
                parts.append(_CAN_PASS + _TRUE)
            if vis.offer:
                parts.append(_string(_OFFER, vis.offer))
            if legal_plays:
                get = _ENTRIES.get
                parts.append(b"".join([get(m) or _legal_entry(m)
                                       for m in game.legal_plays().masks()]))
        return b"".join(parts)

    def move_request_bytes(self, *, table_id: str, game_index: int, move_id: int, seat: int,
                           time_left_ms: int, time_bank_ms: int, attempt: int,
                           legal_plays: bool = True) -> bytes:
        """A serialized RefereeMessage{move_request} asking ``seat`` for its move."""
        view = self.seat_view_bytes(seat, legal_plays=legal_plays)
        request = b"".join((
            _string(_REQ_TABLE_ID, table_id), _uint(_REQ_GAME_INDEX, game_index),
            _uint(_REQ_MOVE_ID, move_id), _nested(_REQ_VIEW, view),
            _uint(_REQ_TIME_LEFT, time_left_ms), _uint(_REQ_TIME_BANK, time_bank_ms),
            _uint(_REQ_ATTEMPT, attempt)))
        return _nested(_MOVE_REQUEST, request)


# ------------------------------------------------------------------ the reference


def _card_indices(cards: Iterable[Card | str]) -> list[int]:
    return sorted(c.index if isinstance(c, Card) else CARD_INDEX[c] for c in cards)


def seat_view_message(view: SeatView, *, legal_plays: bool = True) -> pb.SeatView:
    """The protocol SeatView of an engine SeatView (``Game.view(seat)``), which holds
    only what ``seat_visibility`` lets the seat see: the reference that ``ViewEncoder``'s
    bytes must equal."""
    message = pb.SeatView(
        seat=view.seat,
        players=view.players,
        preset=view.preset,
        hand=[c.index for c in view.hand],
        card_counts=view.card_counts,
        can_pass=view.can_pass,
        offer=view.offer or "",
        locked_out=view.locked_out,
        finished=view.finished,
        over=view.points is not None,
        points=view.points or (),
        starting=view.starting,
        leader=view.leader,
        frozen=view.frozen,
    )
    if view.to_move is not None:
        message.to_move = view.to_move
    for entry in view.history:
        move = message.history.add(seat=entry["seat"], offer=entry.get("offer") or "")
        if entry.get("pass"):
            setattr(move, "pass", True)  # `pass` is a Python keyword
        else:
            move.cards.extend(_card_indices(entry["cards"]))
    table = view.table
    if table is not None:
        kind = str(table["kind"])
        message.table.seat = table["seat"]
        message.table.cards.extend(_card_indices(table["cards"]))
        message.table.kind = pb.CombinationKind.Value("COMBINATION_KIND_" + kind.upper())
        message.table.kind_name = kind
    if legal_plays:
        message.legal_plays.extend(pb.Cards(cards=[c.index for c in play])
                                   for play in view.plays)
    return message
