"""The PettingZoo environment: PettingZoo's own conformance and seed tests in every preset
and table size, observations that carry nothing hidden, an action encoding that covers
every legal play, rewards that are the game's points, and the guide's code."""

from __future__ import annotations

import random
import re
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
from pettingzoo.test import api_test, seed_test

from bots_sdk.cards import parse_cards
from bots_sdk.determinize import Determinizer
from bots_sdk.env import (
    ACTION_SIZE,
    OBS_LAYOUT,
    OBS_SIZE,
    PASS_ACTION,
    IllegalAction,
    action_cards,
    action_for,
    action_mask_for,
    dealt_cards,
    env,
    observation_for,
    raw_env,
)
from bots_sdk.rules import PRESETS, Game

ROOT = Path(__file__).resolve().parents[2]
CONFIGS = [(p, n, s) for p in sorted(PRESETS) for n in (2, 3, 4) for s in (True, False)]


@pytest.mark.parametrize(("preset", "players", "starting"), CONFIGS)
def test_pettingzoo_api_and_seed_tests_pass(preset, players, starting):
    e = env(preset=preset, players=players, starting=starting)
    e.reset(seed=7)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # advice only: e.g. "observation is a dict"
        api_test(e, num_cycles=300)
    seed_test(lambda: env(preset=preset, players=players, starting=starting), num_cycles=300)


def play_random(e, seed: int, on_step=None) -> dict[str, float]:
    """One episode with random legal actions; returns each agent's final reward."""
    rng = np.random.default_rng(seed)
    final = {}
    for agent in e.agent_iter():
        obs, reward, terminated, truncated, _info = e.last()
        if terminated or truncated:
            final[agent] = reward
            e.step(None)
            continue
        if on_step is not None:
            on_step(e, agent, obs)
        e.step(int(rng.choice(np.flatnonzero(obs["action_mask"]))))
    return final


@pytest.mark.parametrize(("preset", "players", "starting"), CONFIGS)
def test_rewards_are_the_games_points(preset, players, starting):
    e = raw_env(preset=preset, players=players, starting=starting)
    for episode in range(3):
        e.reset(seed=episode)
        game = e.game
        final = play_random(e, episode)
        assert game.is_over and e.agents == []
        assert final == {f"player_{s}": p for s, p in enumerate(game.points)}
        assert sum(final.values()) == 0


def check_step(e, agent, obs):
    """At every step: the mask is exactly the legal plays (+ pass), each id decodes to its
    play, other agents' masks are empty, and the fast observation equals the one computed
    from each seat's SeatView."""
    game = e.unwrapped.game
    seat = game.to_move
    legal = {frozenset(c.index for c in p) for p in game.legal_plays()}
    ids = np.flatnonzero(obs["action_mask"])
    decoded = {frozenset(c.index for c in e.unwrapped.action_cards(agent, int(a)))
               for a in ids if a != PASS_ACTION}
    assert decoded == legal and len(ids) == len(legal) + game.can_pass
    assert (PASS_ACTION in ids) == game.can_pass
    for other in e.possible_agents:
        o = e.observe(other)
        s = int(other.split("_")[1])
        assert np.array_equal(o["observation"], observation_for(game.view(s)))
        if other != agent:
            assert not o["action_mask"].any()
    assert game.view(seat).offer == game.offer
    # what a trained policy computes from the view on the referee
    assert np.array_equal(obs["action_mask"], action_mask_for(game.view(seat)))
    assert dealt_cards(game.view(seat)) == e.unwrapped._dealt[seat]


@pytest.mark.parametrize(("preset", "players", "starting"), CONFIGS)
def test_mask_encoding_and_observations_at_every_step(preset, players, starting):
    e = raw_env(preset=preset, players=players, starting=starting)
    for episode in range(4):
        e.reset(seed=100 + episode)
        play_random(e, episode, check_step)


