"""The MoveRequest a remote seat receives, encoded straight to protobuf wire bytes.

Every move sends the seat's whole view, whose history grows through the game and whose
legal plays can number in the hundreds, and this encoding sits on the per-move critical
path between a bot's answer and the next bot's request. Building protobuf objects (and
asking the engine for a fresh view, which re-renders the whole history) cost more than
the gRPC round trip itself, so this module writes the wire format by hand:
- the public history is kept as encoded entries, one appended per move;
- the parts every seat sees alike (counts, table, locked-out, finished, frozen, points)
  are encoded once per move, each hand once per change of that hand;
- each legal play's entry is looked up by card set in a cache shared by all tables.
Protobuf allows fields in any order and concatenated repeated fields, so the result parses
as the same `RefereeMessage` a bot would get from `wire.seat_view` (a property test checks
they are equal, for every preset and seat count).

The content is exactly the engine's per-seat view: own hand, public counts and moves,
declined offers left out (they would reveal a hidden bomb).
"""

from __future__ import annotations

from typing import Any

from referee_service.wire import KIND_CODES

_HISTORY_TAG = 0x62  # SeatView.history = 12, length-delimited
_LEGAL_TAG = 0x7A  # SeatView.legal_plays = 15, length-delimited
_CARDS_TAG = 0x0A  # Cards.cards = 1, packed
_VIEW_TAG = b"\x22"  # MoveRequest.view = 4
_MOVE_REQUEST_TAG = b"\x22"  # RefereeMessage.move_request = 4
_PASS_ENTRIES = tuple(  # the history entry of a pass, per seat
    bytes((_HISTORY_TAG, 4, 0x08, seat, 0x10, 1)) if seat else bytes((_HISTORY_TAG, 2, 0x10, 1))
    for seat in range(4))
# legal play entries by card set, and table plays by (seat, kind, card set), shared by
# every table: the same plays recur all the time
_ENTRIES: dict[int, bytes] = {}
_TABLES: dict[tuple[int, int, int], bytes] = {}
_CACHE_MAX = 200_000


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
    return _VARINTS[value] if value < 16384 else _varint(value)


def _small(tag: int, value: int) -> bytes:
    """A uint32 field, omitted at 0 (proto3)."""
    if not value:
        return b""
    return bytes((tag, value)) if value < 128 else bytes((tag,)) + varint(value)


def _string(tag: int, text: str) -> bytes:
    if not text:
        return b""
    data = text.encode()
    return bytes((tag,)) + varint(len(data)) + data


def _packed(tag: bytes, values: Any) -> bytes:
    """A packed repeated uint32 field of small values (seats, counts, card indices: all
    below 128, so one byte each and never more than 52 of them)."""
    if not values:
        return b""
    return tag + bytes((len(values), *values))


def _entry(mask: int) -> bytes:
    entry = _ENTRIES.get(mask)
    if entry is None:
        indices = []
        m = mask
        while m:
            low = m & -m
            indices.append(low.bit_length() - 1)
            m ^= low
        n = len(indices)
        entry = bytes((_LEGAL_TAG, n + 2, _CARDS_TAG, n, *indices))
        if len(_ENTRIES) >= _CACHE_MAX:
            _ENTRIES.clear()
        _ENTRIES[mask] = entry
    return entry


def legal_plays_bytes(plays: Any) -> bytes:
    """SeatView.legal_plays entries for an iterable of plays (each a list of Card).

    The engine's `LegalPlays` lists every play as a 52-bit card set (bit i is card
    index i) in one pass, which skips building a Card per card and decoding each play
    from its index."""
    masks = getattr(plays, "masks", None)
    if masks is None:
        parts = []
        for play in plays:
            n = len(play)  # at most 13 cards, each index < 128: one byte per varint
            parts.append(bytes((_LEGAL_TAG, n + 2, _CARDS_TAG, n, *[c.index for c in play])))
        return b"".join(parts)
    get = _ENTRIES.get
    return b"".join([get(m) or _entry(m) for m in masks()])


def _table_bytes(game: Any) -> bytes:
    """SeatView.table (a TablePlay), or nothing while the table is clear."""
    key = game.table_key
    if key is None:
        return b""
    seat = game.table_seat or 0
    cached = _TABLES.get((seat, *key))
    if cached is not None:
        return cached
    table = game.table
    cards = [c.index for c in table.cards]
    kind = table.kind
    body = (_small(0x08, seat) + _packed(b"\x12", cards)
            + _small(0x18, KIND_CODES.get(kind, 0)) + _string(0x22, kind))
    data = b"\x4a" + varint(len(body)) + body
    if len(_TABLES) >= _CACHE_MAX:
        _TABLES.clear()
    _TABLES[(seat, *key)] = data
    return data


