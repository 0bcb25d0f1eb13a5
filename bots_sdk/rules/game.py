"""One game of Tiến Lên: turns, rounds, the pass lock, offers and the end (docs/rules.md §4-§9).

State is kept as small integers (52-bit hand masks, a bitmask of locked-out seats) so a
turn costs a few microseconds; the public surface (cards, dicts, views) is built on demand.
Every regional rule is read from ``Options``; there is no per-region code path.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from bots_sdk.cards import DECK, Card, cards_of_mask, format_cards, parse_cards

from .combos import (
    CHOP,
    FOUR_OF_A_KIND,
    NOT_BEAT,
    PAIR,
    PAIR_SEQUENCE,
    SINGLE,
    TWOS_MASK,
    Combination,
    Combo,
    beat_kind,
    category,
    chop_value,
    classify_mask,
)
from .deal import deal
from .moves import (
    NIB_PAIRS,
    SUIT_MASKS,
    Group,
    LegalPlays,
    answer_groups,
    flat_masks,
    lead_groups,
    may_hold_four_pairs,
    ps4_chop_groups,
    restrict_to_card,
    three_pair_groups,
)
from .options import Options, resolve_options
from .record import game_replay
from .scoring import instant_win_kind
from .settlement import EndOfGame, Payment, settle_game, settle_instant_win
from .state import MoveRecord, move_dict
from .view import SeatView, seat_view

SIXES_MASK = 0xF << 12
# _AFTER[n][s]: the seats after s in turn order, ending with s itself.
_AFTER = {n: tuple(tuple((s + k) % n for k in range(1, n + 1)) for s in range(n))
          for n in (2, 3, 4)}
STEAL_LEAD = "steal_lead"
OUT_OF_TURN_CHOP = "out_of_turn_chop"


class IllegalMove(ValueError):
    """A move the rules forbid; ``code`` is machine-readable, the message says why."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.reason = message


def _text(mask: int) -> str:
    return format_cards(cards_of_mask(mask))


