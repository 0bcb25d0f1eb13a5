"""A search bot: determinized Monte-Carlo over the engine, within a time budget per move.

Each move it:

1. asks the heuristic bot for its ranked candidates (one play per rank signature, and the
   pass) and keeps the best few: the prior, and the move played if time runs out;
2. until the budget is spent, deals the hidden cards consistently with what it has seen
   (``bots_sdk.determinize``), and for every candidate plays it on a copy of that deal's
   game (``Game.copy()``) and finishes
   the game with every seat playing the heuristic bot's decisions (``rollout``), scoring
   the points it wins;
3. plays the candidate with the best mean, but only leaves the heuristic's first choice
   when the paired evidence (the same deals for every candidate) is clear.

That is a one-step policy improvement of the heuristic: it plays the move after which the
heuristic does best, judged over deals it cannot tell from the real one. Starting points
for stronger bots: weighting deals by how likely the opponents' moves were (``Determinizer``
samples them uniformly), a tree instead of one level of candidates (information-set MCTS),
a faster rollout for more deals. Settings below; ``TIENLEN_SEARCH_MS`` sets the budget
(default 50 ms of thinking a move).
"""

from __future__ import annotations

import os
import random
import time
from typing import Any, ClassVar

from bots_sdk.bot import Bot, Move, TableInfo, View
from bots_sdk.determinize import Determinizer, InconsistentView
from bots_sdk.examples.heuristic import HeuristicBot, Rules, rank_plays

__all__ = ["SearchBot", "rollout"]

TWOS = 0xF << 48
_RANK_NIBBLES = tuple(0xF << (4 * r) for r in range(13))
_POP = tuple(n.bit_count() for n in range(16))


def _budget_from_env() -> float:
    raw = os.environ.get("TIENLEN_SEARCH_MS", "50")
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"TIENLEN_SEARCH_MS must be a number of milliseconds, got {raw!r}") \
            from None
    if not 0 <= value <= 60_000:
        raise ValueError(f"TIENLEN_SEARCH_MS must be 0..60000, got {raw!r}")
    return value


def _mask(cards: Any) -> int:
    m = 0
    for c in cards:
        m |= 1 << c.index
    return m


def _is_costly(m: int) -> bool:
    """A 2 or a bomb-shaped play (four of a kind or 6+ cards of pairs): worth keeping."""
    if m & TWOS:
        return True
    n = m.bit_count()
    if n == 4:
        return any(m == nib for nib in _RANK_NIBBLES)
    return False


def _broken(m: int, counts: list[int]) -> int:
    """How many pairs or triples of the hand (rank counts) play ``m`` splits."""
    b = 0
    r = 0
    while m:
        nib = m & 15
        if nib:
            c = counts[r]
            if c >= 2 and _POP[nib] < c:
                b += 1
        m >>= 4
        r += 1
    return b


def _policy(game: Any, hands: list[int]) -> int | None:
    """The rollout move of the seat to move: an index into ``legal_plays()``, or None to
    pass. Deliberately cheap (a few microseconds a move): go out when possible; lead the
    longest play that sheds the lowest card; follow with the weakest beat that splits no
    pair or triple, keeping 2s and bombs unless someone is close to going out (then pass
    rather than spend them); decline offers to steal the lead, accept chops. Measured as a
    bot: -0.4 points a game against heuristic, +0.9 against greedy."""
    plays = game.legal_plays()
    n = len(plays)
    if n == 0:
        return None
    s = game.to_move
    hand = hands[s]
    offer = game.offer
    if offer is not None:
        return 0 if offer != "steal_lead" else None
    masks = plays.masks()
    for i in range(n):
        if masks[i] == hand:
            return i
    if game.table_key is None:
        low = hand & -hand
        best = -1
        best_key: tuple[int, int] | None = None
        for i in range(n):
            m = masks[i]
            if m & low:
                key = (m.bit_count(), -m.bit_length())
                if best_key is None or key > best_key:
                    best, best_key = i, key
        if best >= 0:
            return best
        return min(range(n), key=lambda i: masks[i].bit_length())
    counts = game.card_counts
    danger = min((c for t, c in enumerate(counts) if t != s and c), default=13) <= 2 \
        or hand.bit_count() <= 4
    ranks = [_POP[(hand >> (4 * r)) & 15] for r in range(13)]
    best = -1
    best_fkey: tuple[bool, int, int] | None = None
    for i in range(n):
        m = masks[i]
        fkey = (_is_costly(m), 0 if danger else _broken(m, ranks), m.bit_length())
        if best_fkey is None or fkey < best_fkey:
            best, best_fkey = i, fkey
    assert best_fkey is not None
    if best_fkey[0] and not danger and game.can_pass:
        return None
    return best


