"""Deal, replays, views and tables; invariants of whole random games (Hypothesis)."""

from __future__ import annotations

import json
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bots_sdk.cards import DECK, format_cards
from bots_sdk.rules import (
    PRESETS,
    REPLAY_SCHEMA,
    Game,
    ReplayError,
    SeatView,
    Table,
    deal,
    replay_game,
    replay_read,
)
from tests.engine.conftest import C
from tests.engine.test_rules_deal import reference_deal


def test_deal_matches_the_documented_algorithm_and_a_fixed_vector() -> None:
    hands = deal("tienlen", 4)
    assert [format_cards(h) for h in hands][0] == "3S 5D 6D 8S 8C 8D 10C JD QS KC KD AS AC"
    assert format_cards(hands[3]) == "4S 4D 4H 5S 6C 7H 8H 10H JH QH KH AD 2H"
    for seed in ("", "a", "tournament-7/game-3", "đôi thông"):
        for players in (2, 3, 4):
            got = [format_cards(h) for h in deal(seed, players)]
            assert got == reference_deal(seed, players)
    assert sorted(c for h in deal("x", 4) for c in h) == list(DECK)
    with pytest.raises(ValueError):
        deal("x", 5)


def random_game(preset: str, seed: str, players: int, rng: random.Random,
                starting: bool = True) -> Game:
    game = Game.from_seed(seed, players, preset=preset, starting=starting,
                          leader=None if starting else rng.randrange(players))
    while not game.is_over:
        plays = game.legal_plays()
        k = rng.randrange(len(plays) + (1 if game.can_pass else 0))
        if k == len(plays):
            game.pass_turn()
        else:
            game.play(plays[k])
    return game


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    preset=st.sampled_from(sorted(PRESETS)),
    seed=st.text(max_size=8),
    players=st.integers(2, 4),
    starting=st.booleans(),
    choice_seed=st.integers(0, 2**32),
)
def test_random_games_keep_every_invariant(preset, seed, players, starting, choice_seed):
    game = random_game(preset, seed, players, random.Random(choice_seed), starting)
    assert sum(game.points) == 0
    assert sorted(game.finishing_order) == list(range(players))
    # every card dealt was either played or is still in a hand
    played = [c for m in game.history if "cards" in m for c in m["cards"]]
    left = [str(c) for h in game.hands for c in h]
    dealt = [str(c) for h in deal(seed, players) for c in h]
    assert sorted(played + left) == sorted(dealt) and len(played) == len(set(played))
    # at most one player holds cards at the end, except after early endings
    if game.end_reason == "finished":
        holders = [s for s, h in enumerate(game.hands) if h and s not in game.frozen]
        assert len(holders) <= 1
    # the replay re-simulates to the same result, through JSON
    replay = json.loads(json.dumps(game.replay()))
    assert replay["schema"] == REPLAY_SCHEMA
    again = replay_game(replay)
    assert again.points == game.points and again.finishing_order == game.finishing_order
    assert game.next_leader is None or 0 <= game.next_leader < players


def test_a_tampered_replay_is_rejected() -> None:
    game = random_game("south", "tamper", 4, random.Random(3))
    replay = game.replay()
    replay["result"]["points"] = [p + (1 if i == 0 else 0) for i, p in
                                  enumerate(replay["result"]["points"])]
    with pytest.raises(ValueError, match="differs on 'points'"):
        replay_game(replay)
    broken = game.replay()
    broken["moves"][0] = {"seat": broken["moves"][0]["seat"], "cards": ["2H", "2H"]}
    with pytest.raises(ValueError, match="move 0"):
        replay_game(broken)
    with pytest.raises(ValueError, match="schema"):
        replay_game({**game.replay(), "schema": "tienlen.replay/0"})


