"""The referee's fast byte-level view encoding says exactly what the engine's view says."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bots_sdk.protocol.tienlen.v1 import bot_gateway_pb2 as gw
from bots_sdk.protocol.tienlen.v1 import game_pb2 as pb
from bots_sdk.rules import PRESETS, Game
from referee_service import wire
from referee_service.view_encoder import ViewEncoder, varint


def engine_view(game: Game, seat: int, history: wire.HistoryEncoder) -> pb.SeatView:
    return wire.seat_view(game.view(seat), history)


@settings(max_examples=40, deadline=None)
@given(preset=st.sampled_from(sorted(PRESETS)), players=st.integers(2, 4),
       seed=st.text(min_size=1, max_size=8), choice_seed=st.integers(0, 2**32),
       starting=st.booleans())
def test_encoded_views_equal_the_engine_views(preset: str, players: int, seed: str,
                                              choice_seed: int, starting: bool) -> None:
    rng = random.Random(choice_seed)
    game = Game.from_seed(seed, players, preset=preset, starting=starting,
                          leader=None if starting else rng.randrange(players))
    encoder = ViewEncoder(game)
    reference = [wire.HistoryEncoder() for _ in range(players)]
    while True:
        for seat in range(players):
            fast = pb.SeatView.FromString(encoder.seat_view_bytes(seat))
            assert fast == engine_view(game, seat, reference[seat]), (seat, game.history)
        if game.is_over:
            break
        seat = game.to_move
        offer = game.offer
        plays = list(game.legal_plays())
        options = [*plays, None] if game.can_pass else plays
        move = rng.choice(options)
        if move is None:
            game.pass_turn()
            encoder.record(seat, None, offer)
        else:
            game.play(move)
            encoder.record(seat, [c.index for c in move], offer)


def test_move_request_bytes_parse_as_a_referee_message() -> None:
    game = Game.from_seed("bytes", 4)
    data = ViewEncoder(game).move_request_bytes(
        table_id="t", game_index=3, move_id=99, seat=game.to_move, time_left_ms=1234,
        time_bank_ms=200, attempt=1)
    message = gw.RefereeMessage.FromString(data)
    request = message.move_request
    assert (request.table_id, request.game_index, request.move_id) == ("t", 3, 99)
    assert request.time_left_ms == 1234 and request.view.seat == game.to_move
    assert len(request.view.legal_plays) == len(game.legal_plays())
    without = ViewEncoder(game).move_request_bytes(
        table_id="t", game_index=3, move_id=99, seat=game.to_move, time_left_ms=1,
        time_bank_ms=0, attempt=1, legal_plays=False)
    assert not gw.RefereeMessage.FromString(without).move_request.view.legal_plays


@pytest.mark.parametrize("value", [0, 1, 127, 128, 300, 16383, 16384, 2**21, 2**35])
def test_varint_matches_protobuf(value: int) -> None:
    encoded = pb.Cards(cards=[value % 2**32]).SerializeToString()
    assert encoded == b"\x0a" + varint(len(varint(value % 2**32))) + varint(value % 2**32)