def _points_bytes(points: list[int]) -> bytes:
    """SeatView.points: packed sint32 (zigzag)."""
    body = b"".join(varint((p << 1) ^ (p >> 63)) for p in points)
    return b"\x72" + varint(len(body)) + body


class ViewEncoder:
    """The public history of one game, kept encoded, and the views built from it."""

    __slots__ = ("game", "_history", "_history_bytes", "_hands", "_hand_bytes", "_public",
                 "_static")

    def __init__(self, game: Any) -> None:
        self.game = game
        self._history: list[bytes] = []
        self._history_bytes: bytes | None = b""
        # Each seat's hand as card indices, updated by record(): asking the engine for
        # one hand renders all of them.
        self._hands = [{c.index for c in hand} for hand in game.hands]
        self._hand_bytes: list[bytes | None] = [None] * game.players
        self._public: bytes | None = None
        players_preset = _small(0x10, game.players) + _string(0x1A, game.preset)
        self._static = [_small(0x08, seat) + players_preset for seat in range(game.players)]

    def record(self, seat: int, cards: list[int] | None, offer: str | None) -> None:
        """Call after every applied move: `cards` (indices) None for a pass; `offer` is
        what `game.offer` was before the move (a declined offer stays private)."""
        self._public = None
        if cards is None:
            if offer:
                return
            self._history.append(_PASS_ENTRIES[seat])
        else:
            ordered = sorted(cards)
            body = (_small(0x08, seat) + bytes((0x1A, len(ordered), *ordered))
                    + _string(0x22, offer or ""))
            self._history.append(bytes((_HISTORY_TAG, len(body))) + body)
            self._hands[seat].difference_update(cards)
            self._hand_bytes[seat] = None
        self._history_bytes = None

    def history_bytes(self) -> bytes:
        if self._history_bytes is None:
            self._history_bytes = b"".join(self._history)
        return self._history_bytes

    def _public_bytes(self) -> bytes:
        """What every seat sees alike, encoded once per move."""
        game = self.game
        over = game.is_over
        data = (bytes((0x2A, game.players, *map(len, self._hands))) + _table_bytes(game)
                + _packed(b"\x52", game.locked_out) + _packed(b"\x5a", game.finishing_order)
                + _packed(b"\x92\x01", game.frozen))
        if over:
            data += b"\x68\x01" + _points_bytes(game.points)
        if game.starting:
            data += b"\x80\x01\x01"
        leader = game.leader
        if leader:
            data += b"\x88\x01" + varint(leader)
        self._public = data
        return data

    def seat_view_bytes(self, seat: int, *, legal_plays: bool = True) -> bytes:
        game = self.game
        to_move = game.to_move  # None once the game is over
        mine = to_move == seat
        hand = self._hand_bytes[seat]
        if hand is None:
            hand = self._hand_bytes[seat] = _packed(b"\x22", sorted(self._hands[seat]))
        public = self._public
        if public is None:
            public = self._public_bytes()
        parts = [self._static[seat], hand, public]
        offer = game.offer
        # While a seat is being offered a play, the others must not learn who (it would
        # reveal that seat's bomb): as in the engine's view, they see nobody to move.
        if to_move is not None and (mine or offer is None):
            parts.append(bytes((0x30, to_move)))
        if mine:
            if game.can_pass:
                parts.append(b"\x38\x01")
            if offer:
                parts.append(_string(0x42, offer))
        parts.append(self.history_bytes())
        if mine and legal_plays:
            parts.append(legal_plays_bytes(game.legal_plays()))
        return b"".join(parts)

    def move_request_bytes(self, *, table_id: str, game_index: int, move_id: int, seat: int,
                           time_left_ms: int, time_bank_ms: int, attempt: int,
                           legal_plays: bool = True) -> bytes:
        """A serialized RefereeMessage{move_request}."""
        view = self.seat_view_bytes(seat, legal_plays=legal_plays)
        request = b"".join((
            _string(0x0A, table_id), _small(0x10, game_index), _small(0x18, move_id),
            _VIEW_TAG, varint(len(view)), view, _small(0x28, time_left_ms),
            _small(0x30, time_bank_ms), _small(0x38, attempt)))
        return _MOVE_REQUEST_TAG + varint(len(request)) + request
