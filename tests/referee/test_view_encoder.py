"""The referee's fast byte-level view encoding says exactly what the engine's view says."""

from __future__ import annotations

import random

import pytest
from google.protobuf.descriptor import FieldDescriptor
from hypothesis import given, settings
from hypothesis import strategies as st

from bots_sdk.protocol.tienlen.v1 import bot_gateway_pb2 as gw
from bots_sdk.protocol.tienlen.v1 import game_pb2 as pb
from bots_sdk.rules import PRESETS, Game
from referee_service import view_encoder
from referee_service.view_encoder import ViewEncoder, seat_view_message, varint


def _play_randomly(game: Game, rng: random.Random) -> None:
    plays = list(game.legal_plays())
    options = [*plays, None] if game.can_pass else plays
    move = rng.choice(options)
    if move is None:
        game.pass_turn()
    else:
        game.play(move)


@settings(max_examples=60, deadline=None)
@given(preset=st.sampled_from(sorted(PRESETS)), players=st.integers(2, 4),
       seed=st.text(min_size=1, max_size=8), choice_seed=st.integers(0, 2**32),
       starting=st.booleans(), views_every=st.integers(1, 3))
def test_encoded_views_equal_the_engine_views(preset: str, players: int, seed: str,
                                              choice_seed: int, starting: bool,
                                              views_every: int) -> None:
    """Every seat's bytes after every move (or every few moves: the encoder then reads
    several new moves of the log at once) parse as the reference encoding of
    `Game.view(seat)`, with and without the legal plays."""
    rng = random.Random(choice_seed)
    game = Game.from_seed(seed, players, preset=preset, starting=starting,
                          leader=None if starting else rng.randrange(players))
    encoder = ViewEncoder(game)
    moves = 0
    while True:
        if moves % views_every == 0 or game.is_over:
            for seat in rng.sample(range(players), players):
                reference = seat_view_message(game.view(seat))
                fast = pb.SeatView.FromString(encoder.seat_view_bytes(seat))
                assert fast == reference, (seat, game.history)
                bare = pb.SeatView.FromString(encoder.seat_view_bytes(seat, legal_plays=False))
                assert bare == seat_view_message(game.view(seat), legal_plays=False)
        if game.is_over:
            break
        _play_randomly(game, rng)
        moves += 1


def test_offers_are_shown_to_the_offered_seat_only() -> None:
    """Huế: seat 2 is offered to steal the lead; the others see nobody to move, and the
    declined offer never enters anyone's history."""
    from tests.engine.conftest import make_game

    game = make_game("3S 4D 9H", "5S 6S", "4S 4C 5C 5D 6C 6D KD", "7S 8S JD", preset="hue")
    encoder = ViewEncoder(game)
    mine = pb.SeatView.FromString(encoder.seat_view_bytes(2))
    assert (mine.to_move, mine.offer, mine.can_pass) == (2, "steal_lead", True)
    assert len(mine.legal_plays) == 1
    for seat in (0, 1, 3):
        other = pb.SeatView.FromString(encoder.seat_view_bytes(seat))
        assert not other.HasField("to_move") and not other.offer and not other.legal_plays
    game.pass_turn()  # seat 2 declines
    for seat in range(4):
        view = pb.SeatView.FromString(encoder.seat_view_bytes(seat))
        assert view.to_move == 0 and not view.history  # the decline stays private


def test_move_request_bytes_parse_as_a_referee_message() -> None:
    game = Game.from_seed("bytes", 4)
    data = ViewEncoder(game).move_request_bytes(
        table_id="t", game_index=3, move_id=(1 << 52) + 99, seat=game.to_move,
        time_left_ms=1234, time_bank_ms=200, attempt=1)
    message = gw.RefereeMessage.FromString(data)
    request = message.move_request
    assert (request.table_id, request.game_index, request.move_id) == ("t", 3, (1 << 52) + 99)
    assert request.time_left_ms == 1234 and request.view.seat == game.to_move
    assert request.view == seat_view_message(game.view(game.to_move))
    without = ViewEncoder(game).move_request_bytes(
        table_id="t", game_index=3, move_id=99, seat=game.to_move, time_left_ms=1,
        time_bank_ms=0, attempt=1, legal_plays=False)
    assert not gw.RefereeMessage.FromString(without).move_request.view.legal_plays


def test_field_keys_come_from_the_descriptors() -> None:
    """No hand-written tags: each key is (field number << 3 | wire type) of the field the
    descriptor declares, and a field whose type changes is refused at import."""
    field = pb.SeatView.DESCRIPTOR.fields_by_name["legal_plays"]
    assert varint(field.number << 3 | 2) == view_encoder._LEGAL
    field = gw.MoveRequest.DESCRIPTOR.fields_by_name["move_id"]
    assert field.type == FieldDescriptor.TYPE_UINT64
    assert varint(field.number << 3 | 0) == view_encoder._REQ_MOVE_ID
    with pytest.raises(TypeError, match=r"tienlen.v1.SeatView.preset is no longer a uint"):
        view_encoder._key(pb.SeatView, "preset", "uint")
    with pytest.raises(TypeError, match=r"SeatView.hand is no longer a packed sint"):
        view_encoder._key(pb.SeatView, "hand", "packed sint")


@pytest.mark.parametrize("value", [0, 1, 127, 128, 300, 16383, 16384, 2**21, 2**35])
def test_varint_matches_protobuf(value: int) -> None:
    encoded = pb.Cards(cards=[value % 2**32]).SerializeToString()
    assert encoded == b"\x0a" + varint(len(varint(value % 2**32))) + varint(value % 2**32)
