"""The Bot API: what a bot author subclasses, and the read-only view a bot decides from.

The engine's `SeatView` is the single source of truth for what a seat may know; `View`
is a SeatView (the same fields, defined once, in the engine) with where the bot plays it
and a few helpers for authors, so the same bot runs unchanged in the local arena and
against the referee.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Iterable, Sequence
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar, Final, TypeAlias

from bots_sdk.cards import DECK, Card, parse_cards
from bots_sdk.rules import Game, GameState, SeatView
from bots_sdk.rules.notes import note_too_long
from bots_sdk.rules.view import FIELDS as SEAT_VIEW_FIELDS
from bots_sdk.rules.view import Plays

__all__ = [
    "PASS",
    "Bot",
    "GameInfo",
    "GameResult",
    "Move",
    "Pass",
    "TableInfo",
    "TableResult",
    "View",
    "call_hook",
    "normalize_move",
    "play_safe_move",
    "safe_move",
]


class Pass:
    """The pass marker: a singleton, so `move is PASS` is the idiomatic test."""

    _instance: ClassVar[Pass | None] = None

    def __new__(cls) -> Pass:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "PASS"

    def __reduce__(self) -> str:
        return "PASS"


PASS: Final = Pass()

#: What `Bot.play` may return: cards (Card objects, "3S"-style names, card integers, or one
#: string "3S 4S 5S"), `PASS` / `view.pass_turn()`, or None (also a pass).
Move: TypeAlias = Sequence[Card] | Sequence[str] | Sequence[int] | str | Card | Pass | None


@dataclass(frozen=True, slots=True)
class TableInfo:
    """Sent to `Bot.on_table_start`: the table the bot instance is playing."""

    table_id: str
    seat: int
    players: int
    preset: str
    options: dict[str, Any] = field(default_factory=dict)
    games: int | None = None
    move_time_ms: int | None = None


@dataclass(frozen=True, slots=True)
class GameInfo:
    """Sent to `Bot.on_game_start`: one game of the table, with the bot's own hand."""

    table_id: str
    game_index: int
    seat: int
    hand: tuple[Card, ...]
    starting: bool = True
    leader: int | None = None
    #: In a starting game, the card the first play must contain (the preset's start
    #: card, or the weakest dealt card when that was not dealt); None in other games.
    opening_card: Card | None = None

    @classmethod
    def of_game(cls, game: GameState, *, table_id: str, game_index: int, seat: int) -> GameInfo:
        """What a bot in `seat` is told when `game` starts (the arena and house bots; a
        remote bot reads the same from the referee's GameStart)."""
        opening = game.opening_card
        return cls(table_id=table_id, game_index=game_index, seat=seat,
                   hand=tuple(game.hands[seat]), starting=game.starting,
                   leader=None if game.starting else game.leader,
                   opening_card=None if opening is None else DECK[opening])


@dataclass(frozen=True, slots=True)
class GameResult:
    """Sent to `Bot.on_game_end`. `replay` is the full replay JSON when it is available
    (the arena always has it; the referee sends it once the game is over)."""

    table_id: str
    game_index: int
    seat: int
    finishing_order: tuple[int, ...]
    points: tuple[int, ...]
    instant_winner: int | None = None
    replay: dict[str, Any] | None = None

    @property
    def my_points(self) -> int:
        return self.points[self.seat]

    @property
    def my_place(self) -> int:
        """1-based place of this seat (1 = won)."""
        return self.finishing_order.index(self.seat) + 1


@dataclass(frozen=True, slots=True)
class TableResult:
    """Sent to `Bot.on_table_end`: totals per seat over the table's games."""

    table_id: str
    seat: int
    totals: tuple[int, ...]
    games_played: int
    forfeited: bool = False


