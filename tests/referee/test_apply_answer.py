"""Whatever a bot puts in a Move, the referee answers with a reason and the game is intact."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from bots_sdk.protocol.tienlen.v1 import bot_gateway_pb2 as gw
from bots_sdk.rules import PRESETS, Game
from referee_service.table import apply_answer

KNOWN_CODES = set(gw.MoveErrorCode.values()) - {gw.MOVE_ERROR_CODE_UNSPECIFIED}

cards_strategy = st.lists(st.one_of(st.integers(0, 51), st.integers(52, 2**32 - 1)),
                          max_size=16)


@settings(max_examples=60, deadline=None)
@given(preset=st.sampled_from(sorted(PRESETS)), players=st.integers(2, 4),
       seed=st.text(min_size=1, max_size=6), steps=st.integers(0, 40),
       answers=st.lists(st.tuples(st.booleans(), cards_strategy), min_size=1, max_size=8),
       rng_seed=st.integers(0, 1000))
def test_any_answer_is_applied_or_refused_with_a_reason(preset: str, players: int, seed: str,
                                                        steps: int, answers: list,
                                                        rng_seed: int) -> None:
    rng = random.Random(rng_seed)
    game = Game.from_seed(seed, players, preset=preset)
    for _ in range(steps):  # walk to some position by legal random play
        if game.is_over:
            return
        options = list(game.legal_plays()) + ([None] if game.can_pass else [])
        move = rng.choice(options)
        game.pass_turn() if move is None else game.play(move)
    for is_pass, cards in answers:
        if game.is_over:
            return
        before = (game.to_move, game.card_counts, len(game.history), game.hands)
        message = gw.Move(table_id="t", move_id=1, cards=cards)
        setattr(message, "pass", is_pass)
        error = apply_answer(game, message)
        if error is None:
            assert len(game.history) == before[2] + 1  # exactly one move applied
            continue
        code, reason = error
        assert code in KNOWN_CODES and reason.strip()
        assert (game.to_move, game.card_counts, len(game.history), game.hands) == before
