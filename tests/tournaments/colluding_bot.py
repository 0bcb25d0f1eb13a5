"""Two bots that collude at one table: the test hook of the collusion report.

Two accounts that meet at a table can do what the platform cannot see: tell each other
their hands and play for the pair. Here the bots share a `Channel` (in one process; real
colluders would use a socket) and tell each other their hands at every move. With its
partner at the table a colluder plays **for the pair**: of the heuristic house bot's best
few moves it plays the one after which the pair scores most, judged by playing the game
out (heuristic rollouts) over deals of the hidden cards that put the **partner's real
hand** where it is and only the opponents' cards at random: the search house bot's method
(bots_sdk/examples/search.py) with the partner's cards known and the pair's points as the
objective. Apart it plays `apart` (the heuristic by default).

Why not "soft play" (pass instead of beating the partner, feed it the plays it can beat,
let it go out first)? Measured in the engine against the same cards played by two honest
heuristic bots, it **loses** points for the pair: −0.2 to −0.6 a game at tables of 4,
−0.6 to −1.1 at tables of 3, whoever the opponents (a pass hands the trick and the tempo
to the next opponent). Knowing the partner's hand and playing for the pair gains
+0.3 ± 0.3 a game (4 seats) and +0.4 ± 0.4 (3 seats) over honest heuristic play on the
same cards, +0.9 ± 0.3 against the pair's expectation in a round robin
(benchmarks/collusion_bench.py, which measures how often the report sees it).

`apart="greedy"` makes the pair of the end-to-end test: two accounts running a weak bot,
which pool their hands and search together when they meet, so together they are far
stronger than apart (+1.9 points a game for the pair) and one short tournament shows it.

Used by tests/tournaments/test_collusion_e2e.py (over the real referee) and
benchmarks/collusion_bench.py (in the engine).
"""

from __future__ import annotations

import random
import threading
from collections import defaultdict
from typing import Any

from bots_sdk.bot import Bot, GameInfo, Move, TableInfo, View
from bots_sdk.cards import DECK, parse_cards
from bots_sdk.determinize import Determinizer, InconsistentView
from bots_sdk.examples import EXAMPLES
from bots_sdk.examples.heuristic import HeuristicBot
from bots_sdk.examples.search import rollout

#: Moves compared (the heuristic's best few) and deals sampled per move: a fixed count,
#: not a time budget, so a seeded pair plays the same moves on a loaded machine.
CANDIDATES = 4
DEALS = 4
PARTNER_WAIT_S = 0.5
#: The rollout policy (bots_sdk.examples.search.rollout): "fast" is about 2.5 times cheaper.
ROLLOUT = "heuristic"


class Channel:
    """What the colluders tell each other: each seat's hand, per table and game."""

    def __init__(self) -> None:
        self.lock = threading.Condition()
        self.hands: dict[tuple[str, int], dict[int, frozenset[int]]] = defaultdict(dict)
        self.tables: dict[str, set[int]] = defaultdict(set)
        self.moves_together = 0  # moves played for the pair

    def join(self, table_id: str, seat: int) -> None:
        with self.lock:
            self.tables[table_id].add(seat)
            self.lock.notify_all()

    def tell(self, table_id: str, game_index: int, seat: int, hand: frozenset[int]) -> None:
        with self.lock:
            self.tables[table_id].add(seat)
            self.hands[(table_id, game_index)][seat] = hand
            self.lock.notify_all()

    def partner(self, table_id: str, game_index: int, seat: int, *, wait_s: float = 0.0) -> tuple[int, frozenset[int]] | None:
        """The partner's seat and the hand it last told, if it sits at this table."""
        def find() -> tuple[int, frozenset[int]] | None:
            for s, hand in self.hands.get((table_id, game_index), {}).items():
                if s != seat:
                    return s, hand
            return None

        with self.lock:
            found = find()
            if found is None and wait_s > 0:
                self.lock.wait_for(lambda: find() is not None, timeout=wait_s)
                found = find()
            return found

    def has_partner_at(self, table_id: str, seat: int) -> bool:
        with self.lock:
            return any(s != seat for s in self.tables.get(table_id, ()))