@dataclass(frozen=True, init=False, eq=False, repr=False)
class View(SeatView):
    """Everything the bot's seat may know right now. Immutable: keep it if you like.

    It is the engine's `SeatView` (every field of it: `hand`, `card_counts`, `table`,
    `history`, `locked_out`, `finished`, `points`, `to_move`, `can_pass`, `offer`,
    `plays`, `preset`, `players`, `seat`, `starting`, `leader`, `frozen`, and its
    `legal_plays()`), plus where the bot plays it (`table_id`, `game_index`,
    `time_left_ms`, `table_score`) and the author's helpers below.
    """

    table_id: str = "local"
    game_index: int = 0
    #: Time left for this move including the time bank (None in the local arena).
    time_left_ms: int | None = None
    #: This bot's points at this table before this game.
    table_score: int = 0

    def __init__(
        self,
        seat_view: SeatView,
        table_id: str = "local",
        game_index: int = 0,
        time_left_ms: int | None = None,
        table_score: int = 0,
    ) -> None:
        """The view of `seat_view` (e.g. `game.view(seat)`) at a table."""
        values = self.__dict__  # a frozen dataclass: filled once, here
        for name in SEAT_VIEW_FIELDS:
            values[name] = getattr(seat_view, name)
        values["table_id"] = table_id
        values["game_index"] = game_index
        values["time_left_ms"] = time_left_ms
        values["table_score"] = table_score

    @property
    def seat_view(self) -> SeatView:
        """The view itself (it is the engine's SeatView); kept for bots written when the
        view wrapped one."""
        return self

    def __repr__(self) -> str:
        return (
            f"View(table_id={self.table_id!r}, game_index={self.game_index}, "
            f"seat={self.seat}, hand={list(map(str, self.hand))})"
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, View):
            return NotImplemented
        return all(getattr(self, name) == getattr(other, name) for name in _VIEW_FIELDS)

    __hash__ = None  # type: ignore[assignment]

    # --- author-facing helpers ---
    def pass_turn(self) -> Pass:
        """Return this from `play` to pass (or to decline an offer)."""
        return PASS

    def note(self, text: str) -> None:
        """Say why you play the move you are about to return (at most 256 UTF-8 bytes; a
        later call replaces an earlier one). It goes with your answer into the game's
        record, which shows it to your bot's owner only: never to another seat, nor to
        anyone else (docs/bot-guide.md, "Notes"). ValueError if it is too long or not a
        string, so a bad note is found in the local arena, not at the referee."""
        if not isinstance(text, str):
            raise ValueError(f"view.note() takes a string, not {type(text).__name__}")
        problem = note_too_long(text)
        if problem is not None:
            raise ValueError(problem)
        self.__dict__["_note"] = text  # not a field: the view's content stays as it was

    @property
    def noted(self) -> str | None:
        """The note given with `note()` while deciding on this view (None: none)."""
        return self.__dict__.get("_note") or None

    @property
    def table_cards(self) -> tuple[Card, ...]:
        """Cards of the play to beat; empty when you lead."""
        t = self.table
        if not t:
            return ()
        return tuple(parse_cards(t["cards"]))

    @property
    def is_leading(self) -> bool:
        return self.table is None

    def cards_played(self) -> list[Card]:
        """Every card played so far in this game (public), in order."""
        out: list[Card] = []
        for move in self.history:
            cards = move.get("cards")
            if cards:
                out.extend(parse_cards(cards))
        return out

    def unseen_cards(self) -> list[Card]:
        """Cards neither in your hand nor played yet: in other hands (or undealt with
        fewer than four players)."""
        known = set(self.hand)
        known.update(self.cards_played())
        return [c for c in DECK if c not in known]


_VIEW_FIELDS = tuple(f.name for f in fields(View))


