"""``Game.copy()``: an independent game at the same position (the search
bot tries several moves from one position; the compiled Game cannot be pickled)."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bots_sdk.rules import ENGINE_BUILD, PRESETS, Game
from tests.engine.conftest import make_game, run


def _state(g: Game) -> tuple:
    """Everything the read API says about a game."""
    return (g.to_move, g.offer, g.can_pass, g.is_over, g.hand_masks, g.card_counts,
            g.table_key, g.table_seat, g.locked_out, g.finishing_order, g.places, g.tied,
            g.frozen, g.points, g.payments, g.instant_winner, g.end_reason, g.den_bai,
            g.next_leader, g.next_starting, g.moves, g.chops, g.opening_card,
            [frozenset(map(str, p)) for p in g.legal_plays()])


def _random_move(g: Game, rng: random.Random) -> None:
    plays = g.legal_plays()
    k = rng.randrange(len(plays) + g.can_pass)
    g.pass_turn() if k == len(plays) else g.play(plays[k])


@settings(max_examples=60, deadline=None)
@given(preset=st.sampled_from(sorted(PRESETS)), players=st.integers(2, 4),
       seed=st.integers(0, 10**6), cut=st.integers(0, 80))
def test_a_copy_plays_on_exactly_like_its_original_and_never_touches_it(
        preset: str, players: int, seed: int, cut: int) -> None:
    rng = random.Random(seed)
    g = Game.from_seed(f"copy-{seed}", players, preset=preset, starting=seed % 3 != 0,
                       leader=seed % players)
    for _ in range(cut):
        if g.is_over:
            break
        _random_move(g, rng)
    before = _state(g)
    c = g.copy()
    assert type(c) is Game and _state(c) == before
    # The same moves give the same game, replay for replay.
    twin = g.copy()
    moves = random.Random(seed + 1)
    while not c.is_over:
        state = moves.getstate()
        _random_move(c, moves)
        moves.setstate(state)
        _random_move(twin, moves)
        assert _state(c) == _state(twin)
    assert c.replay() == twin.replay()
    # ... and the original is where it was.
    assert _state(g) == before


def test_a_copy_keeps_offers_and_split_bombs() -> None:
    # Huế: seat 2 is offered to steal the lead; both the offer and who may answer copy.
    g = make_game("3S 4D 9H", "5S 6S", "4S 4C 5C 5D 6C 6D KD", "7S 8S JD", preset="hue")
    c = g.copy()
    assert (c.to_move, c.offer) == (g.to_move, g.offer) == (2, "steal_lead")
    c.pass_turn()
    assert g.offer == "steal_lead" and c.offer is None
    run(g, "C 4S 4C 5C 5D 6C 6D")
    assert c.history != g.history


def test_the_opening_card_stays_after_the_first_play() -> None:
    for seed in range(20):
        game = Game.from_seed(f"opening-{seed}", 2 + seed % 3)
        if game.is_over:
            continue
        want = game.opening_card
        copied = game.copy()
        _random_move(copied, random.Random(seed))
        assert copied.opening_card == game.opening_card == want is not None


@pytest.mark.skipif(ENGINE_BUILD != "python", reason="compiled objects have no __dict__ "
                    "(make test runs this file on the Python build too)")
def test_copying_every_field_in_the_python_build() -> None:
    """A field added to Game but forgotten in copy() would be missing from the copy."""
    g = Game.from_seed("fields", 4)
    rng = random.Random(3)
    for _ in range(10):
        _random_move(g, rng)
    c = g.copy()
    assert vars(c).keys() == vars(g).keys()
    for name, value in vars(g).items():
        assert vars(c)[name] == value, name
        if isinstance(value, list):
            assert vars(c)[name] is not value, f"{name} is shared with the original"
