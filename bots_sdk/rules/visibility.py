"""The hiding rules (RULES.md §2, §9 offers): what one seat may see beyond the public game.

One function holds them all, so every encoding of a seat's view (the engine's ``SeatView``,
the referee's protobuf encoders) hides exactly the same things:
- a seat sees its own hand only;
- while a seat is being offered a play (stealing the lead, an out-of-turn chop), the
  others see nobody to move: who is being asked would reveal that seat's bomb;
- the offer itself, ``can_pass`` and the legal plays are shown to the seat to move only;
- a declined offer never enters the public history (it would reveal the same bomb).
"""

from __future__ import annotations

from typing import NamedTuple

from .state import GameState, MoveRecord


class Visibility(NamedTuple):
    seat: int
    #: The seat's own cards as a 52-bit set: the only hand it sees.
    hand: int
    #: The seat it sees to move: None once the game is over, and for every other seat
    #: while one seat is being offered a play.
    to_move: int | None
    #: True when it is this seat's move: only then it sees ``offer``, ``can_pass`` and its
    #: legal plays.
    mine: bool
    offer: str | None
    can_pass: bool
    #: The public moves of the game's log from index ``moves_from`` on (declined offers
    #: left out).
    moves: tuple[MoveRecord, ...]
    #: The length of the log these moves reach: the ``moves_from`` of the next call that
    #: wants only what is new.
    moves_to: int


def is_public(move: MoveRecord) -> bool:
    """Whether every seat may see this move: all of them but a declined offer."""
    return move.mask is not None or move.offer is None


def seat_visibility(game: GameState, seat: object, *, moves_from: int = 0) -> Visibility:
    """What ``seat`` may see of ``game`` besides the public state (counts, table, places).

    ``moves_from`` skips the first moves of the log, for encoders that keep the history
    they already sent (the log only grows).
    """
    if not isinstance(seat, int) or isinstance(seat, bool) or not 0 <= seat < game.players:
        raise ValueError(f"no seat {seat!r} in a {game.players}-player game")
    if moves_from < 0:
        raise ValueError(f"moves_from must be 0 or more, got {moves_from}")
    to_move = game.to_move
    offer = game.offer
    mine = to_move == seat
    log = game.moves_since(moves_from)
    moves = tuple([mv for mv in log if is_public(mv)])
    return Visibility(
        seat=seat,
        hand=game.hand_masks[seat],
        to_move=to_move if mine or offer is None else None,
        mine=mine,
        offer=offer if mine else None,
        can_pass=game.can_pass if mine else False,
        moves=moves,
        moves_to=game.move_count,
    )
