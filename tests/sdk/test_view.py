"""The author-facing view and move normalisation; the wire view equals the engine view."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bots_sdk.bot import PASS, View, normalize_move, safe_move
from bots_sdk.cards import Card, parse_cards
from bots_sdk.rules import PRESETS, Game


def _midgame(seed: str = "view", moves: int = 9) -> Game:
    g = Game.from_seed(seed, 4)
    rng = random.Random(seed)
    for _ in range(moves):
        plays = g.legal_plays()
        if g.can_pass and rng.random() < 0.3 or not plays:
            g.pass_turn()
        else:
            g.play(plays[rng.randrange(len(plays))])
    return g


def test_view_offers_legal_plays_and_pass_turn():
    g = _midgame()
    seat = g.to_move
    view = View(g.view(seat), table_id="t1", game_index=3)
    plays = view.legal_plays()
    assert plays and all(isinstance(p, tuple) for p in plays)
    assert {frozenset(p) for p in plays} == {frozenset(p) for p in g.legal_plays()}
    assert view.pass_turn() is PASS
    assert (view.table_id, view.game_index, view.seat) == ("t1", 3, seat)
    assert view.hand == tuple(g.hands[seat])
    assert view.card_counts == tuple(len(h) for h in g.hands)


def test_view_is_read_only():
    view = View(Game.from_seed("ro", 4).view(0))
    with pytest.raises(AttributeError):
        view.hand = ()  # type: ignore[misc]
    with pytest.raises(AttributeError):
        view.anything_new = 1  # type: ignore[attr-defined]


def test_card_counting_helpers():
    g = _midgame("count", 12)
    view = View(g.view(g.to_move))
    played = view.cards_played()
    assert len(played) == sum(13 - n for n in view.card_counts)
    unseen = view.unseen_cards()
    assert not set(unseen) & set(view.hand) and not set(unseen) & set(played)
    assert len(unseen) == 52 - len(view.hand) - len(played)
    if view.table is not None:
        assert view.table_cards == tuple(parse_cards(view.table["cards"]))
        assert not view.is_leading


@pytest.mark.parametrize(
    ("returned", "expected"),
    [
        (None, None),
        (PASS, None),
        ("3S 3H", (Card("3S"), Card("3H"))),
        (["3s", "10h"], (Card("3S"), Card("10H"))),
        ([0, 51], (Card("3S"), Card("2H"))),
        (Card("7D"), (Card("7D"),)),
        ((Card("4S"),), (Card("4S"),)),
    ],
)
def test_normalize_move_accepts_what_authors_return(returned, expected):
    assert normalize_move(returned) == expected


@pytest.mark.parametrize(
    ("returned", "message"),
    [([], "empty list"), (3.5, "expected cards or view.pass_turn()"), ("3Z", "3Z")],
)
def test_normalize_move_rejects_nonsense_with_a_clear_message(returned, message):
    with pytest.raises(ValueError, match=message):
        normalize_move(returned)


def test_safe_move_is_the_referees_fallback():
    plays = [tuple(parse_cards(p)) for p in ("5S 5H", "4D", "4C 5C 6C", "2H")]
    assert safe_move(True, plays) is None
    assert safe_move(False, plays) == (Card("4D"),)
    # A three-card straight whose top card is lower than any single wins over it.
    assert safe_move(False, [tuple(parse_cards("3S 4S 5S")), (Card("6H"),)]) == tuple(
        parse_cards("3S 4S 5S")
    )


def _play(g: Game, rng: random.Random) -> None:
    plays = g.legal_plays()
    if not plays or g.can_pass and rng.random() < 0.4:
        g.pass_turn()
    else:
        g.play(plays[rng.randrange(len(plays))])


@settings(max_examples=25, deadline=None)
@given(
    seed=st.text(min_size=1, max_size=8),
    preset=st.sampled_from(sorted(PRESETS)),
    players=st.sampled_from([2, 3, 4]),
    moves=st.integers(0, 40),
)
def test_a_view_sent_over_the_wire_is_the_engine_view(seed, preset, players, moves):
    """The referee's bytes -> protocol SeatView -> SDK decoder give back the engine's view,
    so a bot sees the same thing in the arena and on the referee."""
    from bots_sdk.protocol.tienlen.v1 import game_pb2 as pb
    from bots_sdk.wire import view_from_proto
    from referee_service.view_encoder import ViewEncoder

    g = Game.from_seed(seed, players, preset=preset)
    rng = random.Random(seed)
    for _ in range(moves):
        if g.is_over:
            break
        _play(g, rng)
    encoder = ViewEncoder(g)
    for seat in range(players):
        received = pb.SeatView.FromString(encoder.seat_view_bytes(seat))
        decoded = view_from_proto(received, table_id="t", game_index=2, time_left_ms=900)
        assert decoded == View(g.view(seat), table_id="t", game_index=2, time_left_ms=900)
        assert decoded.to_dict() == g.view(seat).to_dict()


def test_history_cache_decodes_each_entry_once_and_equals_a_full_decode():
    """The client decodes only the entries new since the last view of the game; the result
    must be the full decode every time, and start over with a new game."""
    from bots_sdk.wire import HistoryCache, view_from_proto
    from referee_service.view_encoder import seat_view_message

    cache = HistoryCache()
    for game_index, seed in enumerate(["cache-a", "cache-b"]):
        g = Game.from_seed(seed, 4)
        rng = random.Random(seed)
        while not g.is_over:
            wire_view = seat_view_message(g.view(g.to_move))
            cached = view_from_proto(
                wire_view, history=cache.decode(game_index, wire_view.history))
            assert cached == view_from_proto(wire_view) == View(g.view(g.to_move))
            _play(g, rng)
        # what it holds is the last view's history, decoded once per entry
        assert tuple(cache.entries) == view_from_proto(wire_view).history


def test_a_view_is_the_engine_seat_view_with_its_table():
    """One definition of what a seat sees: the engine's SeatView fields, in the View as
    they are (typed, no forwarding), plus the table context."""
    import dataclasses
    import pickle

    from bots_sdk.rules import SeatView

    g = _midgame("same", 7)
    sv = g.view(g.to_move)
    view = View(sv, table_id="t9", game_index=4, time_left_ms=250, table_score=-3)
    assert isinstance(view, SeatView) and view.seat_view is view
    names = [f.name for f in dataclasses.fields(View)]
    assert names == [f.name for f in dataclasses.fields(SeatView)] + [
        "table_id", "game_index", "time_left_ms", "table_score"]
    for f in dataclasses.fields(SeatView):
        assert getattr(view, f.name) == getattr(sv, f.name)
    assert view.legal_plays() == sv.legal_plays() == [tuple(p) for p in g.legal_plays()]
    assert view.to_dict() == sv.to_dict()
    assert view != View(sv, table_id="t9", game_index=5, time_left_ms=250, table_score=-3)
    # house bots that think in a worker process get their view pickled
    assert pickle.loads(pickle.dumps(view)) == view
    with pytest.raises(AttributeError):
        view.no_such_field  # noqa: B018  (no __getattr__ forwarding anything)


@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_a_live_view_kept_by_the_bot_is_the_view_of_its_position(preset):
    """The arena's lazy view: sealed after the bot's move, it holds exactly what
    `Game.view` said at that position (offers included), and one nobody kept expires."""
    from bots_sdk.liveview import LiveView, seal

    g = Game.from_seed(f"live-{preset}", 4, preset=preset, starting=False, leader=1)
    rng = random.Random(preset)
    kept = []
    while not g.is_over:
        view = LiveView(g, "t")
        if rng.random() < 0.5:  # read from the live game, before the seal
            assert (view.offer, view.to_move, view.preset) == (g.offer, g.to_move, preset)
        kept.append((view, g.copy()))
        seal(view, held=1)  # `view` here; the list's reference says the bot kept it
        _play(g, rng)
    for view, then in kept:
        assert view == View(then.view(then.to_move), table_id="t")
    view = LiveView(Game.from_seed("gone", 4), "t")
    seal(view, held=1)
    assert view.legal_plays()  # what it was made with stays
    with pytest.raises(RuntimeError, match="expired"):
        view.hand  # noqa: B018
