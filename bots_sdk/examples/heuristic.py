"""A hand-planning bot: the strongest example, and the referee's strongest house bot.

It splits its hand into the cheapest set of combinations (a small exact search over rank
counts), leads its weakest group, follows only when that does not break its plan, keeps
bombs for chopping 2s, counts the cards seen to know which of its plays cannot be beaten,
and turns aggressive when an opponent is about to go out (or when it risks being frozen).
It is deliberately readable rather than clever: a starting point for authors.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from bots_sdk.bot import Bot, Move, TableInfo, View
from bots_sdk.cards import DECK, Card, parse_cards

TWO = 12  # rank index of the 2 (heo)
Counts = tuple[int, ...]


def _single_cost(r: int) -> float:
    return 1.0 - 0.9 * (r / 12) ** 2


def _pair_cost(r: int) -> float:
    return 1.0 - 0.95 * (r / 12) ** 1.5


def _triple_cost(r: int) -> float:
    return 0.55 - 0.4 * r / 12


def _straight_cost(top: int, length: int) -> float:
    return max(0.15, 0.95 - 0.08 * (length - 3) - 0.35 * top / 11)


BOMB_COST = 0.05


@lru_cache(maxsize=200_000)
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


def _is_bomb(cards: Sequence[Card]) -> bool:
    n = len(cards)
    ranks = sorted(c.rank for c in cards)
    if n == 4 and ranks[0] == ranks[-1]:
        return True
    if n >= 6 and n % 2 == 0:
        pairs = ranks[0::2]
        return ranks[1::2] == pairs and all(b == a + 1 for a, b in zip(pairs, pairs[1:], strict=False))
    return False


class HeuristicBot(Bot):
    name = "heuristic"
    version = "1.1.0"
    threaded = False  # answers in well under a millisecond: play on the event loop

    def __init__(self) -> None:
        self.options: dict[str, Any] | None = None

    def on_table_start(self, table: TableInfo) -> None:
        self.options = dict(table.options) or None

    def _rules(self, view: View) -> dict[str, Any]:
        if self.options is None:
            from bots_sdk.rules import PRESETS

            preset = PRESETS.get(view.preset)
            self.options = preset.to_dict() if preset is not None else {}
        return self.options

    def play(self, view: View) -> Move:
        ranked = self.ranked_moves(view)
        return ranked[0][1] if ranked else None

    def ranked_moves(self, view: View) -> list[tuple[float, tuple[Card, ...] | None]]:
        """Every move it considers, best first, as (score, move); lower scores are better
        and ``None`` is the pass. One play per rank signature (the weakest suits), so this
        is also a short list of sensible candidates for a search bot (examples/search.py).
        Going out scores -inf; empty when there is no legal play (pass)."""
        plays = view.seat_view.legal_plays
        if not plays:
            return []
        rules = self._rules(view)
        no_two_finish = bool(rules.get("no_finish_on_two"))  # north: going out on a 2 is last
        sequences = bool(rules.get("pair_sequences", True)) and not rules.get("like_beats_like")
        hand = view.hand
        counts = rank_counts(hand)
        base = plan_cost(tuple(counts), sequences)
        me = view.seat
        done = set(view.finished)
        opponents = [
            n for s, n in enumerate(view.card_counts) if s != me and s not in done and n > 0
        ]
        danger = min(opponents, default=13)
        unseen = self._unseen_ranks(view)
        leading = view.is_leading and view.offer is None
        table = view.table
        table_has_two = bool(table) and any(
            _rank_of(c) == TWO for c in (table or {}).get("cards", ())
        )
        never_played = not any(
            m.get("seat") == me and m.get("cards") for m in view.seat_view.history
        )

        # One candidate per rank signature (suits do not change the plan): the weakest
        # suits are spent first, keeping the strong ones.
        best_by_sig: dict[tuple[int, ...], tuple[Card, ...]] = {}
        for p in plays:
            sig = tuple(sorted(c.rank for c in p))
            cur = best_by_sig.get(sig)
            if cur is None or max(p).index < max(cur).index:
                best_by_sig[sig] = tuple(p)

        scored: list[tuple[float, int, tuple[Card, ...] | None]] = []
        for p in best_by_sig.values():
            has_two = any(c.rank == TWO for c in p)
            if len(p) == len(hand) and not (no_two_finish and has_two):
                scored.append((float("-inf"), 1, p))  # goes out
                continue
            rest = counts[:]
            for c in p:
                rest[c.rank] -= 1
            score = plan_cost(tuple(rest), sequences) - base
            is_boss = self._is_boss(p, unseen)
            bomb = _is_bomb(p)
            if no_two_finish and has_two:
                # Shed 2s while other cards remain; going out on one ranks you last.
                score += 5.0 if len(p) == len(hand) else -0.6
                has_two = False  # so the keep-your-2s rules below do not apply
            if leading:
                score += 0.02 * max(p).rank / 12 - 0.01 * len(p)
                if len(p) == 1 and danger == 1 and not is_boss:
                    score += 3.0 + (12 - p[0].rank) * 0.01 - 0.01 * p[0].index / 51
                if len(p) == 2 and danger == 2 and not is_boss:
                    score += 1.0
                if (has_two or bomb) and len(best_by_sig) > 1 and sum(counts) > 4:
                    score += 0.5
                # Two groups left and this one cannot be beaten: take it, lead the last.
                if is_boss and plan_cost(tuple(rest), sequences) <= 1.0 and _one_group(rest):
                    score -= 2.0
            else:
                if bomb and table_has_two:
                    score -= 1.5  # a chop earns points and stops their 2
                elif bomb and danger > 2:
                    score += 0.6  # keep bombs for 2s
                if has_two and not table_has_two and danger > 3 and sum(counts) > 5:
                    score += 0.35
                if is_boss:
                    score -= 0.15  # winning the round gives the lead
                if danger <= 2:
                    score -= 0.6
                if is_boss and _one_group(rest):
                    score -= 2.0
            scored.append((score, 1, p))

        if not (leading or not view.can_pass):
            scored.append((self._pass_score(view, rules, never_played, danger), 0, None))
        # Stable: among equal scores the pass first, then plays in the order found (the
        # first best play found is the one played).
        scored.sort(key=lambda item: (item[0], item[1]))
        return [(score, move) for score, _tie, move in scored]

    def _pass_score(self, view: View, rules: dict[str, Any], never_played: bool,
                    danger: int) -> float:
        pass_score = 0.0
        if never_played and danger <= 4:
            pass_score += 2.0  # a frozen hand pays double
        if rules.get("den_ca_lang") and self._next_can_go_out(view):
            pass_score += 3.0  # north: passing a playable hand before a player goes out pays all
        return pass_score

    @staticmethod
    def _next_can_go_out(view: View) -> bool:
        """Could the next player to move empty their hand on the current table?"""
        counts = view.card_counts
        n = view.players
        for step in range(1, n):
            s = (view.seat + step) % n
            if counts[s] > 0 and s not in view.finished:
                return counts[s] <= max(1, len(view.table_cards))
        return False

    @staticmethod
    def _unseen_ranks(view: View) -> list[int]:
        """Cards per rank not in our hand and not played yet (opponents' or undealt)."""
        unseen = [4] * 13
        for c in view.hand:
            unseen[c.rank] -= 1
        for m in view.seat_view.history:
            for name in m.get("cards") or ():
                unseen[_rank_of(name)] -= 1
        return unseen

    @staticmethod
    def _is_boss(play: Sequence[Card], unseen: list[int]) -> bool:
        """True when no unseen cards can make a higher play of the same shape (ignoring
        suits within the top rank and bombs, which the card count cannot rule out)."""
        n = len(play)
        top = max(c.rank for c in play)
        ranks = {c.rank for c in play}
        if len(ranks) == 1:
            return all(unseen[r] < n for r in range(top + 1, 13))
        return top >= 11  # a straight or pair sequence ending at A


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
