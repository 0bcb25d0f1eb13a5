"""What one seat may know (docs/rules.md §2): its own hand and the public game, nothing else.

Other seats' cards never enter a view, and neither do declined offers (a decline would
reveal that the seat held a qualifying bomb); a bot can be handed a view as-is. The hiding
rules themselves are ``visibility.seat_visibility``, shared with the referee's encoders.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, fields
from typing import Any, Protocol, SupportsIndex

from bots_sdk.cards import Card, cards_of_mask, parse_cards

from .state import GameState, move_dict
from .visibility import seat_visibility


class Plays(Protocol):
    """A sequence of plays: a tuple of card tuples, or the engine's lazy ``LegalPlays``."""

    def __len__(self) -> int: ...
    def __getitem__(self, i: SupportsIndex, /) -> Sequence[Card]: ...
    def __iter__(self) -> Iterator[Sequence[Card]]: ...


@dataclass(frozen=True)
class SeatView:
    seat: int
    players: int
    preset: str
    hand: tuple[Card, ...]
    card_counts: tuple[int, ...]
    to_move: int | None
    can_pass: bool
    offer: str | None
    table: dict[str, Any] | None  # {"seat": int, "cards": [Card], "kind": str}
    locked_out: tuple[int, ...]
    finished: tuple[int, ...]
    history: tuple[dict[str, Any], ...]
    points: tuple[int, ...] | None
    #: The legal plays as the engine listed them, only on this seat's move (empty
    #: otherwise); indexable without building every play (the local arena hands a bot
    #: the engine's lazy ``LegalPlays``: hands rich in straights have hundreds of suit
    #: variants). ``legal_plays()`` gives them as a list of tuples.
    plays: Plays
    starting: bool = False
    leader: int = 0
    frozen: tuple[int, ...] = ()

    @property
    def my_turn(self) -> bool:
        return self.to_move == self.seat

    def legal_plays(self) -> list[tuple[Card, ...]]:
        """Every legal play now, each a tuple of Card in the engine's order (passing is
        not in the list: see ``can_pass``); empty unless it is this seat's move."""
        return [tuple(p) for p in self.plays]

    def to_dict(self) -> dict[str, Any]:
        table: dict[str, Any] | None = None
        if self.table is not None:
            table = {"seat": self.table["seat"], "kind": self.table["kind"],
                     "cards": [str(c) for c in self.table["cards"]]}
        return {
            "seat": self.seat,
            "players": self.players,
            "preset": self.preset,
            "hand": [str(c) for c in self.hand],
            "card_counts": list(self.card_counts),
            "to_move": self.to_move,
            "can_pass": self.can_pass,
            "offer": self.offer,
            "table": table,
            "locked_out": list(self.locked_out),
            "finished": list(self.finished),
            "history": [dict(h) for h in self.history],
            "points": None if self.points is None else list(self.points),
            "legal_plays": [[str(c) for c in p] for p in self.plays],
            "starting": self.starting,
            "leader": self.leader,
            "frozen": list(self.frozen),
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> SeatView:
        table: dict[str, Any] | None = d.get("table")
        if table is not None:
            table = {"seat": table["seat"], "kind": table["kind"],
                     "cards": parse_cards(table["cards"])}
        points = d.get("points")
        return cls(
            seat=d["seat"],
            players=d["players"],
            preset=d["preset"],
            hand=tuple(parse_cards(d["hand"])),
            card_counts=tuple(d["card_counts"]),
            to_move=d.get("to_move"),
            can_pass=bool(d.get("can_pass", False)),
            offer=d.get("offer"),
            table=table,
            locked_out=tuple(d.get("locked_out", ())),
            finished=tuple(d.get("finished", ())),
            history=tuple(dict(h) for h in d.get("history", ())),
            points=None if points is None else tuple(points),
            plays=tuple(tuple(parse_cards(p)) for p in d.get("legal_plays", ())),
            starting=bool(d.get("starting", False)),
            leader=d.get("leader", 0),
            frozen=tuple(d.get("frozen", ())),
        )


def seat_view(game: GameState, seat: object) -> SeatView:
    """The view of ``seat``: the public game plus what ``seat_visibility`` lets it see."""
    vis = seat_visibility(game, seat)
    table = None
    combo = game.table
    if combo is not None:
        table = {"seat": game.table_seat, "kind": combo.kind, "cards": list(combo.cards)}
    over = game.is_over
    return SeatView(
        seat=vis.seat,
        players=game.players,
        preset=game.preset,
        hand=tuple(cards_of_mask(vis.hand)),
        card_counts=tuple(game.card_counts),
        to_move=vis.to_move,
        can_pass=vis.can_pass,
        offer=vis.offer,
        table=table,
        locked_out=game.locked_out,
        finished=tuple(game.finishing_order),
        history=tuple(move_dict(mv) for mv in vis.moves),
        points=tuple(game.points) if over else None,
        plays=tuple(tuple(p) for p in game.legal_plays()) if vis.mine else (),
        starting=game.starting,
        leader=game.leader,
        frozen=tuple(game.frozen),
    )


#: The names of a SeatView's fields, in order.
FIELDS: tuple[str, ...] = tuple(f.name for f in fields(SeatView))
