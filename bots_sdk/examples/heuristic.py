"""A hand-planning bot: the strongest example, and the referee's strongest house bot.

It splits its hand into the cheapest set of combinations (a small exact search over rank
counts), leads its weakest group, follows only when that does not break its plan, keeps
bombs for chopping 2s, counts the cards seen to know which of its plays cannot be beaten,
and turns aggressive when an opponent is about to go out (or when it risks being frozen).
It is deliberately readable rather than clever: a starting point for authors.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, ClassVar

from bots_sdk.bot import Bot, Move, TableInfo, View
from bots_sdk.cards import DECK, Card, parse_cards

TWO = 12  # rank index of the 2 (heo)
Counts = tuple[int, ...]


def _single_cost(r: int) -> float:
    x = r / 12
    return 1.0 - 0.9 * x * x


def _pair_cost(r: int) -> float:
    return 1.0 - 0.95 * math.pow(r / 12, 1.5)


def _triple_cost(r: int) -> float:
    return 0.55 - 0.4 * r / 12


def _straight_cost(top: int, length: int) -> float:
    return max(0.15, 0.95 - 0.08 * (length - 3) - 0.35 * top / 11)


BOMB_COST = 0.05


# The caps: a full cache is memory a process keeps for good (~20 MB here, ~47 MB at the
# 200,000 this was, which a worker computing baselines filled only after ~1,500 deals, so
# its RSS rose for most of the soak's 20 minutes; now full after ~450). The price: hit
# rate 68.4 % against 70.9 %, ~8 % more CPU per baseline once full (benchmarks/README.md,
# "Soak", leak_bench.py caches).
@lru_cache(maxsize=100_000)
def plan_cost(counts: Counts, sequences: bool = True) -> float:
    """Cheapest cost of playing out a hand given as 13 rank counts.

    Each group costs about "how unlikely it is to win its round"; a low single costs nearly
    1, a 2 or a bomb almost nothing. The lowest rank present must start some group, which
    keeps the search exact and small. `sequences=False` leaves out straights and pair
    sequences (the `north` preset only has one-suit straights, which rank counts cannot
    see, and no pair sequences)."""
    r = next((i for i, c in enumerate(counts) if c), -1)
    if r < 0:
        return 0.0
    c = counts[r]
    best = float("inf")
    lst = list(counts)

    def take(ranks: Sequence[int], n: int, cost: float) -> None:
        nonlocal best
        if cost >= best:
            return
        for x in ranks:
            lst[x] -= n
        total = cost + plan_cost(tuple(lst), sequences)
        for x in ranks:
            lst[x] += n
        if total < best:
            best = total

    take((r,), 1, _single_cost(r))
    if c >= 2:
        take((r,), 2, _pair_cost(r))
    if c >= 3:
        take((r,), 3, _triple_cost(r))
    if c == 4:
        take((r,), 4, BOMB_COST)
    if r < TWO and sequences:
        top = r
        while top + 1 < TWO and counts[top + 1] >= 1:
            top += 1
        for end in range(r + 2, top + 1):
            take(range(r, end + 1), 1, _straight_cost(end, end - r + 1))
        if c >= 2:
            top = r
            while top + 1 < TWO and counts[top + 1] >= 2:
                top += 1
            for end in range(r + 2, top + 1):
                take(range(r, end + 1), 2, BOMB_COST)
    return best


def rank_counts(cards: Sequence[Card]) -> list[int]:
    counts = [0] * 13
    for c in cards:
        counts[c.rank] += 1
    return counts


_POP = tuple(n.bit_count() for n in range(16))
TWOS_MASK = 0xF << (4 * TWO)


@dataclass(frozen=True, slots=True)
class Rules:
    """The few rule options the heuristic plays differently for."""

    no_two_finish: bool = False  # north: going out on a 2 ranks you last
    sequences: bool = True  # rank-count plans may use straights and pair sequences
    den_ca_lang: bool = False  # north: passing a playable hand before someone goes out pays

    @classmethod
    def of(cls, options: dict[str, Any]) -> Rules:
        return cls(no_two_finish=bool(options.get("no_finish_on_two")),
                   sequences=bool(options.get("pair_sequences", True))
                   and not options.get("like_beats_like"),
                   den_ca_lang=bool(options.get("den_ca_lang")))


@lru_cache(maxsize=1 << 14)  # 16,384: hit rate 97.5 % against 97.6 % at 65,536 (leak_bench.py caches)
def _shape(m: int) -> tuple[tuple[int, ...], tuple[int, ...], int, bool, bool]:
    """A play's (sorted ranks, rank counts, top rank, single rank, bomb), cached by card set:
    the same plays come back all game long, and in every simulated game."""
    ranks: list[int] = []
    counts = [0] * 13
    r = 0
    x = m
    while x:
        k = _POP[x & 15]
        if k:
            ranks.extend([r] * k)
            counts[r] = k
        x >>= 4
        r += 1
    n = len(ranks)
    distinct = [q for q in range(13) if counts[q]]
    single = len(distinct) == 1
    bomb = (n == 4 and single) or (
        n >= 6 and n % 2 == 0 and all(counts[q] == 2 for q in distinct)
        and distinct[-1] - distinct[0] == len(distinct) - 1)
    return tuple(ranks), tuple(counts), ranks[-1], single, bomb


def rank_plays(masks: Sequence[int], hand: int, *, seat: int, counts: Sequence[int],
               unseen: Sequence[int], leading: bool, table: int, can_pass: bool,
               never_played: bool, rules: Rules) -> list[tuple[float, int | None]]:
    """The heuristic on integers: every move it weighs, best first, as (score, card set) with
    None for the pass (lower scores are better). ``masks``: the legal plays as 52-bit card
    sets, in the engine's order; ``hand``: own cards; ``counts``: cards left per seat;
    ``unseen``: per rank, cards neither in the hand nor played; ``table``: the cards to
    beat (0 when there are none); ``leading``: leading a round (not during an offer).
    One definition for the bot and for simulations (the search bot rolls games out with it).
    """
    if not masks:
        return []
    mine = [0] * 13
    x = hand
    r = 0
    while x:
        mine[r] = _POP[x & 15]
        x >>= 4
        r += 1
    hand_size = hand.bit_count()
    base = plan_cost(tuple(mine), rules.sequences)
    danger = min((k for s, k in enumerate(counts) if s != seat and k > 0), default=13)
    table_has_two = bool(table & TWOS_MASK)

    # One candidate per rank signature (suits do not change the plan): the weakest suits
    # are spent first, keeping the strong ones.
    best_by_sig: dict[tuple[int, ...], int] = {}
    for m in masks:
        sig = _shape(m)[0]
        cur = best_by_sig.get(sig)
        if cur is None or m.bit_length() < cur.bit_length():
            best_by_sig[sig] = m

    scored: list[tuple[float, int, int | None]] = []
    for m in best_by_sig.values():
        _sig, used, top, single, bomb = _shape(m)
        n = m.bit_count()
        has_two = bool(m & TWOS_MASK)
        if n == hand_size and not (rules.no_two_finish and has_two):
            scored.append((float("-inf"), 1, m))  # goes out
            continue
        rest = [a - b for a, b in zip(mine, used, strict=True)]
        score = plan_cost(tuple(rest), rules.sequences) - base
        # Boss: no unseen cards make a higher play of this shape (ignoring suits within
        # the top rank and bombs, which counting cannot rule out); a straight or pair
        # sequence ending at A.
        is_boss = all(unseen[q] < n for q in range(top + 1, 13)) if single else top >= 11
        if rules.no_two_finish and has_two:
            # Shed 2s while other cards remain; going out on one ranks you last.
            score += 5.0 if n == hand_size else -0.6
            has_two = False  # so the keep-your-2s rules below do not apply
        if leading:
            score += 0.02 * top / 12 - 0.01 * n
            if n == 1 and danger == 1 and not is_boss:
                score += 3.0 + (12 - top) * 0.01 - 0.01 * (m.bit_length() - 1) / 51
            if n == 2 and danger == 2 and not is_boss:
                score += 1.0
            if (has_two or bomb) and len(best_by_sig) > 1 and hand_size > 4:
                score += 0.5
            # Two groups left and this one cannot be beaten: take it, lead the last.
            if is_boss and plan_cost(tuple(rest), rules.sequences) <= 1.0 and _one_group(rest):
                score -= 2.0
        else:
            if bomb and table_has_two:
                score -= 1.5  # a chop earns points and stops their 2
            elif bomb and danger > 2:
                score += 0.6  # keep bombs for 2s
            if has_two and not table_has_two and danger > 3 and hand_size > 5:
                score += 0.35
            if is_boss:
                score -= 0.15  # winning the round gives the lead
            if danger <= 2:
                score -= 0.6
            if is_boss and _one_group(rest):
                score -= 2.0
        scored.append((score, 1, m))

    if not leading and can_pass:
        pass_score = 0.0
        if never_played and danger <= 4:
            pass_score += 2.0  # a frozen hand pays double
        if rules.den_ca_lang and _next_can_go_out(seat, counts, table):
            pass_score += 3.0  # north: passing a playable hand before a player goes out pays all
        scored.append((pass_score, 0, None))
    # Stable: among equal scores the pass first, then plays in the order found (the first
    # best play found is the one played).
    scored.sort(key=lambda item: (item[0], item[1]))
    return [(score, m) for score, _tie, m in scored]


def _next_can_go_out(seat: int, counts: Sequence[int], table: int) -> bool:
    """Could the next player to move empty their hand on the current table?"""
    n = len(counts)
    for step in range(1, n):
        s = (seat + step) % n
        if counts[s] > 0:
            return counts[s] <= max(1, table.bit_count())
    return False


class HeuristicBot(Bot):
    name = "heuristic"
    version = "1.1.0"
    threaded = False  # answers in well under a millisecond: play on the event loop
    #: As a house bot at a table with a remote seat, every decision takes this long
    #: (referee_service/house.py, "Pacing"): above its own work, 2 ms of CPU at the 99.9th
    #: percentile, so the time says nothing about its hand.
    house_pace_ms: ClassVar[float] = 5.0

    def __init__(self) -> None:
        self.options: dict[str, Any] | None = None
        self._rules_of: Rules | None = None

    def on_table_start(self, table: TableInfo) -> None:
        self.options = dict(table.options) or None
        self._rules_of = None

    def rules(self, view: View) -> Rules:
        if self._rules_of is None:
            if self.options is None:
                from bots_sdk.rules import PRESETS

                preset = PRESETS.get(view.preset)
                self.options = preset.to_dict() if preset is not None else {}
            self._rules_of = Rules.of(self.options)
        return self._rules_of

    def play(self, view: View) -> Move:
        ranked = self.ranked_moves(view)
        return ranked[0][1] if ranked else None

    def ranked_moves(self, view: View) -> list[tuple[float, tuple[Card, ...] | None]]:
        """Every move it considers, best first, as (score, move); lower scores are better
        and ``None`` is the pass. One play per rank signature (the weakest suits), so this
        is also a short list of sensible candidates for a search bot (examples/search.py).
        Going out scores -inf; empty when there is no legal play (pass)."""
        plays = view.plays
        if not plays:
            return []
        masks_of = getattr(plays, "masks", None)  # the engine's lazy sequence (local arena)
        masks = masks_of() if masks_of is not None else [_mask(p) for p in plays]
        me = view.seat
        hand = _mask(view.hand)
        unseen = [4] * 13
        x = hand
        r = 0
        while x:
            unseen[r] -= _POP[x & 15]
            x >>= 4
            r += 1
        never_played = True
        for m in view.history:
            names = m.get("cards")
            if names:
                if m.get("seat") == me:
                    never_played = False
                for name in names:
                    unseen[_rank_of(name)] -= 1
        table = _mask(view.table_cards)
        ranked = rank_plays(masks, hand, seat=me, counts=view.card_counts, unseen=unseen,
                            leading=view.is_leading and view.offer is None, table=table,
                            can_pass=view.can_pass, never_played=never_played,
                            rules=self.rules(view))
        index = {m: i for i, m in enumerate(masks)}
        return [(score, None if m is None else tuple(plays[index[m]])) for score, m in ranked]


def _mask(cards: Sequence[Card]) -> int:
    m = 0
    for c in cards:
        m |= 1 << c.index
    return m


def _one_group(counts: list[int]) -> bool:
    ranks = [r for r, c in enumerate(counts) if c]
    if not ranks:
        return True
    if len(ranks) == 1:
        return True
    width = {counts[r] for r in ranks}
    consecutive = ranks[-1] - ranks[0] == len(ranks) - 1 and ranks[-1] < TWO
    return consecutive and (width == {1} and len(ranks) >= 3 or width == {2} and len(ranks) >= 3)


_RANK_BY_NAME = {str(c): c.rank for c in DECK}


def _rank_of(card: Card | str | int) -> int:
    """Rank index of a card given as a Card, its name ("10H") or its integer."""
    if isinstance(card, str):
        rank = _RANK_BY_NAME.get(card)
        if rank is not None:
            return rank
        return parse_cards([card])[0].rank
    if isinstance(card, int):
        return card // 4
    return card.rank