def _malformed(how: str) -> object:
    """A real replay broken in one way (a file cut short, a hand edited by hand, ...)."""
    replay = random_game("south", "malformed", 4, random.Random(5)).replay()
    text = json.dumps(replay)
    if how == "cut":
        return text[: len(text) // 2]
    if how == "bytes":
        return b"\xff\xfe not utf-8"
    if how == "list":
        return "[1, 2, 3]"
    if how == "players":
        replay["players"] = 7
    elif how == "hands":
        replay["hands"] = replay["hands"][:3]
    elif how == "card":
        replay["hands"][2][0] = "1Z"
    elif how == "nested":
        replay["hands"][1][3] = ["3S"]
    elif how == "moves":
        replay["moves"] = {"seat": 0}
    elif how == "move":
        replay["moves"][4] = {"cards": ["3S"]}
    elif how == "missing":
        del replay["moves"]
    elif how == "result":
        replay["result"] = [0, 0, 0, 0]
    elif how == "preset":
        replay["preset"] = "atlantis"
    return replay


@pytest.mark.parametrize(("how", "message"), [
    ("cut", "not a replay: the text is not JSON"),
    ("bytes", "not a replay: the text is not JSON"),
    ("list", "not a replay: expected a JSON object, got list"),
    ("players", "replay players must be 2, 3 or 4, not 7"),
    ("hands", "replay hands do not match its number of players (4)"),
    ("card", "bad hands in replay: seat 2: unknown card '1Z'"),
    ("nested", "bad hands in replay: seat 1: unknown card ['3S']"),
    ("moves", "replay moves must be a list"),
    ("move", "replay move 4 is malformed (no seat of the game)"),
    ("missing", "not a valid replay: missing 'moves'"),
    ("result", "replay result must be a JSON object or null"),
    ("preset", "replay has unknown preset 'atlantis'"),
])
def test_the_one_replay_reader_says_what_is_wrong(how, message) -> None:
    """Every reader (CLI, verify-replay, web, API, worker) goes through replay_read: a
    malformed replay is one ReplayError (a ValueError) with the same message everywhere."""
    for read in (replay_read, replay_game):
        with pytest.raises(ReplayError) as caught:
            read(_malformed(how))
        assert message in str(caught.value)
        assert isinstance(caught.value, ValueError)


def test_the_reader_takes_text_bytes_or_an_object_and_keeps_the_record() -> None:
    replay = random_game("hue", "read", 3, random.Random(8)).replay()
    text = json.dumps(replay)
    assert replay_read(text) == replay_read(text.encode()) == replay_read(replay) == replay
    assert replay_game(text).points == replay_game(replay).points


def test_a_seat_view_shows_only_what_the_seat_may_know() -> None:
    game = Game.from_seed("view", 4)
    seat = game.to_move
    game.play(game.legal_plays()[0])
    other = game.to_move
    view = game.view(other)
    assert set(view.hand) == set(game.hands[other])
    hidden = {str(c) for s, h in enumerate(game.hands) if s != other for c in h}
    text = json.dumps(view.to_dict())
    assert not any(f'"{c}"' in text for c in hidden)
    assert view.card_counts == tuple(len(h) for h in game.hands)
    assert view.to_move == other and view.can_pass and view.legal_plays
    assert view.table["seat"] == seat
    assert SeatView.from_dict(json.loads(text)) == view
    idle = game.view(seat)
    assert idle.plays == () and not idle.can_pass and idle.points is None


def test_a_table_carries_the_leader_and_the_starting_flag() -> None:
    rng = random.Random(5)
    table = Table(4)
    previous: Game | None = None
    for i in range(6):
        game = table.new_game(seed=f"table-{i}")
        assert game.starting == (previous is None or previous.next_starting)
        if previous is not None and not game.starting:
            assert game.leader == previous.next_leader
        while not game.is_over:
            plays = game.legal_plays()
            k = rng.randrange(len(plays) + game.can_pass)
            game.pass_turn() if k == len(plays) else game.play(plays[k])
        table.finish_game(game)
        previous = game
    assert table.games_played == 6 and sum(table.totals) == 0
    with pytest.raises(ValueError):
        table.new_game(hands=[C("3S"), C("4S"), C("5S"), C("6S")], seed="x")
