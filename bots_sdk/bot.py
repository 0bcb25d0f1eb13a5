"""The Bot API: what a bot author subclasses, and the read-only view a bot decides from.

The engine's `SeatView` is the single source of truth for what a seat may know; `View`
wraps it so the author-facing surface (``view.legal_plays()``, ``view.pass_turn()``,
table-level context such as the table id and running scores) can grow without touching
the engine, and so the same bot runs unchanged in the local arena and against the
referee.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Final, TypeAlias

from bots_sdk.cards import Card, parse_cards

if TYPE_CHECKING:
    from bots_sdk.rules import SeatView

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


class View:
    """Everything the bot's seat may know right now. Immutable: keep it if you like.

    Attribute access is forwarded to the engine's `SeatView` (`hand`, `card_counts`,
    `table`, `history`, `locked_out`, `finished`, `points`, `to_move`, `can_pass`, `offer`,
    `preset`, `players`, `seat`); the methods below are the author-facing API.

    (A plain slotted class with read-only properties rather than a frozen dataclass: it is
    built once per move, and a frozen dataclass costs twice as much to build.)
    """

    __slots__ = (
        "_game_index",
        "_plays",
        "_seat_view",
        "_table_id",
        "_table_score",
        "_time_left_ms",
    )

    def __init__(
        self,
        seat_view: SeatView,
        table_id: str = "local",
        game_index: int = 0,
        time_left_ms: int | None = None,
        table_score: int = 0,
    ) -> None:
        self._seat_view = seat_view
        self._table_id = table_id
        self._game_index = game_index
        self._time_left_ms = time_left_ms
        self._table_score = table_score
        self._plays: tuple[tuple[Card, ...], ...] | None = None

    @property
    def seat_view(self) -> SeatView:
        """The engine's SeatView (in the local arena: a lazily built equivalent)."""
        return self._seat_view

    @property
    def table_id(self) -> str:
        return self._table_id

    @property
    def game_index(self) -> int:
        return self._game_index

    @property
    def time_left_ms(self) -> int | None:
        """Time left for this move including the time bank (None in the local arena)."""
        return self._time_left_ms

    @property
    def table_score(self) -> int:
        """This bot's points at this table before this game."""
        return self._table_score

    def __repr__(self) -> str:
        return (
            f"View(table_id={self._table_id!r}, game_index={self._game_index}, "
            f"seat={self.seat}, hand={list(map(str, self.hand))})"
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, View):
            return NotImplemented
        return (
            self._table_id == other._table_id
            and self._game_index == other._game_index
            and self._seat_view == other._seat_view
        )

    __hash__ = None  # type: ignore[assignment]

    # --- forwarded engine fields (explicit for type checkers and autocompletion) ---
    @property
    def seat(self) -> int:
        return self._seat_view.seat

    @property
    def players(self) -> int:
        return self._seat_view.players

    @property
    def preset(self) -> str:
        return self._seat_view.preset

    @property
    def hand(self) -> tuple[Card, ...]:
        """Own cards, ascending (3S first)."""
        return self._seat_view.hand

    @property
    def card_counts(self) -> tuple[int, ...]:
        """Cards left per seat."""
        return tuple(self._seat_view.card_counts)

    @property
    def to_move(self) -> int | None:
        return self._seat_view.to_move

    @property
    def can_pass(self) -> bool:
        return self._seat_view.can_pass

    @property
    def offer(self) -> str | None:
        """None, or the name of the offer being made to this seat (e.g. "steal_lead");
        during an offer `pass_turn()` declines it without locking you out."""
        return self._seat_view.offer

    @property
    def table(self) -> dict[str, Any] | None:
        """The play to beat: {"seat", "cards", "kind"}, or None when you lead."""
        return self._seat_view.table

    @property
    def locked_out(self) -> tuple[int, ...]:
        return tuple(self._seat_view.locked_out)

    @property
    def finished(self) -> tuple[int, ...]:
        """Seats that emptied their hands, in finishing order."""
        return tuple(self._seat_view.finished)

    @property
    def history(self) -> tuple[dict[str, Any], ...]:
        """Public moves so far: {"seat": s, "cards": [...]} or {"seat": s, "pass": True}."""
        return tuple(self._seat_view.history)

    @property
    def points(self) -> tuple[int, ...] | None:
        """This game's points per seat, once the game is over."""
        pts = self._seat_view.points
        return None if pts is None else tuple(pts)

    def __getattr__(self, name: str) -> Any:
        # Anything the engine adds to SeatView later is reachable without an SDK release.
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self._seat_view, name)

    # --- author-facing helpers ---
    def legal_plays(self) -> list[tuple[Card, ...]]:
        """Every legal play now (each a tuple of Card, in the engine's order). Passing is
        not in the list: see `can_pass` and `pass_turn()`. Built once per view; for hands
        with very many straights, `view.seat_view.legal_plays` is the engine's lazy
        sequence (indexable without building every play)."""
        plays = self._plays
        if plays is None:
            plays = self._plays = tuple(tuple(p) for p in self._seat_view.legal_plays)
        return list(plays)

    def pass_turn(self) -> Pass:
        """Return this from `play` to pass (or to decline an offer)."""
        return PASS

    @property
    def table_cards(self) -> tuple[Card, ...]:
        """Cards of the play to beat; empty when you lead."""
        t = self._seat_view.table
        if not t:
            return ()
        return tuple(parse_cards(t["cards"]))

    @property
    def is_leading(self) -> bool:
        return self._seat_view.table is None

    def cards_played(self) -> list[Card]:
        """Every card played so far in this game (public), in order."""
        out: list[Card] = []
        for move in self._seat_view.history:
            cards = move.get("cards")
            if cards:
                out.extend(parse_cards(cards))
        return out

    def unseen_cards(self) -> list[Card]:
        """Cards neither in your hand nor played yet: in other hands (or undealt with
        fewer than four players)."""
        from bots_sdk.cards import DECK

        known = set(self.hand)
        known.update(self.cards_played())
        return [c for c in DECK if c not in known]


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


def safe_move(can_pass: bool, legal_plays: Sequence[Sequence[Card]]) -> tuple[Card, ...] | None:
    """The fallback the referee also applies: pass where allowed, else the weakest play.

    The weakest play is the one whose strongest card is lowest (fewest cards on a tie)."""
    if can_pass or not legal_plays:
        return None
    best = min(legal_plays, key=lambda p: (max(c.index for c in p), len(p)))
    return tuple(best)


async def call_hook(result: Any) -> Any:
    """Await `result` if a bot method returned an awaitable (async bots)."""
    if inspect.isawaitable(result):
        return await result
    return result