@pytest.mark.parametrize("preset", ["hue", "danang"])
def test_offers_are_actions_and_zero_declines(preset):
    # Later games in hue and danang open with offers to steal the lead.
    e = raw_env(preset=preset, players=4, starting=False)
    seed = next(k for k in range(500) if e.reset(seed=k) is None and e.game.offer is not None)
    e.reset(seed=seed)
    agent = e.agent_selection
    seat = e.game.to_move
    obs = e.observe(agent)
    assert obs["observation"][_slice("offer")].tolist() == [1, 0]  # steal_lead, to it only
    for other in e.possible_agents:
        if other != agent:
            assert not e.observe(other)["observation"][_slice("offer")].any()
    ids = np.flatnonzero(obs["action_mask"])
    assert PASS_ACTION in ids  # declining
    plays = [e.action_cards(agent, int(a)) for a in ids if a != PASS_ACTION]
    assert plays and all(len(p) == 6 for p in plays)  # three-pair sequences only
    e.step(PASS_ACTION)  # declines, without a pass lock
    assert seat not in e.game.locked_out
    assert e.game.offer is None or e.game.to_move != seat


def _slice(name: str) -> slice:
    start = 0
    for n, size, _high in OBS_LAYOUT:
        if n == name:
            return slice(start, start + size)
        start += size
    raise KeyError(name)


@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_no_hidden_card_reaches_an_observation(preset):
    """Deal the cards a seat cannot see differently (any way consistent with what it has
    seen): its observation must not change. An observation that read another hand, the
    undealt cards, or a declined offer would."""
    rng = random.Random(preset)
    checked = 0
    for players in (2, 3, 4):
        e = raw_env(preset=preset, players=players, starting=players != 3)
        e.reset(seed=players)
        game = e.game
        moves = 0
        while not game.is_over:
            if moves % 3 == 0:
                for seat in range(players):
                    view = game.view(seat)
                    obs = e.observe(f"player_{seat}")
                    det = Determinizer(view, e.rule_options)
                    for _ in range(3):
                        other = det.sample_game(rng)
                        assert np.array_equal(obs["observation"],
                                              observation_for(other.view(seat)))
                        if game.to_move == seat:
                            mask = np.zeros(ACTION_SIZE, dtype=np.int8)
                            for p in other.legal_plays():
                                mask[action_for(e._dealt[seat], p)] = 1
                            if other.can_pass:
                                mask[PASS_ACTION] = 1
                            assert np.array_equal(obs["action_mask"], mask)
                        checked += 1
            agent = e.agent_selection
            obs = e.observe(agent)
            e.step(int(rng.choice(list(np.flatnonzero(obs["action_mask"])))))
            moves += 1
    assert checked > 100


def test_observation_shows_own_cards_and_public_plays():
    e = raw_env(players=2)
    e.reset(options={"deal_seed": "doc"})
    game = e.game
    seat = game.to_move
    obs = e.observe(f"player_{seat}")["observation"]
    hand = {c.index for c in game.hands[seat]}
    assert set(np.flatnonzero(obs[_slice("hand")])) == hand
    other = 1 - seat
    assert not set(np.flatnonzero(obs[_slice("hand")])) & {c.index for c in game.hands[other]}
    assert obs[_slice("counts_rel")][0] == 13 and obs[_slice("players")][0] == 1
    e.step(int(np.flatnonzero(e.observe(f"player_{seat}")["action_mask"])[0]))
    played = game.history[0]["cards"]
    seen_by_other = e.observe(f"player_{other}")["observation"]
    rel = _slice("played_rel").start + 52  # the previous seat, relative to `other`
    assert {int(i) for i in np.flatnonzero(seen_by_other[rel:rel + 52])} == {
        c.index for c in parse_cards(played)}
    assert OBS_SIZE == 453