class Game:
    """A game from given hands. See docs/rules.md; the public API is in docs/engine.md.

    Everything outside this module reads a game through its public properties (the
    ``state.GameState`` protocol); the underscore fields are this class's own.
    """

    def __new__(cls, *args: object, **kwargs: object) -> Game:
        # Only so that ``copy()`` can make a Game without running ``__init__``: a class
        # compiled by mypyc runs ``__init__`` from its default ``__new__``.
        return super().__new__(cls)

    def __init__(
        self,
        hands: Iterable[Iterable[Card | str | int] | str],
        preset: str = "south",
        starting: bool = True,
        leader: object = None,
        options: Options | dict[str, Any] | None = None,
        seed: str | None = None,
    ) -> None:
        opts = resolve_options(preset, options)
        self.preset = preset
        self.options = opts
        self.seed = seed
        masks: list[int] = []
        seen = 0
        hand_list = list(hands)
        if not 2 <= len(hand_list) <= 4:
            raise ValueError(f"a game has 2 to 4 players, got {len(hand_list)} hands")
        for seat, hand in enumerate(hand_list):
            try:
                cards = parse_cards(hand)
            except TypeError:
                raise ValueError(f"seat {seat}: a hand must be a list of cards, "
                                 f"got {hand!r}") from None
            m = 0
            for c in cards:
                m |= c.bit
            if not 1 <= len(cards) <= 13:
                raise ValueError(f"seat {seat} has {len(cards)} cards; a hand holds 1 to 13")
            if m.bit_count() != len(cards) or m & seen:
                m = 0
                for c in cards:
                    if m & c.bit:
                        raise ValueError(f"card {c} is twice in the hand of seat {seat}")
                    if seen & c.bit:
                        raise ValueError(f"card {c} is dealt to more than one seat")
                    m |= c.bit
            seen |= m
            masks.append(m)
        n = len(masks)
        self.players = n
        self.starting = bool(starting)
        self._hands = masks
        self._initial = tuple(masks)
        self._played = [False] * n
        self._out = [False] * n
        self._places: list[int | None] = [None] * n
        self._top = 0
        self._bottom = n - 1
        self._frozen: list[int] = []
        self._freeze_judged = False
        self._locked = 0
        self._table: Combo | None = None
        self._table_seat: int | None = None
        self._chain: list[tuple[int, int, int, bool]] = []
        self._chops: list[int] = []
        # (seat, mask or None, offer or None): plain tuples, MoveRecords only when read
        self._moves: list[tuple[int, int | None, str | None]] = []
        self._payments: list[Payment] = []
        self._passed_with_play = [False] * n
        self._last_pass_with_play: int | None = None
        self._over = False
        self._instant_winner: int | None = None
        self._instant_kind: str | None = None
        self._tied: tuple[int, ...] = ()
        self._offer: str | None = None
        self._offer_queue: list[int] = []
        self._offer_origin: int | None = None
        self._offer_combo: Combo | None = None
        self._last_stealer: int | None = None
        self._first_card_bit = 0
        self._opening: int | None = None
        self._legal: LegalPlays | None = None
        self._emp3 = [False] * n
        self._emp6 = [False] * n
        self._split3 = [False] * n
        self._split6 = [False] * n
        self._left_holding: int | None = None
        self._blind_holders: tuple[int, ...] = ()
        self._split_any = False  # Huế split bombs are possible in this game
        self._like = opts.like_beats_like
        self._ootc = opts.out_of_turn_categories
        self._den_bai: int | None = None
        self._end_reason: str | None = None
        self._next_leader: int | None = None
        self._next_starting = False

        if self.starting:
            dealt = seen
            start_bit = 1 << opts.start_card
            if not dealt & start_bit:
                start_bit = dealt & -dealt  # the weakest dealt card (§4 gap)
            lead = next(s for s in range(n) if masks[s] & start_bit)
            self._first_card_bit = start_bit
            self._opening = start_bit.bit_length() - 1
        else:
            if leader is None:
                lead = 0
            elif isinstance(leader, int) and not isinstance(leader, bool) and 0 <= leader < n:
                lead = leader
            else:
                raise ValueError(f"leader must be a seat 0..{n - 1}, got {leader!r}")
        self.leader = lead
        self._to_move = lead  # meaningful while the game is not over (see ``to_move``)

        if all(m.bit_count() == 13 for m in masks):
            names = opts.starting_instant_wins if self.starting else opts.other_instant_wins
            for k in range(n):
                s = (lead + k) % n
                kind = instant_win_kind(masks[s], names)
                if kind is not None:
                    self._end_instant_win(s, kind)
                    return
        if self.starting and opts.split_bombs:
            self._split_any = True
            for s in range(n):
                counts = [((masks[s] >> (4 * r)) & 15).bit_count() for r in range(4)]
                self._split3[s] = counts[0] == 4
                self._split6[s] = min(counts) >= 2
        if not self.starting and opts.steal_lead:
            self._begin_steal()

    @classmethod
    def from_seed(cls, seed: str, players: int, preset: str = "south", starting: bool = True,
                  leader: object = None, options: Options | dict[str, Any] | None = None) -> Game:
        """A game dealt by the portable ``tienlen-deal-v1`` algorithm; the seed is recorded."""
        return cls(deal(seed, players), preset=preset, starting=starting, leader=leader,
                   options=options, seed=seed)

    # ------------------------------------------------------------------ public state
    @property
    def to_move(self) -> int | None:
        return None if self._over else self._to_move

    @property
    def is_over(self) -> bool:
        return self._over

    @property
    def offer(self) -> str | None:
        return None if self._over else self._offer

    @property
    def can_pass(self) -> bool:
        if self._over:
            return False
        return self._offer is not None or self._table is not None

    @property
    def hands(self) -> list[list[Card]]:
        return [cards_of_mask(m) for m in self._hands]

    @property
    def hand_masks(self) -> tuple[int, ...]:
        """Each seat's cards as a 52-bit set (bit i is card index i): ``hands`` without
        building cards, for simulations and encoders."""
        return tuple(self._hands)

    @property
    def initial_hands(self) -> list[list[Card]]:
        return [cards_of_mask(m) for m in self._initial]

    @property
    def initial_masks(self) -> tuple[int, ...]:
        """The hands this game started from, as 52-bit sets."""
        return self._initial

    @property
    def undealt(self) -> list[Card]:
        """The cards nobody was dealt (with fewer than four players), ascending."""
        dealt = 0
        for m in self._initial:
            dealt |= m
        return cards_of_mask(((1 << 52) - 1) & ~dealt)

    @property
    def card_counts(self) -> list[int]:
        return [m.bit_count() for m in self._hands]

    @property
    def table(self) -> Combination | None:
        return None if self._table is None else Combination(self._table)

    @property
    def table_seat(self) -> int | None:
        return self._table_seat

    @property
    def table_key(self) -> tuple[int, int] | None:
        """A cheap, hashable handle on the play to beat: (kind code, 52-bit card set), or
        None while the table is clear. For callers that cache something per table (the
        referee encodes it once per distinct play) without building a Combination."""
        table = self._table
        return None if table is None else (table[0], table[3])

    @property
    def locked_out(self) -> tuple[int, ...]:
        return tuple(s for s in range(self.players) if self._locked >> s & 1)

    @property
    def finishing_order(self) -> list[int]:
        """Seats by place so far (1st first); complete once the game is over."""
        if self._over:
            return [s for s in self._places if s is not None]
        return [s for s in self._places[: self._top] if s is not None]

    @property
    def places(self) -> list[int | None]:
        """Seat per place (index 0 = 1st); None for places not decided yet."""
        return list(self._places)

    @property
    def tied(self) -> tuple[int, ...]:
        """Seats that share last place (instant win, blind three); empty otherwise."""
        return self._tied

    @property
    def points(self) -> list[int]:
        pts = [0] * self.players
        for p in self._payments:
            pts[p["from"]] -= p["points"]
            pts[p["to"]] += p["points"]
        return pts

    @property
    def payments(self) -> list[dict[str, Any]]:
        return [dict(p) for p in self._payments]

    @property
    def instant_winner(self) -> int | None:
        return self._instant_winner

    @property
    def instant_win_kind(self) -> str | None:
        return self._instant_kind

    @property
    def frozen(self) -> list[int]:
        return list(self._frozen)

    @property
    def den_bai(self) -> int | None:
        """The seat that paid for the table (§6.3), if any."""
        return self._den_bai

    @property
    def end_reason(self) -> str | None:
        return self._end_reason

    @property
    def next_leader(self) -> int | None:
        return self._next_leader

    @property
    def next_starting(self) -> bool:
        return self._next_starting

    @property
    def history(self) -> list[dict[str, Any]]:
        """Every move as in the replay (declined offers included: see ``view`` for a seat's)."""
        return [move_dict(mv) for mv in self._moves]

    @property
    def moves(self) -> tuple[MoveRecord, ...]:
        """Every move so far as ``MoveRecord(seat, mask, offer)`` (mask None for a pass or a
        declined offer): ``history`` without building dicts."""
        return tuple([MoveRecord(*mv) for mv in self._moves])

    @property
    def move_count(self) -> int:
        """How many moves the log holds (``len(moves)`` without building them)."""
        return len(self._moves)

    def moves_since(self, start: int) -> tuple[MoveRecord, ...]:
        """The moves of the log from index ``start`` on: for readers that keep what they
        already saw (the log only grows), so each move is read once."""
        if start < 0:
            raise ValueError(f"start must be 0 or more, got {start}")
        return tuple([MoveRecord(*mv) for mv in self._moves[start:]])

    @property
    def opening_card(self) -> int | None:
        """The index of the card the first play of a starting game must contain: the
        preset's start card, or the weakest dealt card when that was not dealt (2-3
        players); None in a game that is not a starting game. Public from the deal on:
        the referee announces it in GameStart."""
        return self._opening

    @property
    def chops(self) -> tuple[int, ...]:
        """Indices (into ``moves``/``history``) of the plays that chopped (§5)."""
        return tuple(self._chops)

    # ------------------------------------------------------------------ legal plays
    def legal_plays(self) -> LegalPlays:
        """Every legal play now (distinct card sets, chops included); pass: ``can_pass``."""
        legal = self._legal
        if legal is None:
            table = self._table
            if (table is not None and table[0] == SINGLE and table[2] < 48
                    and self._offer is None and not self._split_any and not self._over):
                # the commonest case, inlined: higher single cards
                key = table[2] + 1
                m = (self._hands[self._to_move] >> key) << key
                if self._like:
                    m &= SUIT_MASKS[table[2] & 3]
                legal = LegalPlays.single_group((SINGLE, 1, m, -1, m.bit_count()))
            else:
                legal = LegalPlays([]) if self._over else LegalPlays(self._groups(self._to_move))
            self._legal = legal
        return legal

    def _groups(self, s: int) -> list[Group]:
        hand = self._hands[s]
        offer = self._offer
        table = self._table
        if offer == STEAL_LEAD:
            above = self._offer_combo[2] if self._offer_combo is not None else -1
            return three_pair_groups(hand, self.options, above)
        if offer == OUT_OF_TURN_CHOP and table is not None:
            return ps4_chop_groups(hand, table, self.options)
        if table is None:
            groups = lead_groups(hand, self.options)
            if self._first_card_bit:
                groups = restrict_to_card(groups, self._first_card_bit)
        else:
            groups = answer_groups(hand, table, self.options)
        if self._emp3[s] or self._emp6[s]:
            groups = self._split_bomb_groups(s, groups)
        return groups

    def _split_bomb_groups(self, s: int, groups: list[Group]) -> list[Group]:
        """Huế split bombs: 3S alone is four 3s; two 6s (once) are the four-pair sequence."""
        hand = self._hands[s]
        table = self._table
        out: list[Group] = []
        for group in groups:
            kind, size, factors, key, count = group
            flat = flat_masks(group)
            if kind == SINGLE and self._emp3[s] and flat is not None:
                masks = [m for m in flat if m != 1]
                factors, count = [masks], len(masks)
            elif kind == PAIR and self._emp6[s] and flat is not None:
                masks = [m for m in flat if m & SIXES_MASK != m]
                factors, count = [masks], len(masks)
            if count:
                out.append((kind, size, factors, key, count))
        if self._emp3[s] and hand & 1:
            combo = (FOUR_OF_A_KIND, 4, 3, 1)
            if table is None or beat_kind(table, combo, self.options) != NOT_BEAT:
                out.append((FOUR_OF_A_KIND, 4, [[1]], 3, 1))
        if self._emp6[s]:
            sixes = (hand >> 12) & 15
            virtual = []
            for p in NIB_PAIRS[sixes]:
                m = p << 12
                combo = (PAIR_SEQUENCE, 8, m.bit_length() - 1, m)
                if table is None or beat_kind(table, combo, self.options) != NOT_BEAT:
                    virtual.append(m)
            if virtual:
                out.append((PAIR_SEQUENCE, 8, [virtual], -1, len(virtual)))
        return out

    def _classify(self, s: int, m: int) -> Combo | None:
        if self._emp3[s] and m == 1:
            return (FOUR_OF_A_KIND, 4, 3, 1)
        combo = classify_mask(m, self.options)
        if self._emp6[s] and combo is not None and combo[0] == PAIR and m & SIXES_MASK == m:
            return (PAIR_SEQUENCE, 8, combo[2], m)
        return combo

    # ------------------------------------------------------------------ moves
    def _check_turn(self, seat: object) -> int:
        if self._over:
            raise IllegalMove("game_over", "the game is over")
        s = self._to_move
        if seat is not None and seat != s:
            if not isinstance(seat, int) or isinstance(seat, bool):
                raise IllegalMove("not_your_turn", f"no seat {seat!r}; seats are integers")
            if 0 <= seat < self.players and self._locked >> seat & 1 and self._offer is None:
                raise IllegalMove("locked_out", "you passed this round")
            raise IllegalMove("not_your_turn", f"it is seat {s}'s turn, not seat {seat}'s")
        return s

    def play(self, cards: Iterable[Card | str | int] | str | Combination,
             seat: object = None) -> None:
        """Play cards for the seat to move; an illegal play raises IllegalMove, changes nothing.

        ``seat`` (optional) names who is playing, so a move from the wrong seat is refused
        instead of being applied to the seat whose turn it is.
        """
        s = self._to_move if seat is None and not self._over else self._check_turn(seat)
        source = cards.cards if isinstance(cards, Combination) else cards
        m = 0
        n = -1
        if isinstance(source, list):  # the usual case: a list of Card (e.g. a legal play)
            n = 0
            for c in source:
                if not isinstance(c, Card):
                    n = -1
                    break
                m |= c.bit
                n += 1
        if n < 0:
            try:
                parsed = parse_cards(source)
            except ValueError as exc:
                raise IllegalMove("unknown_card", str(exc)) from None
            except TypeError:
                raise IllegalMove("invalid_combination",
                                  f"a play is a list of cards, got {source!r}") from None
            m = 0
            for c in parsed:
                m |= c.bit
            n = len(parsed)
            source = parsed
        legal = self._legal
        combo = legal.issued.get(m) if legal is not None else None
        if combo is None or n != m.bit_count():
            combo = self._validate(s, m, n, source)
        self._apply_play(s, combo)

    def _validate(self, s: int, m: int, n: int, cards: Iterable[Card | str | int] | str) -> Combo:
        opts = self.options
        if n == 0:
            raise IllegalMove("invalid_combination", "a play needs at least one card")
        if m.bit_count() != n:
            seen = 0
            for c in parse_cards(cards):
                if seen & c.bit:
                    raise IllegalMove("duplicate_card", f"card {c} is named twice")
                seen |= c.bit
        missing = m & ~self._hands[s]
        if missing:
            low = missing & -missing
            raise IllegalMove("not_in_hand",
                              f"card {DECK[low.bit_length() - 1]} not in your hand")
        combo = self._classify(s, m)
        if combo is None:
            raise IllegalMove("invalid_combination", f"{_text(m)} is not a valid combination")
        if self._offer == STEAL_LEAD:
            above = self._offer_combo
            if combo[0] != PAIR_SEQUENCE or combo[1] != 6 or (
                    above is not None and combo[2] <= above[2]):
                want = "a three-pair sequence" if above is None else \
                    f"a three-pair sequence higher than {_text(above[3])}"
                raise IllegalMove("not_offered",
                                  f"{_text(m)} is not offered: you may only steal the lead "
                                  f"with {want}, or decline")
            return combo
        if self._offer == OUT_OF_TURN_CHOP:
            table = self._table
            assert table is not None  # an out-of-turn chop answers a play on the table
            if category(combo) != 5 or beat_kind(table, combo, opts) != CHOP:
                raise IllegalMove("not_offered",
                                  f"{_text(m)} is not offered: only a pair sequence of 4+ "
                                  f"pairs that chops {_text(table[3])} may be played "
                                  f"out of turn, or decline")
            return combo
        if self._first_card_bit and not m & self._first_card_bit:
            card = DECK[self._first_card_bit.bit_length() - 1]
            raise IllegalMove("must_contain_start_card", f"the first play must contain {card}")
        table = self._table
        if table is not None and beat_kind(table, combo, opts) == NOT_BEAT:
            raise IllegalMove("does_not_beat", f"{_text(m)} does not beat {_text(table[3])}")
        return combo

    def _apply_play(self, s: int, combo: Combo) -> None:
        opts = self.options
        m = combo[3]
        self._legal = None
        self._hands[s] ^= m
        offer = self._offer
        self._moves.append((s, m, offer))
        first_of_seat = not self._played[s]
        if first_of_seat:
            self._played[s] = True
        pass_with_play = self._last_pass_with_play
        self._last_pass_with_play = None
        if self._first_card_bit:
            self._first_card_bit = 0
        if self._split_any:
            if first_of_seat and (self._split3[s] or self._split6[s]):
                self._check_split_bombs(s, combo)
            if self._emp6[s] and combo[0] == PAIR_SEQUENCE and combo[1] == 8 and \
                    m & SIXES_MASK == m:
                self._emp6[s] = False  # the empowered sixes are used once

        if offer == STEAL_LEAD:
            self._steal_accepted(s, combo)
            return

        table = self._table
        if (table is not None and (table[2] >= 48 or table[0] >= PAIR_SEQUENCE)
                and beat_kind(table, combo, opts) == CHOP):
            ts = self._table_seat
            assert ts is not None
            self._chain.append((ts, chop_value(table, opts), s, self._hands[ts] == 0))
            self._chops.append(len(self._moves) - 1)
        self._table = combo
        self._table_seat = s
        if not self._hands[s]:
            if opts.den_ca_lang and pass_with_play is not None and pass_with_play != s:
                for t in range(self.players):
                    if t != pass_with_play:
                        self._pay(pass_with_play, t, opts.den_ca_lang_points, "den_ca_lang")
            self._player_out(s, combo)
            if self._over:
                return
        if self._ootc and category(combo) in self._ootc:
            queue = self._chop_offer_queue(s, combo)
            if queue:
                self._offer = OUT_OF_TURN_CHOP
                self._offer_origin = s
                self._to_move = queue[0]
                self._offer_queue = queue[1:]
                return
        self._offer = None
        self._advance(s)

    def pass_turn(self, seat: object = None) -> None:
        """Pass (locks the seat out of the round), or decline the offer being made."""
        s = self._to_move if seat is None and not self._over else self._check_turn(seat)
        if self._offer is not None:
            self._legal = None
            self._moves.append((s, None, self._offer))
            self._next_offer()
            return
        if self._table is None:
            raise IllegalMove("cannot_pass", "the leader cannot pass")
        legal = self._legal
        holding = (legal._n if legal is not None else len(self.legal_plays())) > 0
        self._legal = None
        self._moves.append((s, None, None))
        if holding:
            self._passed_with_play[s] = True
            self._last_pass_with_play = s
        else:
            self._last_pass_with_play = None
        self._locked |= 1 << s
        self._advance(s)

    # ------------------------------------------------------------------ turn order
    def _advance(self, s: int) -> None:
        """Give the turn to the next seat that may move, or end the round."""
        ts = self._table_seat
        out = self._out
        locked = self._locked
        for t in _AFTER[self.players][s]:
            if t == ts and not out[t]:
                self._new_round(t)
                return
            if out[t] or locked >> t & 1:
                continue
            self._to_move = t
            return
        # Nobody may answer a player who went out: hưởng sái.
        self._new_round(self._next_holder(ts if ts is not None else s))

    def _next_holder(self, seat: int) -> int:
        n = self.players
        for k in range(1, n + 1):
            t = (seat + k) % n
            if not self._out[t]:
                return t
        return seat

    def _new_round(self, leader: int) -> None:
        if self._chain:
            self._settle_chain()
        self._table = None
        self._table_seat = None
        self._locked = 0
        self._to_move = leader

    def _settle_chain(self) -> None:
        chopped, _value, chopper, went_out = self._chain[-1]
        total = sum(v for _c, v, _p, _w in self._chain)
        self._chain = []
        if went_out and self.options.went_out_exception:
            return
        self._pay(chopped, chopper, total, "chop")

    def _pay(self, payer: int, payee: int, points: int, reason: str) -> None:
        if points and payer != payee:
            self._payments.append({"from": payer, "to": payee, "points": points,
                                   "reason": reason})

    # ------------------------------------------------------------------ offers
    def _chop_offer_queue(self, s: int, combo: Combo) -> list[int]:
        queue = []
        n = self.players
        for k in range(1, n):
            t = (s + k) % n
            if self._out[t]:
                continue
            hand = self._hands[t]
            if may_hold_four_pairs(hand) and ps4_chop_groups(hand, combo, self.options):
                queue.append(t)
        return queue

    def _steal_queue(self, after: int, above: int) -> list[int]:
        queue = []
        n = self.players
        for k in range(1, n):
            t = (after + k) % n
            if self._out[t]:
                continue
            if three_pair_groups(self._hands[t], self.options, above):
                queue.append(t)
        return queue

    def _begin_steal(self) -> None:
        queue = self._steal_queue(self.leader, -1)
        if queue:
            self._offer = STEAL_LEAD
            self._offer_combo = None
            self._to_move = queue[0]
            self._offer_queue = queue[1:]

    def _steal_accepted(self, s: int, combo: Combo) -> None:
        self._last_stealer = s
        self._offer_combo = combo
        if not self._hands[s]:
            self._player_out(s, combo)
            if self._over:
                return
        queue = self._steal_queue(s, combo[2])
        if queue:
            self._to_move = queue[0]
            self._offer_queue = queue[1:]
        else:
            self._end_steal()

    def _end_steal(self) -> None:
        self._offer = None
        self._offer_combo = None
        lead = self._last_stealer if self._last_stealer is not None else self.leader
        if self._out[lead]:
            lead = self._next_holder(lead)
        self._new_round(lead)

    def _next_offer(self) -> None:
        queue = self._offer_queue
        while queue:
            t = queue.pop(0)
            if not self._out[t]:
                self._to_move = t
                return
        if self._offer == STEAL_LEAD:
            self._end_steal()
        else:
            self._offer = None
            self._advance(self._offer_origin)  # type: ignore[arg-type]

    # ------------------------------------------------------------------ Huế split bombs
    def _check_split_bombs(self, s: int, combo: Combo) -> None:
        m = combo[3]
        if self._split3[s] and m & 2 and not m & 1:
            self._emp3[s] = True
        if (self._split6[s] and combo[0] == PAIR_SEQUENCE and combo[1] == 6
                and combo[2] >> 2 == 2 and m & 2
                and ((self._hands[s] >> 12) & 15).bit_count() >= 2):
            self._emp6[s] = True
        self._split3[s] = self._split6[s] = False

    # ------------------------------------------------------------------ going out, the end
    def _place_top(self, s: int) -> int:
        pos = self._top
        self._places[pos] = s
        self._top += 1
        self._out[s] = True
        return pos

    def _player_out(self, s: int, combo: Combo) -> None:
        opts = self.options
        if opts.no_finish_on_two and combo[3] & TWOS_MASK:
            self._places[self._bottom] = s
            self._bottom -= 1
            self._out[s] = True
        else:
            pos = self._place_top(s)
            if not self._freeze_judged:
                self._judge_freezing(s)
            if opts.blind_three and combo[3] == 1 and pos <= 1:
                self._end_blind_three(s, first=pos == 0)
                return
        remaining = [t for t in range(self.players) if not self._out[t]]
        if len(remaining) <= 1:
            if remaining:
                self._left_holding = remaining[0]
                self._place_top(remaining[0])
            self._end_game("finished")

    def _judge_freezing(self, winner: int) -> None:
        self._freeze_judged = True
        n = self.players
        cands = [(winner + k) % n for k in range(1, n)]
        cands = [t for t in cands if not self._out[t] and not self._played[t]]
        if self.options.freeze_mode == "single_only" and len(cands) >= 2:
            cands = []
        if not cands:
            return
        first = self._bottom - len(cands) + 1
        for i, t in enumerate(cands):
            self._places[first + i] = t
            self._out[t] = True
        self._bottom = first - 1
        self._frozen = cands

    def _end_blind_three(self, s: int, first: bool) -> None:
        n = self.players
        holders = [(s + k) % n for k in range(1, n)]
        holders = [t for t in holders if not self._out[t]]
        for t in holders:
            self._place_top(t)
        if first:
            self._tied = tuple(t for t in self._places[1:] if t is not None)
        self._blind_holders = tuple(holders)
        self._end_game("blind_three")

    def _end_instant_win(self, s: int, kind: str) -> None:
        self._instant_winner = s
        self._instant_kind = kind
        n = self.players
        order = [s] + [(s + k) % n for k in range(1, n)]
        self._places = list(order)
        self._top = n
        self._out = [True] * n
        self._tied = tuple(order[1:])
        self._payments += settle_instant_win(self.options, s, tuple(self._hands))
        self._over = True
        self._end_reason = "instant_win"
        self._next_leader = None
        self._next_starting = True

    def _end_game(self, reason: str) -> None:
        if self._chain:
            self._settle_chain()
        self._over = True
        self._end_reason = reason
        self._legal = None
        self._offer = None
        places = tuple(p for p in self._places if p is not None)
        assert len(places) == self.players, "every place is filled when a game ends"
        result = settle_game(EndOfGame(
            options=self.options,
            places=places,
            frozen=tuple(self._frozen),
            hands=tuple(self._hands),
            initial=self._initial,
            empowered=tuple(zip(self._emp3, self._emp6, strict=True)),
            passed_with_play=tuple(self._passed_with_play),
            left_holding=self._left_holding,
            end_reason=reason,
            blind_holders=self._blind_holders,
        ))
        self._payments += result.payments
        self._den_bai = result.den_bai
        self._next_leader = result.next_leader
        self._next_starting = False

    # ------------------------------------------------------------------ copies
    def copy(self) -> Game:
        """An independent game at the same position: moves played on one never change
        the other. Much cheaper than dealing and replaying the history (a search tries
        several moves from one position), and it works for the compiled build too, whose
        objects cannot be pickled or deep-copied."""
        g = Game.__new__(Game)
        g.preset = self.preset
        g.options = self.options
        g.seed = self.seed
        g.players = self.players
        g.starting = self.starting
        g.leader = self.leader
        g._to_move = self._to_move
        g._hands = self._hands[:]
        g._initial = self._initial
        g._played = self._played[:]
        g._out = self._out[:]
        g._places = self._places[:]
        g._top = self._top
        g._bottom = self._bottom
        g._frozen = self._frozen[:]
        g._freeze_judged = self._freeze_judged
        g._locked = self._locked
        g._table = self._table
        g._table_seat = self._table_seat
        g._chain = self._chain[:]
        g._chops = self._chops[:]
        g._moves = self._moves[:]
        g._payments = self._payments[:]  # payment dicts are never changed once made
        g._passed_with_play = self._passed_with_play[:]
        g._last_pass_with_play = self._last_pass_with_play
        g._over = self._over
        g._instant_winner = self._instant_winner
        g._instant_kind = self._instant_kind
        g._tied = self._tied
        g._offer = self._offer
        g._offer_queue = self._offer_queue[:]
        g._offer_origin = self._offer_origin
        g._offer_combo = self._offer_combo
        g._last_stealer = self._last_stealer
        g._first_card_bit = self._first_card_bit
        g._opening = self._opening
        g._legal = self._legal  # the same position's plays: a snapshot, safe to share
        g._emp3 = self._emp3[:]
        g._emp6 = self._emp6[:]
        g._split3 = self._split3[:]
        g._split6 = self._split6[:]
        g._left_holding = self._left_holding
        g._blind_holders = self._blind_holders
        g._split_any = self._split_any
        g._like = self._like
        g._ootc = self._ootc
        g._den_bai = self._den_bai
        g._end_reason = self._end_reason
        g._next_leader = self._next_leader
        g._next_starting = self._next_starting
        return g

    # ------------------------------------------------------------------ views, replays
    def view(self, seat: object) -> SeatView:
        """What ``seat`` may know now (docs/rules.md §2): its own hand and the public game."""
        return seat_view(self, seat)

    def replay(self) -> dict[str, Any]:
        """The JSON replay record (schema ``tienlen.replay/1``)."""
        return game_replay(self)

    def __repr__(self) -> str:
        state = "over" if self._over else f"to_move={self._to_move}"
        return f"<Game {self.preset} players={self.players} {state}>"