def colluding_bot(channel: Channel, *, table_id: str | None = None, apart: str = "heuristic",
                  seed: int | str = 0) -> type[Bot]:
    """A Bot class whose instances collude through `channel`. `table_id` overrides the
    view's (the engine's local games all call themselves "local"); `apart`: the example
    bot it plays as without its partner; `seed`: of its sampled deals."""

    class ColludingBot(Bot):
        name = "colluder"
        version = "1.0"
        threaded = True  # it may wait for its partner's first message

        def __init__(self) -> None:
            self.prior = HeuristicBot()
            self.apart = EXAMPLES[apart]()
            self.options: dict[str, Any] | None = None
            self.waited: set[int] = set()
            self.rng = random.Random(f"{seed}")

        def _table(self, view_table: str) -> str:
            return table_id if table_id is not None else view_table

        def on_table_start(self, table: TableInfo) -> None:
            self.options = dict(table.options) or None
            self.prior.on_table_start(table)
            self.apart.on_table_start(table)
            channel.join(self._table(table.table_id), table.seat)

        def on_game_start(self, game: GameInfo) -> None:
            channel.tell(self._table(game.table_id), game.game_index, game.seat, frozenset(c.index for c in game.hand))

        def play(self, view: View) -> Move:
            tid = self._table(view.table_id)
            me = view.seat
            channel.tell(tid, view.game_index, me, frozenset(c.index for c in view.hand))
            # The partner's first message may still be on its way: wait a moment, once a game.
            wait = PARTNER_WAIT_S if view.game_index not in self.waited and channel.has_partner_at(tid, me) else 0.0
            self.waited.add(view.game_index)
            found = channel.partner(tid, view.game_index, me, wait_s=wait)
            if found is None:
                return self.apart.play(view)
            ranked = self.prior.ranked_moves(view)
            if not ranked:
                return view.pass_turn()
            cands = [move for _score, move in ranked[:CANDIDATES]]
            if len(cands) == 1 or ranked[0][0] == float("-inf"):
                return cands[0]
            seat, told = found
            partner = self._partner_hand(view, seat, told)
            if not partner:
                return cands[0]  # the partner is out: nothing left to play for together
            channel.moves_together += 1
            return self._for_the_pair(view, seat, partner, cands)

        @staticmethod
        def _partner_hand(view: View, seat: int, told: frozenset[int]) -> list[int]:
            if view.card_counts[seat] == 0:
                return []
            played: set[int] = set()
            for move in view.history:
                if move.get("seat") == seat and move.get("cards"):
                    played.update(c.index for c in parse_cards(move["cards"]))
            return sorted(told - played)

        def _for_the_pair(self, view: View, seat: int, partner: list[int], cands: list) -> Move:
            try:
                det = Determinizer(view, self.options)
            except InconsistentView:
                return cands[0]
            if len(partner) != det.hidden_counts[seat]:
                return cands[0]  # the partner's message is older than its last play
            me = view.seat
            known = set(partner)
            rest = [c.index for c in det.unknown if c.index not in known]
            others = [s for s in range(view.players) if s not in (me, seat)]
            rules = self.prior.rules(view)
            totals = [0.0] * len(cands)
            deals = 0
            for _ in range(4 * DEALS):
                if deals == DEALS:
                    break
                self.rng.shuffle(rest)
                hands: list[list] = [[] for _ in range(view.players)]
                hands[me] = list(view.hand)
                hands[seat] = [DECK[i] for i in partner]
                k = 0
                for s in others:
                    hands[s] = [DECK[i] for i in rest[k:k + det.hidden_counts[s]]]
                    k += det.hidden_counts[s]
                try:
                    start = det.game_for(hands)
                except InconsistentView:
                    continue  # these opponents' hands do not fit what they played
                for i, move in enumerate(cands):
                    game = start.copy()
                    if move is None:
                        game.pass_turn()
                    else:
                        game.play(list(move))
                    rollout(game, rules, None, ROLLOUT)
                    totals[i] += game.points[me] + game.points[seat]
                deals += 1
            if deals == 0:
                return cands[0]
            return cands[max(range(len(cands)), key=lambda i: (totals[i], -i))]

    return ColludingBot