class Bot:
    """Subclass this and implement `play`.

    One instance plays one table, so instance attributes are per-table state; `play` and
    every hook may also be `async def`. Every hook is optional.
    """

    #: Shown on the platform; defaults to the class name.
    name: ClassVar[str] = ""
    version: ClassVar[str] = "0.1.0"
    #: Against the referee, a plain (not async) `play` runs in a worker thread, so a slow
    #: move neither holds up your other tables nor stops the client from sending a safe
    #: fallback in time. A bot that always answers within a few milliseconds can set this
    #: to False to play on the client's event loop instead: about a quarter less CPU per
    #: move (benchmarks/sdk_client_bench.py).
    #: (An `async def play` always runs on the event loop.)
    threaded: ClassVar[bool] = True
    #: Against the referee, hold every answer until this many milliseconds after its
    #: request arrived (0: answer as soon as `play` returns). The other seats see how long
    #: your seat took (the time between their answer and their next request), so a bot
    #: that answers forced moves at once and thinks when it has a choice tells them what
    #: its hand allows; set this above what `play` usually takes (docs/bot-guide.md,
    #: "Your timing is visible"). `BotClient(min_answer_ms=...)` and `tienlen-bot run
    #: --min-answer-ms` override it. The move clock always wins: an answer is never held
    #: for more than half the time left (a warning says so).
    min_answer_ms: ClassVar[int] = 0

    def play(self, view: View) -> Move | Awaitable[Move]:
        """Return the cards to play, or `view.pass_turn()`."""
        raise NotImplementedError(f"{type(self).__name__} must implement play(self, view)")

    def on_table_start(self, table: TableInfo) -> None | Awaitable[None]:
        """A new table starts (before its first game)."""

    def on_game_start(self, game: GameInfo) -> None | Awaitable[None]:
        """A game starts; `game.hand` is your hand."""

    def on_game_end(self, result: GameResult) -> None | Awaitable[None]:
        """A game is over; `result.points` are this game's points per seat."""

    def on_table_end(self, result: TableResult) -> None | Awaitable[None]:
        """The table is over; `result.totals` are the table's points per seat."""

    @classmethod
    def display_name(cls) -> str:
        return cls.name or cls.__name__


def normalize_move(move: Any) -> tuple[Card, ...] | None:
    """Turn whatever `play` returned into cards (a tuple) or None for a pass.

    Raises ValueError with a message a bot author understands when the value cannot be a
    move at all (legality is the engine's job)."""
    if move is None or move is PASS:
        return None
    if isinstance(move, Card):
        return (move,)
    if isinstance(move, str):
        cards = tuple(parse_cards(move))
        return cards or None
    if isinstance(move, Iterable):
        items = list(move)
        if not items:
            raise ValueError("play() returned an empty list; return view.pass_turn() to pass")
        if all(isinstance(c, Card) for c in items):
            return tuple(items)
        return tuple(parse_cards(items))
    raise ValueError(
        f"play() returned {type(move).__name__} {move!r}; expected cards or view.pass_turn()"
    )


def safe_move(can_pass: bool, legal_plays: Plays) -> tuple[Card, ...] | None:
    """The fallback the referee also applies: pass where allowed, else the weakest play.

    The weakest play is the one whose strongest card is lowest (fewest cards on a tie)."""
    if can_pass or not legal_plays:
        return None
    best = min(legal_plays, key=lambda p: (max(c.index for c in p), len(p)))
    return tuple(best)


def play_safe_move(game: Game, view: SeatView | GameState | None = None) -> tuple[Card, ...] | None:
    """Play `safe_move` for the player to move in `game`: the fallback the referee plays for
    a seat that did not answer properly, which the local arena and `tienlen-bot check`
    play the same way (docs/protocol.md). `view`, the mover's view when the caller has one,
    spares working out its legal plays again. Returns the cards played (None: a pass)."""
    state = game if view is None else view
    cards = safe_move(state.can_pass, state.legal_plays())
    if cards is None:
        game.pass_turn()
    else:
        game.play(list(cards))
    return cards


async def call_hook(result: Any) -> Any:
    """Await `result` if a bot method returned an awaitable (async bots)."""
    if inspect.isawaitable(result):
        return await result
    return result