def test_action_ids_match_the_guide():
    dealt = parse_cards("3S 4D 5C 5H 7S 9C 10D JH QS KC AD 2S 2H")
    assert action_for(dealt, parse_cards("5C 5H")) == 12
    assert action_for(dealt, parse_cards("3S 4D 5C")) == 7
    assert action_for(dealt, ["2H"]) == 4096
    assert action_for(dealt, None) == PASS_ACTION
    assert action_cards(dealt, 12) == parse_cards("5C 5H")
    assert action_cards(dealt, PASS_ACTION) is None
    for bad, message in ((-1, "outside"), (ACTION_SIZE, "outside"), ("3", "integer")):
        with pytest.raises(IllegalAction, match=message):
            action_cards(dealt, bad)
    with pytest.raises(IllegalAction, match="beyond"):
        action_cards(dealt[:5], 1 << 7)
    with pytest.raises(IllegalAction, match="not dealt"):
        action_for(dealt, ["6S"])


def test_illegal_actions_raise_and_change_nothing():
    e = raw_env()
    e.reset(seed=3)
    agent = e.agent_selection
    before = e.game.history
    mask = e.observe(agent)["action_mask"]
    illegal = next(a for a in range(1, ACTION_SIZE) if not mask[a])
    with pytest.raises(IllegalAction, match="illegal for player_"):
        e.step(illegal)
    with pytest.raises(IllegalAction, match="cannot pass"):
        e.step(PASS_ACTION)  # the leader of a starting game
    with pytest.raises(IllegalAction, match="not None"):
        e.step(None)
    assert e.game.history == before and e.agent_selection == agent
    with pytest.raises(RuntimeError, match="reset"):
        raw_env().observe("player_0")


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="preset"):
        raw_env(preset="mars")
    with pytest.raises(ValueError, match="players"):
        raw_env(players=5)
    with pytest.raises(ValueError, match="render_mode"):
        raw_env(render_mode="rgb_array")
    with pytest.raises(ValueError, match="unknown option"):
        raw_env(options={"nope": 1})
    with pytest.raises(ValueError, match="deal_seed"):
        raw_env().reset(options={"deal_seed": 5})
    with pytest.warns(UserWarning, match="ignores unknown options"):
        raw_env().reset(options={"other": 1})


def test_instant_win_deals_are_dealt_again():
    seeds = [f"iw{i}" for i in range(400)]
    instant = next(s for s in seeds if Game.from_seed(s, 4).instant_winner is not None)
    with pytest.raises(ValueError, match="instant win"):
        raw_env().reset(options={"deal_seed": instant})
    e = raw_env()
    e.reset(seed=0)
    for _ in range(60):  # ~2 instant-win deals expected: each is replaced
        e.reset()
        assert e.game.instant_winner is None and not e.game.is_over


def test_same_seed_same_episode():
    a, b = raw_env(preset="hue", players=3), raw_env(preset="hue", players=3)
    a.reset(seed=11)
    b.reset(seed=11)
    assert a.game.initial_hands == b.game.initial_hands
    assert play_random(a, 1) == play_random(b, 1)


def test_render_shows_the_table():
    e = raw_env(render_mode="ansi", players=3)
    e.reset(seed=2)
    text = e.render()
    assert "player_0" in text and "tienlen south, 3 players" in text


def test_sdk_runs_without_the_env_dependencies():
    """A bot author who does not use the environment does not need its packages."""
    code = ("import sys, bots_sdk, bots_sdk.bot, bots_sdk.arena, bots_sdk.cli, "
            "bots_sdk.determinize, bots_sdk.examples, bots_sdk.examples.search, "
            "bots_sdk.rules\n"
            "bad = [m for m in ('numpy', 'gymnasium', 'pettingzoo') if m in sys.modules]\n"
            "assert not bad, bad")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)


def test_the_guides_code_runs():
    text = (ROOT / "docs" / "env.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert len(blocks) >= 3
    for block in blocks:
        out = subprocess.run([sys.executable, "-c", block], cwd=ROOT, capture_output=True,
                             text=True, timeout=300)
        assert out.returncode == 0, out.stderr
    assert "scored" in subprocess.run([sys.executable, "-c", blocks[1]], cwd=ROOT,
                                      capture_output=True, text=True).stdout
