"""A PettingZoo AEC environment for Tiến Lên: ``bots_sdk.env.env()`` / ``raw_env``.

One episode is one game of the rules engine (every preset, 2-4 players). Agents are
``player_0`` … ``player_{n-1}``, one per seat. Guide and encodings: docs/env.md.

- **Actions**: ``Discrete(8192)``. Action ``a`` plays the cards of the acting seat's *dealt*
  hand (13 cards, sorted 3S first) at the positions of the 1-bits of ``a``; ``0`` (no card)
  is the pass, which also declines an offer. Every legal play is a subset of the dealt
  hand, so 2^13 ids cover every play, chops and offered plays included, in every preset,
  while a deck-wide id per card set would need ~30 million (suit choices of long straights).
- **Observations**: ``{"observation": int8[453], "action_mask": int8[8192]}``, built only
  from the engine's ``SeatView`` of that seat (what the referee would show it): nothing of
  another hand. The mask is zero for every agent but the one to act.
- **Rewards**: the game's points (zero-sum), given when the game ends. Chop payments made
  during the game are included then, not when made: paying them at once would tell other
  seats what a seat held (north's *đền cả làng* charges a pass made while holding a play).

Needs the ``env`` extra (``pip install './packaging/sdk[env]'``: pettingzoo, gymnasium, numpy); the
rest of the SDK does not import them.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
from gymnasium import spaces
from gymnasium.utils import EzPickle, seeding
from pettingzoo import AECEnv
from pettingzoo.utils import wrappers

from bots_sdk.cards import DECK, Card, format_cards
from bots_sdk.rules import PRESETS, Game, IllegalMove, Options, SeatView

__all__ = [
    "ACTION_SIZE",
    "OBS_LAYOUT",
    "OBS_SIZE",
    "PASS_ACTION",
    "IllegalAction",
    "action_cards",
    "action_for",
    "action_mask_for",
    "dealt_cards",
    "env",
    "observation_for",
    "raw_env",
]

HAND_SIZE = 13
ACTION_SIZE = 1 << HAND_SIZE  # 8192: every subset of a 13-card dealt hand
PASS_ACTION = 0
KINDS = ("single", "pair", "triple", "straight", "pair_sequence", "four_of_a_kind")
OFFERS = ("steal_lead", "out_of_turn_chop")
SEATS = 4  # seat planes are padded to four, relative to the observing seat

# (name, size, high): the observation vector, in order. "rel" planes are per seat relative
# to the observer: index 0 is the observer, 1 the next seat in turn order, and so on.
OBS_LAYOUT: tuple[tuple[str, int, int], ...] = (
    ("hand", 52, 1),  # own cards now
    ("dealt", 52, 1),  # own dealt cards: position i of the action bits = i-th lowest here
    ("played_rel", SEATS * 52, 1),  # cards each seat has played this game
    ("unseen", 52, 1),  # neither in own hand nor played: other hands or undealt
    ("table", 52, 1),  # the play to beat (zeros when leading)
    ("table_kind", len(KINDS), 1),
    ("table_seat_rel", SEATS, 1),
    ("counts_rel", SEATS, HAND_SIZE),  # cards left per seat
    ("locked_rel", SEATS, 1),  # passed this round
    ("finished_rel", SEATS, 1),  # went out
    ("frozen_rel", SEATS, 1),
    ("leader_rel", SEATS, 1),  # who led the game
    ("offer", len(OFFERS), 1),  # the offer made to this seat now
    ("can_pass", 1, 1),
    ("starting", 1, 1),  # a starting game (the first play must hold the start card)
    ("players", 3, 1),  # one-hot 2, 3, 4
)
OBS_SIZE = sum(size for _n, size, _h in OBS_LAYOUT)
_OFFSET: dict[str, int] = {}
_pos = 0
for _name, _size, _high in OBS_LAYOUT:
    _OFFSET[_name] = _pos
    _pos += _size
_HIGH = np.concatenate([np.full(size, high, dtype=np.int8) for _n, size, high in OBS_LAYOUT])
_CARD = {str(c): c for c in DECK}


class IllegalAction(ValueError):
    """An action that is not legal for the agent to act now; the game is unchanged."""


def action_for(dealt: Sequence[Card], cards: Iterable[Card | str | int] | None) -> int:
    """The action id of a play (``None`` or no cards: the pass) for a seat dealt ``dealt``."""
    if cards is None:
        return PASS_ACTION
    position = {c.index: i for i, c in enumerate(sorted(dealt, key=lambda c: c.index))}
    action = 0
    for c in cards:
        card = Card(c)
        if card.index not in position:
            raise IllegalAction(f"card {card} was not dealt to this seat")
        action |= 1 << position[card.index]
    return action


def action_cards(dealt: Sequence[Card], action: object) -> list[Card] | None:
    """The cards action ``action`` plays for a seat dealt ``dealt`` (None: the pass)."""
    if not isinstance(action, int | np.integer) or isinstance(action, bool):
        raise IllegalAction(f"an action is an integer 0..{ACTION_SIZE - 1}, got {action!r}")
    action = int(action)
    if not 0 <= action < ACTION_SIZE:
        raise IllegalAction(f"action {action} is outside 0..{ACTION_SIZE - 1}")
    if action == PASS_ACTION:
        return None
    ordered = sorted(dealt, key=lambda c: c.index)
    if action >> len(ordered):
        raise IllegalAction(f"action {action} names card positions beyond the "
                            f"{len(ordered)} cards dealt")
    return [ordered[i] for i in range(len(ordered)) if action >> i & 1]


def _mask(cards: Iterable[Card]) -> int:
    m = 0
    for c in cards:
        m |= 1 << c.index
    return m


def _encode(*, me: int, n: int, hand: int, dealt: int, played: Sequence[int],
            table: int, kind: str | None, table_seat: int | None, counts: Sequence[int],
            locked: Iterable[int], finished: Iterable[int], frozen: Iterable[int],
            leader: int, offer: str | None, can_pass: bool, starting: bool) -> np.ndarray:
    """The observation vector (OBS_LAYOUT) from a seat's public facts; card sets are
    52-bit masks, seats absolute (made relative to ``me`` here)."""
    buf = bytearray(OBS_SIZE)

    def put(name: str, mask: int, base: int = 0) -> None:
        start = _OFFSET[name] + base
        while mask:
            low = mask & -mask
            buf[start + low.bit_length() - 1] = 1
            mask ^= low

    put("hand", hand)
    put("dealt", dealt)
    seen = hand
    for seat in range(n):
        put("played_rel", played[seat], 52 * ((seat - me) % n))
        seen |= played[seat]
    put("unseen", ((1 << 52) - 1) & ~seen)
    if kind is not None:
        put("table", table)
        buf[_OFFSET["table_kind"] + KINDS.index(kind)] = 1
        if table_seat is not None:
            buf[_OFFSET["table_seat_rel"] + (table_seat - me) % n] = 1
    for seat in range(n):
        buf[_OFFSET["counts_rel"] + (seat - me) % n] = counts[seat]
    for name, seats in (("locked_rel", locked), ("finished_rel", finished),
                        ("frozen_rel", frozen), ("leader_rel", (leader,))):
        for seat in seats:
            buf[_OFFSET[name] + (seat - me) % n] = 1
    if offer is not None:
        buf[_OFFSET["offer"] + OFFERS.index(offer)] = 1
    buf[_OFFSET["can_pass"]] = int(bool(can_pass))
    buf[_OFFSET["starting"]] = int(bool(starting))
    buf[_OFFSET["players"] + n - 2] = 1
    return np.frombuffer(buf, dtype=np.int8)


def dealt_cards(sv: SeatView) -> list[Card]:
    """The seat's dealt hand (what action ids index), from its view (the engine's
    ``SeatView`` or the SDK's ``View``, which is one): its cards now and the cards it has
    played, weakest first."""
    cards = list(sv.hand)
    for move in sv.history:
        if move.get("seat") == sv.seat and move.get("cards"):
            cards.extend(_CARD[name] for name in move["cards"])
    return sorted(cards, key=lambda c: c.index)


def action_mask_for(sv: SeatView) -> np.ndarray:
    """The action mask of a seat's view (zeros unless it is that seat's move): what the
    environment gives, for a trained policy playing as a bot."""
    mask = np.zeros(ACTION_SIZE, dtype=np.int8)
    if sv.to_move != sv.seat:
        return mask
    dealt = dealt_cards(sv)
    for play in sv.plays:
        mask[action_for(dealt, play)] = 1
    if sv.can_pass:
        mask[PASS_ACTION] = 1
    return mask


def observation_for(sv: SeatView, dealt: Sequence[Card] | None = None) -> np.ndarray:
    """The observation vector of a seat from its view only (the engine's ``SeatView``,
    or the SDK's ``View``): what the environment gives that seat, and what a bot trained
    on it computes from the view the referee sends."""
    n = sv.players
    played = [0] * n
    for move in sv.history:
        names = move.get("cards")
        if names:
            played[move["seat"]] |= _mask(_CARD[name] for name in names)
    table = sv.table
    return _encode(
        me=sv.seat, n=n, hand=_mask(sv.hand),
        dealt=_mask(dealt) if dealt is not None else _mask(sv.hand) | played[sv.seat],
        played=played,
        table=_mask(c if isinstance(c, Card) else _CARD[c] for c in table["cards"])
        if table else 0,
        kind=table["kind"] if table else None, table_seat=table["seat"] if table else None,
        counts=sv.card_counts, locked=sv.locked_out, finished=sv.finished, frozen=sv.frozen,
        leader=sv.leader, offer=sv.offer, can_pass=sv.can_pass, starting=sv.starting)


def env(**kwargs: Any) -> AECEnv:
    """The environment with PettingZoo's standard checks (bounds, call order)."""
    e: AECEnv = raw_env(**kwargs)
    e = wrappers.AssertOutOfBoundsWrapper(e)
    e = wrappers.OrderEnforcingWrapper(e)
    return e


class raw_env(AECEnv, EzPickle):
    """Tiến Lên as an AEC environment.

    ``preset``: a rule preset; ``players``: 2-4; ``starting``: deal starting games (the
    start-card holder leads; default) or later games (a random leader; the only games with
    ``hue``/``danang`` lead steals); ``options``: rule overrides (as ``Game``'s).
    ``reset(seed=..., options={"deal_seed": "..."})`` plays the ``tienlen-deal-v1`` deal of
    that seed (the referee's and the arena's dealing); otherwise the deal comes from the
    environment's seeded generator. Deals that are instant wins (the game ends before
    anyone moves) are dealt again: see docs/env.md.
    """

    metadata: dict[str, Any] = {
        "render_modes": ["human", "ansi"],
        "name": "tienlen_v0",
        "is_parallelizable": False,
    }

    def __init__(self, preset: str = "south", players: int = 4, starting: bool = True,
                 options: dict[str, Any] | None = None, render_mode: str | None = None) -> None:
        EzPickle.__init__(self, preset=preset, players=players, starting=starting,
                          options=options, render_mode=render_mode)
        super().__init__()
        if preset not in PRESETS:
            raise ValueError(f"unknown preset {preset!r} (known: {', '.join(PRESETS)})")
        if type(players) is not int or players not in (2, 3, 4):
            raise ValueError(f"players must be 2, 3 or 4, got {players!r}")
        modes: list[str] = self.metadata["render_modes"]
        if render_mode is not None and render_mode not in modes:
            raise ValueError(f"render_mode must be one of {self.metadata['render_modes']}, "
                             f"got {render_mode!r}")
        self.preset = preset
        self.players = players
        self.starting = bool(starting)
        self.rule_options = Options.from_dict(options, base=PRESETS[preset]) if options \
            else PRESETS[preset]
        self.render_mode = render_mode
        self.possible_agents = [f"player_{s}" for s in range(players)]
        self.agents: list[str] = []
        self._seat = {a: s for s, a in enumerate(self.possible_agents)}
        obs_space = spaces.Dict({
            "observation": spaces.Box(low=0, high=_HIGH, shape=(OBS_SIZE,), dtype=np.int8),
            "action_mask": spaces.Box(low=0, high=1, shape=(ACTION_SIZE,), dtype=np.int8),
        })
        self.observation_spaces = {a: obs_space for a in self.possible_agents}
        self.action_spaces = {a: spaces.Discrete(ACTION_SIZE) for a in self.possible_agents}
        self.game: Game | None = None
        self._dealt: list[list[Card]] = []
        self.np_random, _ = seeding.np_random(None)

    # ------------------------------------------------------------------ spaces
    def observation_space(self, agent: str) -> spaces.Space[Any]:
        return self.observation_spaces[agent]

    def action_space(self, agent: str) -> spaces.Space[Any]:
        return self.action_spaces[agent]

    # ------------------------------------------------------------------ episode
    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> None:
        if seed is not None:
            self.np_random, _ = seeding.np_random(seed)
        deal_seed = (options or {}).get("deal_seed")
        unknown = sorted(set(options or {}) - {"deal_seed"})
        if unknown:
            # PettingZoo's api_test passes arbitrary reset options, so they cannot be errors.
            warnings.warn(f"reset() ignores unknown options {unknown} (known: deal_seed)",
                          stacklevel=2)
        if deal_seed is not None and (not isinstance(deal_seed, str) or not deal_seed):
            raise ValueError(f"options['deal_seed'] must be a non-empty string, got "
                             f"{deal_seed!r}")
        while True:
            seed_text = deal_seed or f"env/{int(self.np_random.integers(2**62))}"
            leader = None if self.starting else int(self.np_random.integers(self.players))
            game = Game.from_seed(seed_text, self.players, preset=self.preset,
                                  starting=self.starting, leader=leader,
                                  options=self.rule_options)
            if game.instant_winner is None:
                break
            # An instant win ends the game before anyone moves (3-4 % of deals): there is
            # no decision in it, and an AEC episode cannot pay rewards without a step.
            if deal_seed is not None:
                raise ValueError(f"deal {deal_seed!r} is an instant win for "
                                 f"player_{game.instant_winner}: the game ends before any "
                                 f"move, so it is not an episode")
        self.game = game
        self._dealt = [sorted(h, key=lambda c: c.index) for h in game.initial_hands]
        self._dealt_masks = [_mask(h) for h in self._dealt]
        self._played = [0] * self.players
        self.agents = self.possible_agents[:]
        self.rewards = dict.fromkeys(self.agents, 0)
        self._cumulative_rewards = dict.fromkeys(self.agents, 0)
        self.terminations = dict.fromkeys(self.agents, False)
        self.truncations = dict.fromkeys(self.agents, False)
        self.infos: dict[str, dict[str, Any]] = {a: {} for a in self.agents}
        self.agent_selection = self.possible_agents[self._to_move(game)]

    def _select(self) -> None:
        game = self.game
        assert game is not None
        if game.is_over:
            points = game.points
            for agent in self.agents:
                self.rewards[agent] = points[self._seat[agent]]
                self.terminations[agent] = True
            # Each agent then steps None once (the AEC protocol for ended agents), starting
            # with the one that made the last move.
        else:
            self.agent_selection = self.possible_agents[self._to_move(game)]

    @staticmethod
    def _to_move(game: Game) -> int:
        seat = game.to_move
        assert seat is not None, "the game is over"
        return seat

    def observe(self, agent: str) -> dict[str, np.ndarray]:
        game = self._require_game()
        seat = self._seat[agent]
        mask = np.zeros(ACTION_SIZE, dtype=np.int8)
        if not game.is_over and game.to_move == seat:
            for action in self._legal_actions(seat):
                mask[action] = 1
        return {"observation": self._observation(seat), "action_mask": mask}

    def _observation(self, seat: int) -> np.ndarray:
        """``observation_for(game.view(seat))`` without building the view: the same public
        facts, read from the game and the plays this environment applied (a test checks
        the two agree at every step)."""
        game = self._require_game()
        mine = not game.is_over and game.to_move == seat
        table = game.table
        return _encode(
            me=seat, n=self.players, hand=self._dealt_masks[seat] & ~self._played[seat],
            dealt=self._dealt_masks[seat], played=self._played,
            table=_mask(table.cards) if table is not None else 0,
            kind=table.kind if table is not None else None, table_seat=game.table_seat,
            counts=game.card_counts, locked=game.locked_out,
            finished=game.finishing_order, frozen=game.frozen, leader=game.leader,
            offer=game.offer if mine else None, can_pass=game.can_pass if mine else False,
            starting=game.starting)

    def _legal_actions(self, seat: int) -> list[int]:
        game = self._require_game()
        position = {c.index: i for i, c in enumerate(self._dealt[seat])}
        actions = []
        for m in game.legal_plays().masks():
            action = 0
            while m:
                low = m & -m
                action |= 1 << position[low.bit_length() - 1]
                m ^= low
            actions.append(action)
        if game.can_pass:
            actions.append(PASS_ACTION)
        return actions

    def step(self, action: int | None) -> None:
        agent = self.agent_selection
        if self.terminations.get(agent) or self.truncations.get(agent):
            self._was_dead_step(action)
            return
        game = self._require_game()
        seat = self._seat[agent]
        if action is None:
            raise IllegalAction(f"{agent} is to act: give an action, not None")
        cards = action_cards(self._dealt[seat], action)
        try:
            if cards is None:
                if not game.can_pass:
                    raise IllegalAction(f"{agent} cannot pass now: it leads the round")
                game.pass_turn()
            else:
                game.play(cards)
                self._played[seat] |= _mask(cards)
        except IllegalMove as exc:
            raise IllegalAction(f"action {int(action)} ({format_cards(cards or [])}) is "
                                f"illegal for {agent}: {exc}") from None
        self._cumulative_rewards[agent] = 0
        for a in self.agents:
            self.rewards[a] = 0
        self._select()
        self._accumulate_rewards()
        if self.render_mode == "human":
            self.render()

    def action_cards(self, agent: str, action: int) -> list[Card] | None:
        """The cards ``action`` plays for ``agent`` (None: the pass)."""
        self._require_game()
        return action_cards(self._dealt[self._seat[agent]], action)

    def action_for(self, agent: str, cards: Iterable[Card | str | int] | None) -> int:
        """The action id of a play of ``agent`` (None: the pass)."""
        self._require_game()
        return action_for(self._dealt[self._seat[agent]], cards)

    def _require_game(self) -> Game:
        if self.game is None:
            raise RuntimeError("call reset() before using the environment")
        return self.game

    # ------------------------------------------------------------------ display
    def render(self) -> str | None:
        if self.render_mode is None:
            import gymnasium

            gymnasium.logger.warn("render() called without a render_mode")
            return None
        text = self._text()
        if self.render_mode == "human":
            print(text)
            return None
        return text

    def _text(self) -> str:
        """Every hand, the table and whose turn: the simulator's view, not a seat's."""
        game = self._require_game()
        lines = [f"tienlen {self.preset}, {self.players} players"]
        table = game.table
        if table is not None:
            lines.append(f"table: {format_cards(table.cards)} ({table.kind}) by "
                         f"player_{game.table_seat}")
        for seat, hand in enumerate(game.hands):
            mark = ">" if game.to_move == seat else " "
            lines.append(f"{mark} player_{seat} [{len(hand):2d}] {format_cards(hand)}")
        if game.is_over:
            lines.append(f"over: points {game.points}, order {game.finishing_order}")
        elif game.offer is not None:
            lines.append(f"offer to player_{game.to_move}: {game.offer}")
        return "\n".join(lines)

    def close(self) -> None:
        pass
