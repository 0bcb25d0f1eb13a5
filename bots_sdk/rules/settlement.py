"""End-of-game payments in integer points (docs/rules.md §6, §7, §9).

Kept apart from the turn logic because every preset's scoring differences meet here:
places, frozen players, stuck cards, đền bài, blind three, the four-pair bonus. It is a
pure function of the facts at the end of a game (``EndOfGame``), which the game hands
over; it never reads or writes a game. Chop chains are settled by the game as rounds end
(§6.5) and are not part of this.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from .options import Options
from .scoring import has_four_pair_sequence, stuck_points

#: One payment line, as in ``Game.payments`` and the replay JSON.
Payment = dict[str, Any]

# Lines that đền bài takes over: what the winner collects for places, freezing and stuck.
DEN_BAI_REASONS = ("place", "thua_nhi", "frozen", "stuck", "blind_three")


class EndOfGame(NamedTuple):
    """What settlement needs to know about a finished game."""

    options: Options
    #: Seat per place, complete (index 0 is 1st).
    places: tuple[int, ...]
    frozen: tuple[int, ...]
    #: What each seat still holds, as 52-bit card sets.
    hands: tuple[int, ...]
    #: The dealt hands (the Đà Nẵng four-pair bonus is paid on them).
    initial: tuple[int, ...]
    #: Huế split bombs per seat: (3S alone is four 3s, two 6s are a four-pair sequence).
    empowered: tuple[tuple[bool, bool], ...]
    #: Seats that passed, on their own turn, while holding a legal play (đền bài).
    passed_with_play: tuple[bool, ...]
    #: The player left holding cards when the game ended, if any.
    left_holding: int | None
    #: "finished" or "blind_three".
    end_reason: str
    #: Blind three: the players still holding cards, who pay the winner.
    blind_holders: tuple[int, ...] = ()


class Settlement(NamedTuple):
    payments: list[Payment]
    den_bai: int | None
    next_leader: int


def _line(payer: int, payee: int, points: int, reason: str) -> list[Payment]:
    if points and payer != payee:
        return [{"from": payer, "to": payee, "points": points, "reason": reason}]
    return []


def _stuck(opts: Options, hand: int, empowered: tuple[bool, bool]) -> int:
    return stuck_points(hand, opts, empowered[0], empowered[1]) if hand else 0


def settle_game(end: EndOfGame) -> Settlement:
    """The payments of a finished game (not an instant win), đền bài and the next leader."""
    opts = end.options
    places = end.places
    n = len(places)
    winner = places[0]
    frozen = set(end.frozen)
    lines: list[Payment] = []

    for f in end.frozen:
        lines += _line(f, winner, opts.frozen_points, "frozen")
        if opts.frozen_pays_stuck:
            lines += _line(f, winner, _stuck(opts, end.hands[f], end.empowered[f]), "stuck")

    if end.end_reason == "blind_three":
        for t in end.blind_holders:
            lines += _line(t, winner, opts.blind_three_points, "blind_three")
    else:
        last = places[-1]
        if n == 4:
            if places[3] not in frozen:
                lines += _line(places[3], places[0], opts.last_pays_first, "place")
            if places[2] not in frozen:
                lines += _line(places[2], places[1], opts.third_pays_second, "place")
            # Thua nhì exists only where §6.2 creates it: two frozen of four, with the
            # remaining player still holding cards (then placed 2nd). One frozen player
            # never makes the 2nd pay it (north: even when the 2nd is left holding cards).
            if len(frozen) == 2 and end.left_holding is not None \
                    and end.left_holding == places[1]:
                lines += _line(places[1], places[0], opts.thua_nhi_points, "thua_nhi")
        elif places[n - 1] not in frozen:
            lines += _line(places[n - 1], places[0], opts.last_pays_first, "place")
        if last not in frozen:
            lines += _line(last, places[n - 2], _stuck(opts, end.hands[last], end.empowered[last]),
                           "stuck")

    den_bai: int | None = None
    if opts.den_bai and len(frozen) >= 2:
        for k in range(1, n):
            t = (winner + k) % n
            if end.passed_with_play[t]:
                den_bai = t
                break
        if den_bai is not None:
            kept: list[Payment] = []
            total = 0
            for line in lines:
                if line["to"] == winner and line["reason"] in DEN_BAI_REASONS:
                    total += line["points"]
                else:
                    kept.append(line)
            lines = kept + _line(den_bai, winner, total, "den_bai")

    if opts.four_pair_bonus:
        for s in range(n):
            if has_four_pair_sequence(end.initial[s]):
                for t in range(n):
                    if t != s:
                        lines += _line(t, s, opts.four_pair_bonus, "four_pair_bonus")

    return Settlement(lines, den_bai, den_bai if den_bai is not None else winner)


def settle_instant_win(opts: Options, winner: int, hands: tuple[int, ...]) -> list[Payment]:
    """Every other player pays the instant winner (and, with đếm heo, their stuck cards)."""
    lines: list[Payment] = []
    for t in range(len(hands)):
        if t == winner:
            continue
        lines += _line(t, winner, opts.instant_win_points, "instant_win")
        if opts.count_stuck_on_instant_win:
            lines += _line(t, winner, _stuck(opts, hands[t], (False, False)), "stuck")
    return lines
