"""A bot that remembers every hand it was dealt and every play it saw, and at each game
start predicts its opponents' cards from that memory: what a serious competitor would do
with duplicate deals that repeat. Instances share one `Memory` (one bot
playing several tables at once, or one owner pooling the memory of several bots).

Prediction: the deal is recognised when the new hand is a hand remembered in full (its
own in an earlier game) or contains at least `MATCH_CARDS` cards one seat was seen to
play in an earlier game (a random 13-card hand contains 8 given cards with probability
about 2e-6, so fresh deals are practically never mistaken for seen ones). The predicted
opponent cards are then every card remembered for the other seats of that game.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from bots_sdk.bot import Bot, GameInfo, GameResult, Move, View

MATCH_CARDS = 8


@dataclass
class Prediction:
    table_id: str
    game_index: int
    seat: int
    cards: frozenset[int]  # card indices predicted in opponents' hands


@dataclass
class Memory:
    games: list[dict[int, frozenset[int]]] = field(default_factory=list)  # seat -> cards known
    predictions: list[Prediction] = field(default_factory=list)
    games_started: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def predict(self, hand: frozenset[int]) -> frozenset[int]:
        for known in self.games:
            for seat, cards in known.items():
                if cards == hand or (len(cards) >= MATCH_CARDS and cards <= hand):
                    others = set()
                    for other, seen in known.items():
                        if other != seat:
                            others |= seen
                    return frozenset(others - hand)
        return frozenset()

    @property
    def predicted_cards(self) -> int:
        return sum(len(p.cards) for p in self.predictions)


def memorising_bot(memory: Memory) -> type[Bot]:
    """A greedy-playing Bot class whose instances all use `memory`."""

    class MemorisingBot(Bot):
        name = "memoriser"
        version = "1.0"
        threaded = False

        def __init__(self) -> None:
            self.memory = memory
            self.current: dict[tuple[str, int], dict] = {}

        def on_game_start(self, game: GameInfo) -> None:
            hand = frozenset(c.index for c in game.hand)
            with self.memory.lock:
                self.memory.games_started += 1
                guess = self.memory.predict(hand)
                if guess:
                    self.memory.predictions.append(Prediction(game.table_id, game.game_index, game.seat, guess))
            self.current[(game.table_id, game.game_index)] = {"seat": game.seat, "hand": hand, "seen": {}}

        def _note(self, view: View) -> None:
            state = self.current.get((view.table_id, view.game_index))
            if state is None:
                return
            for move in view.history:
                cards = move.get("cards")
                if cards:
                    state["seen"].setdefault(move["seat"], set()).update(_index(c) for c in cards)

        def play(self, view: View) -> Move:
            self._note(view)
            plays = view.plays
            if not plays:
                return None
            return min(plays, key=lambda p: (max(c.index for c in p), -len(p)))

        def on_game_end(self, result: GameResult) -> None:
            state = self.current.pop((result.table_id, result.game_index), None)
            if state is None:
                return
            known = {s: frozenset(cards) for s, cards in state["seen"].items()}
            known[state["seat"]] = state["hand"]
            with self.memory.lock:
                self.memory.games.append(known)

    return MemorisingBot


def _index(card) -> int:
    from bots_sdk.cards import Card

    return card.index if isinstance(card, Card) else Card(card).index


# For the local arena (one process): a module-level memory and class its loader can name.
ARENA_MEMORY = Memory()
ArenaMemoriser = memorising_bot(ARENA_MEMORY)
