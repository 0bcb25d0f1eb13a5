"""The per-step states the replay viewer draws, checked against the engine itself."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from bots_sdk.rules import Game
from tests.web.factories import load_replay
from web.replay_frames import INSTANT_WIN_KINDS, final_places, replay_frames

NAMES = ["north", "east", "south", "west"]


def play_random(seed: str, players: int, preset: str = "south") -> dict:
    game = Game.from_seed(seed, players, preset=preset)
    rnd = random.Random(seed)
    while not game.is_over:
        legal = list(game.legal_plays())
        if legal and (not game.can_pass or rnd.random() < 0.8):
            game.play(rnd.choice(legal))
        else:
            game.pass_turn()
    return game.replay()


@settings(max_examples=25, deadline=None)
@given(seed=st.text(min_size=1, max_size=12), players=st.integers(2, 4),
       preset=st.sampled_from(["south", "south_extended", "hue", "danang", "north"]))
def test_states_follow_the_engine_step_by_step(seed, players, preset):
    replay = play_random(seed, players, preset)
    frames = replay_frames(replay, names=NAMES)
    assert frames["warning"] is None
    moves, states = frames["moves"], frames["states"]
    assert len(states) == len(moves) + 1 == len(replay["moves"]) + 1
    held = [list(h) for h in replay["hands"]]
    for move, state in zip(moves, states[1:], strict=True):
        if move["cards"]:
            for c in move["cards"]:
                held[move["seat"]].remove(c)  # a seat only plays cards it holds
        if state["table"] is not None:
            # what lies on the table is a play that was made
            assert any(m["cards"] and sorted(m["cards"]) == sorted(state["table"]["cards"]) for m in moves)
        assert state["to_move"] is None or 0 <= state["to_move"] < players
    final = states[-1]
    assert final["to_move"] is None
    assert final["finished"] == replay["result"]["finishing_order"]
    chops = sum(1 for m in moves if m.get("chop"))
    chop_payments = [p for p in replay["result"]["payments"] if p["reason"] == "chop"]
    assert chops >= len(chop_payments)  # every paid chain had at least one chop


def test_undealt_cards_and_names_with_two_players():
    frames = replay_frames(load_replay("game_2p_handmade.json"), names=NAMES)
    assert len(frames["undealt"]) == 26
    assert frames["names"] == ["north", "east"]
    assert frames["payments"][0]["reason_text"] == "finishing places"
    assert frames["payments"][0]["from_name"] == "east"


def test_instant_win_has_no_moves_and_says_so():
    for i in range(2000):
        replay = play_random(f"iw-{i}", 4)
        if replay["result"]["instant_winner"] is not None:
            break
    else:  # pragma: no cover - the deal algorithm is fixed, so this never happens
        raise AssertionError("no instant win in 2000 deals")
    frames = replay_frames(replay, names=NAMES)
    assert frames["moves"] == [] and len(frames["states"]) == 1
    # It says which instant win (the deal held it) and for whom.
    game = Game(replay["hands"], preset=replay["preset"], starting=bool(replay.get("starting", True)),
                leader=replay.get("leader"), seed=replay.get("seed"))
    kind = game.instant_win_kind
    assert kind and INSTANT_WIN_KINDS[kind] in frames["instant_win_text"]
    assert NAMES[replay["result"]["instant_winner"]] in frames["instant_win_text"]
    # The others share the last place, whatever order the result lists them in.
    winner = replay["result"]["instant_winner"]
    assert frames["places"] == [1 if s == winner else 4 for s in range(4)]


def test_places_follow_the_result_and_its_ties() -> None:
    assert final_places({"finishing_order": [3, 0, 1, 2], "tied": []}, 4) == [2, 3, 4, 1]
    assert final_places({"finishing_order": [2, 0, 1, 3], "tied": [0, 1, 3]}, 4) == [4, 4, 1, 4]
    assert final_places({"finishing_order": [0, 1], "tied": []}, 4) is None  # not a whole order
    assert final_places({}, 2) is None
    assert every_kind_is_named()


def every_kind_is_named() -> bool:
    from bots_sdk.rules import PRESETS

    kinds = set()
    for options in PRESETS.values():
        kinds |= set(options.starting_instant_wins) | set(options.other_instant_wins)
    return kinds <= set(INSTANT_WIN_KINDS)


def test_a_damaged_replay_still_shows_its_moves_with_a_warning():
    replay = load_replay("game_4p.json")
    replay["moves"][3] = {"seat": 1, "cards": ["2H"]}  # not in that seat's hand
    frames = replay_frames(replay, names=NAMES)
    assert "could not be re-simulated" in frames["warning"]
    assert len(frames["states"]) == len(replay["moves"]) + 1
    assert frames["states"][1]["table"]["cards"] == ["3S"]


def test_garbage_replay_renders_an_empty_viewer_with_a_warning():
    frames = replay_frames({"players": 4, "hands": "nope", "moves": [1, {"seat": 9}, {"seat": 0, "cards": "3S"}],
                            "result": []}, names=NAMES)
    assert frames["warning"] and frames["payments"] == []
    assert len(frames["states"]) == len(frames["moves"]) + 1