def _heuristic_move(game: Any, hands: list[int], played: list[int], never: list[bool],
                    rules: Rules) -> int | None:
    """The heuristic bot's move for the seat to move (``rank_plays`` on the game's own
    integers: the same decision the bot makes from its view, without building one)."""
    plays = game.legal_plays()
    if not len(plays):
        return None
    masks = plays.masks()
    s = game.to_move
    hand = hands[s]
    unseen = [4 - k for k in played]
    x = hand
    r = 0
    while x:
        unseen[r] -= _POP[x & 15]
        x >>= 4
        r += 1
    key = game.table_key
    ranked = rank_plays(masks, hand, seat=s, counts=game.card_counts, unseen=unseen,
                        leading=key is None and game.offer is None,
                        table=0 if key is None else key[1], can_pass=game.can_pass,
                        never_played=never[s], rules=rules)
    m = ranked[0][1]
    return None if m is None else masks.index(m)


def rollout(game: Any, rules: Rules | None = None, out_of_time: Any = None,
            policy: str = "heuristic") -> bool:
    """Play ``game`` to its end, every seat with the rollout policy: ``"heuristic"`` (the
    heuristic bot's decisions) or ``"fast"`` (``_policy``, about 2.5 times cheaper and 0.4
    points a game weaker). Returns False if ``out_of_time()`` (asked every 8 moves) said so
    first (the game is left unfinished). ``rules``: the heuristic's rule flags (from the
    game's options by default)."""
    if rules is None:
        rules = Rules.of(game.options.to_dict())
    hands = list(game.hand_masks)
    played = [0] * 13
    never = [True] * game.players
    for move in game.moves:
        if move.mask:
            never[move.seat] = False
            x = move.mask
            r = 0
            while x:
                played[r] += _POP[x & 15]
                x >>= 4
                r += 1
    heuristic = policy == "heuristic"
    steps = 0
    while not game.is_over:
        steps += 1
        if out_of_time is not None and steps % 8 == 0 and out_of_time():
            return False
        s = game.to_move
        i = _heuristic_move(game, hands, played, never, rules) if heuristic \
            else _policy(game, hands)
        if i is None:
            game.pass_turn()
            continue
        plays = game.legal_plays()
        m = plays.mask_at(i)
        game.play(plays[i])
        hands[s] ^= m
        never[s] = False
        r = 0
        while m:
            played[r] += _POP[m & 15]
            m >>= 4
            r += 1
    return True


