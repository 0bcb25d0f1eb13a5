"""The hiding rules (docs/rules.md §2, §9 offers): what one seat may see beyond the public game.

One function holds them all, so every encoding of a seat's view (the engine's ``SeatView``,
the referee's protobuf encoders) hides exactly the same things:
- a seat sees its own hand only;
- while a seat is being offered a play (stealing the lead, an out-of-turn chop), the
  others see nobody to move: who is being asked would reveal that seat's bomb;
- the offer itself, ``can_pass`` and the legal plays are shown to the seat to move only;
- a declined offer never enters the public history (it would reveal the same bomb).
"""

from __future__ import annotations

from .state import GameState, MoveRecord


class Visibility:
    """What one seat may see of a game beyond its public state (read-only by convention).

    A plain class rather than a named tuple: the referee builds one per move request, and
    compiled, this costs a tenth of a named tuple made with keywords."""

    __slots__ = ("can_pass", "hand", "mine", "moves", "moves_to", "offer", "seat", "to_move")

    def __init__(self, seat: int, hand: int, to_move: int | None, mine: bool,
                 offer: str | None, can_pass: bool, moves: tuple[MoveRecord, ...],
                 moves_to: int) -> None:
        self.seat = seat
        #: The seat's own cards as a 52-bit set: the only hand it sees.
        self.hand = hand
        #: The seat it sees to move: None once the game is over, and for every other seat
        #: while one seat is being offered a play.
        self.to_move = to_move
        #: True when it is this seat's move: only then it sees ``offer``, ``can_pass`` and
        #: its legal plays.
        self.mine = mine
        self.offer = offer
        self.can_pass = can_pass
        #: The public moves of the game's log from index ``moves_from`` on (declined
        #: offers left out).
        self.moves = moves
        #: The length of the log these moves reach: the ``moves_from`` of the next call
        #: that wants only what is new.
        self.moves_to = moves_to

    def __repr__(self) -> str:
        return (f"Visibility(seat={self.seat}, hand={self.hand:#x}, to_move={self.to_move}, "
                f"mine={self.mine}, offer={self.offer!r}, can_pass={self.can_pass}, "
                f"moves={self.moves!r}, moves_to={self.moves_to})")


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
    return Visibility(seat, game.hand_masks[seat], to_move if mine or offer is None else None,
                      mine, offer if mine else None, game.can_pass if mine else False,
                      moves, game.move_count)
