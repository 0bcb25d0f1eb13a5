"""What one seat may know (RULES.md §2): its own hand and the public game, nothing else.

Other seats' cards never enter a view, and neither do declined offers (a decline would
reveal that the seat held a qualifying bomb); a bot can be handed a view as-is.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from bots_sdk.cards import Card, cards_of_mask, parse_cards

from .combos import KIND_NAMES

if TYPE_CHECKING:
    from .game import Game


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
    legal_plays: tuple[tuple[Card, ...], ...]
    starting: bool = False
    leader: int = 0
    frozen: tuple[int, ...] = ()

    @property
    def my_turn(self) -> bool:
        return self.to_move == self.seat

    def to_dict(self) -> dict[str, Any]:
        table = None
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
            "legal_plays": [[str(c) for c in p] for p in self.legal_plays],
            "starting": self.starting,
            "leader": self.leader,
            "frozen": list(self.frozen),
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> SeatView:
        table = d.get("table")
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
            legal_plays=tuple(tuple(parse_cards(p)) for p in d.get("legal_plays", ())),
            starting=bool(d.get("starting", False)),
            leader=d.get("leader", 0),
            frozen=tuple(d.get("frozen", ())),
        )


def seat_view(game: Game, seat: int) -> SeatView:
    if type(seat) is not int or not 0 <= seat < game.players:
        raise ValueError(f"no seat {seat!r} in a {game.players}-player game")
    mine = not game.is_over and game.to_move == seat
    table = None
    if game._table is not None:
        kind, _size, _key, mask = game._table
        table = {"seat": game._table_seat, "kind": KIND_NAMES[kind],
                 "cards": cards_of_mask(mask)}
    history = tuple(
        game._move_dict(mv) for mv in game._moves
        if not (mv[1] is None and mv[2] is not None)  # declined offers stay private
    )
    return SeatView(
        seat=seat,
        players=game.players,
        preset=game.preset,
        hand=tuple(cards_of_mask(game._hands[seat])),
        card_counts=tuple(game.card_counts),
        # while a seat is being offered a play, others must not learn who (it would reveal
        # that seat's bomb): they see nobody to move
        to_move=game.to_move if mine or game.offer is None else None,
        can_pass=game.can_pass if mine else False,
        offer=game.offer if mine else None,
        table=table,
        locked_out=game.locked_out,
        finished=tuple(game.finishing_order),
        history=history,
        points=tuple(game.points) if game.is_over else None,
        legal_plays=tuple(tuple(p) for p in game.legal_plays()) if mine else (),
        starting=game.starting,
        leader=game.leader,
        frozen=tuple(game.frozen),
    )
