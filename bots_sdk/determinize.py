"""Determinization for search bots: deal the cards a seat cannot see, consistently with
everything it has seen, uniformly at random.

A seat sees its own hand, every public move and every card count (docs/rules.md §2). The other
hands (and, with 2-3 players, the undealt cards) are hidden. A search bot that wants to
simulate "what happens if I play this" has to fill them in. Doing that by shuffling the
unseen cards is almost right; what the public game *implies* beyond the counts makes the
difference, and is easy to miss:

- **Starting game, who led.** The first play had to contain the start card (3♠; 3♣ in
  ``hue``) or, when that card was not dealt (2-3 players), the weakest dealt card. So if the
  first play does not contain the start card, the start card was undealt, and so was every
  card weaker than the first play's weakest card (otherwise that card would have been the
  weakest dealt one, and had to be played). Before the first play, the leader holds the
  start card or the weakest dealt card.
- **No instant win.** A game dealt 13 cards a hand that is still going on tells you that no
  seat was dealt an instant-win hand (§7): a seat that has played five pairs and a lone 8
  cannot hold a pair, nor an 8, among its last two cards (that would have been six pairs).
- **Huế split bombs.** In a ``hue`` starting game, whether a lone 3♠ was a four of a kind,
  or two 6s a pair sequence, depends on the first play and the whole dealt hand, and the
  public moves are legal only for some deals.
- **Offers.** Declined offers are private, so an offer says nothing about the hands of the
  seats that were not seen to accept it; it does mean the seat that accepted held the play.

Rather than a list of special cases, one exact test: a deal is *consistent* when the engine,
dealt those hands and replaying the public history (declining any offer the history does
not show accepted, as a hidden decline), reproduces the seat's view. The sampler proposes
deals uniformly (the cards whose place the first play proves are put there directly, which
keeps rejection rare) and keeps the consistent ones, so every consistent deal has the same
probability. Cost (``benchmarks/determinize_bench.py``, compiled engine): 11-33 µs a deal,
23-92 µs a ``Game`` replayed to the view's position, ready to simulate.

Only the public engine API is used (``bots_sdk.rules.Game``).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from operator import attrgetter
from typing import Any

from bots_sdk.cards import DECK, Card
from bots_sdk.rules import PRESETS, Game, IllegalMove, Options, SeatView

__all__ = ["Deal", "Determinizer", "InconsistentView", "sample_deal"]

_CARD_BY_NAME = {str(c): c for c in DECK}
_ALL = (1 << 52) - 1
_INDEX = attrgetter("index")
#: Proposals tried before giving up (a real view always has a consistent deal; this only
#: stops a hand-made, impossible view from looping for ever).
MAX_ATTEMPTS = 20_000


class InconsistentView(ValueError):
    """The view cannot come from a real game (or no consistent deal was found)."""


@dataclass(frozen=True, slots=True)
class Deal:
    """One way the hidden cards may lie: every seat's current hand and the undealt cards.

    ``hands[seat]`` includes the viewing seat's own (real) hand; ``initial_hands`` adds back
    the cards each seat has played, i.e. the deal as it was dealt."""

    hands: tuple[tuple[Card, ...], ...]
    undealt: tuple[Card, ...]
    played: tuple[tuple[Card, ...], ...]

    @property
    def initial_hands(self) -> tuple[tuple[Card, ...], ...]:
        return tuple(tuple(sorted(h + p, key=_INDEX))
                     for h, p in zip(self.hands, self.played, strict=True))


def _mask(cards: Sequence[Card]) -> int:
    m = 0
    for c in cards:
        m |= 1 << c.index
    return m


def _cards(mask: int) -> tuple[Card, ...]:
    out = []
    while mask:
        low = mask & -mask
        out.append(DECK[low.bit_length() - 1])
        mask ^= low
    return tuple(out)


def _resolve_options(preset: str, options: Options | dict[str, Any] | None) -> Options:
    if preset not in PRESETS:
        raise InconsistentView(f"unknown preset {preset!r} (known: {', '.join(PRESETS)})")
    if options is None:
        return PRESETS[preset]
    if isinstance(options, Options):
        return options
    if isinstance(options, dict):
        return Options.from_dict(options, base=PRESETS[preset])
    raise TypeError(f"options must be an Options or a dict, got {type(options).__name__}")


class Determinizer:
    """Samples deals consistent with one seat's view (build one per view, sample many).

    ``view``: the SDK's ``View`` or the engine's ``SeatView``. ``options``: the table's
    rule options when they differ from the preset's (``TableInfo.options`` as given to
    ``on_table_start``, or an ``Options``); the preset's by default.
    """

    def __init__(self, view: SeatView, options: Options | dict[str, Any] | None = None) -> None:
        if not isinstance(view, SeatView):
            raise TypeError(f"expected a View or SeatView, got {type(view).__name__}")
        sv = view
        seat, n, preset = sv.seat, sv.players, sv.preset
        hand, counts, history = sv.hand, tuple(sv.card_counts), sv.history
        if sv.points is not None:
            raise InconsistentView("the game is over: every hand is known from the replay")
        if n not in (2, 3, 4) or len(counts) != n or not 0 <= seat < n:
            raise InconsistentView(f"seat {seat} of {n} players with counts {counts}")
        self.seat, self.players, self.preset = seat, n, preset
        self.options = opts = _resolve_options(preset, options)
        self._options_arg = options if options is None or isinstance(options, Options) \
            else opts
        self.starting = sv.starting
        self.leader = sv.leader
        self.to_move = sv.to_move
        self.offer = sv.offer
        table = sv.table
        self._table_kind = table.get("kind") if table else None

        own = _mask(hand)
        if len(hand) != counts[seat] or own.bit_count() != len(hand):
            raise InconsistentView(f"own hand has {len(hand)} cards, count says {counts[seat]}")
        played = [0] * n
        moves: list[tuple[int, list[Card] | None, str | None]] = []
        seen = own
        for i, entry in enumerate(history):
            s = entry.get("seat")
            if type(s) is not int or not 0 <= s < n:
                raise InconsistentView(f"history entry {i}: bad seat {s!r}")
            names = entry.get("cards")
            if names:
                try:
                    cards = [c if isinstance(c, Card) else _CARD_BY_NAME[str(c).upper()]
                             for c in names]
                except KeyError:
                    raise InconsistentView(f"history entry {i}: unknown card in {names!r}") \
                        from None
                m = _mask(cards)
                if m & seen or m.bit_count() != len(cards):
                    raise InconsistentView(f"history entry {i}: a card seen twice")
                seen |= m
                played[s] |= m
                moves.append((s, cards, entry.get("offer")))
            else:
                moves.append((s, None, entry.get("offer")))
        self._moves = moves
        self._played = played
        self._own = own
        hidden = [0 if s == seat else counts[s] for s in range(n)]
        unknown = _ALL & ~seen
        undealt = unknown.bit_count() - sum(hidden)
        if undealt < 0:
            raise InconsistentView(f"counts {counts} need more cards than are unseen")
        self._hidden = hidden
        self._undealt = undealt
        self._unknown = unknown
        initial = [counts[s] + played[s].bit_count() for s in range(n)]
        # The engine checks instant wins only for full 13-card deals (a set-up position is
        # a game of its own).
        self._check_instant = all(k == 13 for k in initial)
        forced = self._forced(opts, moves, unknown)
        self._forced_undealt = forced.get(-1, 0)
        self._forced_hands = [forced.get(s, 0) for s in range(n)]
        for s in range(n):
            if self._forced_hands[s].bit_count() > hidden[s]:
                raise InconsistentView(f"seat {s} must hold more cards than its count")
        if self._forced_undealt.bit_count() > undealt:
            raise InconsistentView("the first play proves more cards undealt than there are")
        taken = self._forced_undealt
        for m in self._forced_hands:
            taken |= m
        self._free_cards = list(_cards(unknown & ~taken))
        self._forced_cards = [list(_cards(m)) for m in self._forced_hands]
        self._forced_undealt_cards = list(_cards(self._forced_undealt))
        self._own_cards = list(_cards(own))
        self._played_lists = [list(_cards(p)) for p in played]
        self._played_cards = tuple(tuple(p) for p in self._played_lists)
        self._slots = [hidden[s] - self._forced_hands[s].bit_count() for s in range(n)]
        # When a deal must be replayed to be accepted: Huế split bombs change which public
        # moves were legal; and while another seat is being offered a play (this seat sees
        # nobody to move), some other seat must hold a play that can be offered now.
        self._split_bombs = bool(opts.split_bombs and self.starting)
        self._replay_to_accept = self._split_bombs or self.to_move is None
        self._leader_check = self.starting and not any(mv[1] for mv in moves)

    # ------------------------------------------------------------------ public API
    @property
    def unknown(self) -> tuple[Card, ...]:
        """Every card the seat has not seen (in other hands or undealt)."""
        return _cards(self._unknown)

    @property
    def hidden_counts(self) -> tuple[int, ...]:
        """Hidden cards per seat (0 for the viewing seat)."""
        return tuple(self._hidden)

    @property
    def undealt_count(self) -> int:
        return self._undealt

    @property
    def known_undealt(self) -> tuple[Card, ...]:
        """Cards the public game proves were never dealt (starting games, 2-3 players)."""
        return _cards(self._forced_undealt)

    def sample(self, rng: random.Random | Any = random) -> Deal:
        """A deal drawn uniformly from the deals consistent with the view. ``rng``: a
        ``random.Random`` (or the ``random`` module)."""
        hands, undealt = self._draw(rng)
        played = self._played_cards
        return Deal(tuple(tuple(sorted(h, key=_INDEX)) for h in hands),
                    tuple(sorted(undealt, key=_INDEX)), played)

    def sample_game(self, rng: random.Random | Any = random) -> Game:
        """A ``Game`` at the view's position with a uniformly drawn consistent deal, ready
        to simulate from (every rule state, chop chains and payments included)."""
        for _ in range(MAX_ATTEMPTS):
            hands, _undealt = self._propose(rng)
            game = self._replay(hands)
            if game is not None:
                return game
        raise InconsistentView(f"no consistent deal in {MAX_ATTEMPTS} draws")

    def is_consistent(self, deal: Deal | Sequence[Sequence[Card]]) -> bool:
        """Whether ``deal`` (a ``Deal``, or current hands per seat) fits the view exactly."""
        hands = self._hands_of(deal)
        return hands is not None and self._replay(hands) is not None

    def game_for(self, deal: Deal | Sequence[Sequence[Card]]) -> Game:
        """The game at the view's position for a consistent deal (e.g. one from
        ``sample``, to play several moves from the same deal); InconsistentView otherwise."""
        hands = self._hands_of(deal)
        game = None if hands is None else self._replay(hands)
        if game is None:
            raise InconsistentView("that deal does not fit the view")
        return game

    def _hands_of(self, deal: Deal | Sequence[Sequence[Card]]) -> list[list[Card]] | None:
        """The deal's hands as lists, or None when counts or cards cannot fit the view."""
        hands = deal.hands if isinstance(deal, Deal) else deal
        if len(hands) != self.players:
            return None
        total = 0
        for s in range(self.players):
            m = _mask(hands[s])
            if m.bit_count() != len(hands[s]) or total & m:
                return None
            if (m != self._own) if s == self.seat else (
                    len(hands[s]) != self._hidden[s] or m & ~self._unknown):
                return None
            total |= m
        return [list(h) for h in hands]

    # ------------------------------------------------------------------ internals
    def _forced(self, opts: Options, moves: list[tuple[int, list[Card] | None, str | None]],
                unknown: int) -> dict[int, int]:
        """Cards whose place the public game proves: -1 = undealt, else a seat."""
        if not self.starting:
            return {}
        start = 1 << opts.start_card
        first = next((cards for _s, cards, _o in moves if cards), None)
        if first is None:
            # Before the first play the leader holds the start card, if it was dealt; with
            # four players every card is dealt.
            if self.players == 4 and self._check_full_deal() and start & unknown:
                return {self.leader: start}
            return {}
        pm = _mask(first)
        if pm & start:
            return {}
        # The start card was not dealt, and the first play held the weakest dealt card.
        low = pm & -pm
        below = (low - 1) & unknown
        return {-1: below | (start & unknown)}

    def _check_full_deal(self) -> bool:
        return self._undealt + sum(self._hidden) + self._own.bit_count() + sum(
            p.bit_count() for p in self._played) == 52

    def _propose(self, rng: Any) -> tuple[list[list[Card]], list[Card]]:
        """Current hands (cards) per seat and the undealt cards, uniformly at random among
        the deals that respect the counts and the forced cards."""
        r = rng.random
        # Sorting by random keys is a uniform shuffle (ties have probability ~2^-43) and
        # costs half of random.shuffle here.
        order = sorted(self._free_cards, key=lambda _c: r())
        hands = []
        pos = 0
        for s, (k, forced) in enumerate(zip(self._slots, self._forced_cards, strict=True)):
            if s == self.seat:
                hands.append(self._own_cards)
            else:
                hands.append(forced + order[pos:pos + k])
                pos += k
        return hands, self._forced_undealt_cards + order[pos:]

    def _draw(self, rng: Any) -> tuple[list[list[Card]], list[Card]]:
        for _ in range(MAX_ATTEMPTS):
            hands, undealt = self._propose(rng)
            if self._replay_to_accept:
                if self._replay(hands) is not None:
                    return hands, undealt
            elif self._accept_fast(hands):
                return hands, undealt
        raise InconsistentView(f"no consistent deal in {MAX_ATTEMPTS} draws")

    def _new_game(self, hands: list[list[Card]]) -> Game | None:
        game = Game([h + p for h, p in zip(hands, self._played_lists, strict=True)],
                    preset=self.preset, starting=self.starting,
                    leader=None if self.starting else self.leader,
                    options=self._options_arg)
        if game.instant_winner is not None or game.leader != self.leader:
            return None
        return game

    def _accept_fast(self, hands: list[list[Card]]) -> bool:
        """Without split bombs, the public moves are legal for every proposed deal (the
        forced cards settle the start card): only instant wins and, before the first play,
        the leader remain to check, and both are decided by dealing the game."""
        if not (self._check_instant or self._leader_check):
            return True
        return self._new_game(hands) is not None

    def _replay(self, hands: list[list[Card]]) -> Game | None:
        game = self._new_game(hands)
        if game is None:
            return None
        try:
            for seat, cards, offer in self._moves:
                # An offer the history does not show accepted was declined, privately.
                while game.offer is not None and (game.to_move != seat or game.offer != offer):
                    game.pass_turn()
                if game.is_over or game.to_move != seat or game.offer != offer:
                    return None
                if cards is None:
                    game.pass_turn()
                else:
                    game.play(cards)
        except IllegalMove:
            return None
        if game.is_over:
            return None
        me, to_move = self.seat, self.to_move
        if to_move == me:
            while game.offer is not None and (game.to_move != me or game.offer != self.offer):
                game.pass_turn()
            if game.is_over or game.to_move != me or game.offer != self.offer:
                return None
        elif to_move is None:
            # Another seat is being offered a play right now (its view shows nobody to
            # move): the deal must make some other seat the one being asked.
            if game.offer is None or game.to_move == me:
                return None
        else:
            while game.offer is not None:
                game.pass_turn()
            if game.is_over or game.to_move != to_move:
                return None
        if self._split_bombs and self._table_kind is not None and (
                game.table is None or game.table.kind != self._table_kind):
            return None  # e.g. a lone 3S on the table that this deal makes four 3s
        return game


def sample_deal(view: SeatView, rng: random.Random | Any = random,
                options: Options | dict[str, Any] | None = None) -> Deal:
    """One consistent deal for ``view`` (build a ``Determinizer`` to draw many)."""
    return Determinizer(view, options).sample(rng)