class SearchBot(Bot):
    name = "search"
    version = "1.0.0"
    #: Thinking time per move in ms (env TIENLEN_SEARCH_MS), counted in CPU time of the
    #: thread running ``play`` (a loaded machine slows the bot down rather than weakening
    #: it); the wall clock of the move clock the referee announces (``view.time_left_ms``)
    #: caps it in every case.
    budget_ms: ClassVar[float] = _budget_from_env()
    #: Candidates searched: the heuristic's best few (the pass included when allowed).
    candidates: ClassVar[int] = 4
    #: How every seat plays in the simulations: "heuristic" or "fast" (see ``rollout``).
    rollout_policy: ClassVar[str] = "heuristic"
    #: How clear the evidence must be to overrule the heuristic's first choice: the paired
    #: mean difference, in standard errors and in points a game.
    confidence: ClassVar[float] = 1.0
    margin: ClassVar[float] = 0.0
    #: Search only once some seat still playing holds at most this many cards (13: always).
    endgame_cards: ClassVar[int] = 13
    #: The referee's house-bot runner plays this bot in a worker process (it is CPU-bound
    #: for ``budget_ms``): see referee_service/house.py.
    house_offload: ClassVar[bool] = True
    #: Of the time the move clock leaves (after the SDK client's margin), the share the
    #: search may use, and a reserve for the last simulation's overrun.
    clock_share: ClassVar[float] = 0.6
    reserve_ms: ClassVar[float] = 5.0
    #: As a house bot at a table with a remote seat, every decision takes its budget plus
    #: this long, whether it had a choice or not (referee_service/house.py, "Pacing"): the
    #: worker's round trip and the heuristic's ranking fit in it.
    house_pace_slack_ms: ClassVar[float] = 20.0
    #: Set by the referee's house runner for each move at a table with a remote seat: the
    #: ``time.monotonic()`` by which ``play`` must return (its answer is held until the
    #: pace anyway), so a busy machine makes the search shallower, never the answer later.
    house_deadline: float | None = None

    def __init__(self, seed: int | str | None = None) -> None:
        self.rng: Any = random if seed is None else random.Random(seed)
        self.options: dict[str, Any] | None = None
        self.prior = HeuristicBot()
        self.stats = {"moves": 0, "searched": 0, "deals": 0, "overruled": 0}

    def on_table_start(self, table: TableInfo) -> None:
        self.options = dict(table.options) or None
        self.prior.on_table_start(table)

    @property
    def house_pace_ms(self) -> float:
        return self.budget_ms + self.house_pace_slack_ms

    def wall_limit_ms(self, view: View) -> float | None:
        """Wall-clock milliseconds this move may take at most, from the move clock the
        referee announces (None without one, as in the local arena): a share of what is
        left once the SDK client's own margin is off (it sends a fallback 30 ms + 10 %
        before the deadline), so a thread descheduled on a busy machine still answers in
        time."""
        left = view.time_left_ms
        if left is None:
            return None
        usable = left - (30 + left / 10)
        return max(0.0, usable * self.clock_share - self.reserve_ms)

    def play(self, view: View) -> Move:
        wall0 = time.perf_counter()
        cpu0 = time.thread_time()
        self.stats["moves"] += 1
        ranked = self.prior.ranked_moves(view)
        if not ranked:
            return None
        cands = [move for _score, move in ranked[: self.candidates]]
        if len(cands) == 1 or ranked[0][0] == float("-inf"):
            return cands[0]
        if min((c for c in view.card_counts if c), default=0) > self.endgame_cards:
            return cands[0]
        wall_ms = self.wall_limit_ms(view)
        wall_limit = None if wall_ms is None else wall0 + wall_ms / 1000
        if self.house_deadline is not None:
            by = wall0 + (self.house_deadline - time.monotonic())
            wall_limit = by if wall_limit is None else min(wall_limit, by)
        cpu_limit = cpu0 + self.budget_ms / 1000

        def out_of_time() -> bool:
            return time.thread_time() >= cpu_limit or (
                wall_limit is not None and time.perf_counter() >= wall_limit)

        if out_of_time():
            return cands[0]
        try:
            det = Determinizer(view, self.options)
        except InconsistentView:
            return cands[0]
        me = view.seat
        rules = self.prior.rules(view)
        k = len(cands)
        totals = [0.0] * k
        diffs_sq = [0.0] * k  # sum of squared paired differences against candidate 0
        deals = 0
        rng = self.rng
        while not out_of_time():
            # One deal at the view's position, copied for each candidate but the last
            # (a copy costs a small fraction of dealing and replaying the history).
            deal_game = det.sample_game(rng)
            results = []
            for i, move in enumerate(cands):
                game = deal_game if i == k - 1 else deal_game.copy()
                if move is None:
                    game.pass_turn()
                else:
                    game.play(list(move))
                if not rollout(game, rules, out_of_time, self.rollout_policy):
                    break
                results.append(game.points[me])
            if len(results) < k:
                break
            deals += 1
            base = results[0]
            for i, r in enumerate(results):
                totals[i] += r
                diffs_sq[i] += (r - base) ** 2
        self.stats["deals"] += deals
        if deals < 2:
            return cands[0]
        self.stats["searched"] += 1
        best = max(range(k), key=lambda i: (totals[i], -i))
        if best == 0:
            return cands[0]
        mean = (totals[best] - totals[0]) / deals
        var = diffs_sq[best] / deals - mean * mean
        se = (max(var, 0.0) / (deals - 1)) ** 0.5
        if mean > self.confidence * se and mean > self.margin:
            self.stats["overruled"] += 1
            return cands[best]
        return cands[0]
