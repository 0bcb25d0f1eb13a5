"""End-of-game payments in integer points (RULES.md §6, §7, §9).

Kept apart from the turn logic because every preset's scoring differences meet here:
places, frozen players, stuck cards, đền bài, blind three, the four-pair bonus. Chop
chains are settled by the game as rounds end (§6.5) and only appear here as lines already
paid.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .scoring import has_four_pair_sequence, stuck_points

if TYPE_CHECKING:
    from .game import Game

# Lines that đền bài takes over: what the winner collects for places, freezing and stuck.
DEN_BAI_REASONS = ("place", "thua_nhi", "frozen", "stuck", "blind_three")


def _stuck(game: Game, seat: int) -> int:
    hand = game._hands[seat]
    if not hand:
        return 0
    return stuck_points(hand, game.options, game._emp3[seat], game._emp6[seat])


def settle_game(game: Game) -> None:
    opts = game.options
    n = game.players
    places: list[int] = [p for p in game._places]  # type: ignore[misc]
    winner = places[0]
    frozen = set(game._frozen)
    pay = game._pay
    first_line = len(game._payments)

    for f in game._frozen:
        pay(f, winner, opts.frozen_points, "frozen")
        if opts.frozen_pays_stuck:
            pay(f, winner, _stuck(game, f), "stuck")

    if game._end_reason == "blind_three":
        _winner, holders = game._blind
        for t in holders:
            pay(t, winner, opts.blind_three_points, "blind_three")
    else:
        last = places[-1]
        if n == 4:
            if places[3] not in frozen:
                pay(places[3], places[0], opts.last_pays_first, "place")
            if places[2] not in frozen:
                pay(places[2], places[1], opts.third_pays_second, "place")
            # Thua nhì exists only where §6.2 creates it: two frozen of four, with the
            # remaining player still holding cards (then placed 2nd). One frozen player
            # never makes the 2nd pay it (north: even when the 2nd is left holding cards).
            if len(frozen) == 2 and game._left_holding is not None \
                    and game._left_holding == places[1]:
                pay(places[1], places[0], opts.thua_nhi_points, "thua_nhi")
        elif places[n - 1] not in frozen:
            pay(places[n - 1], places[0], opts.last_pays_first, "place")
        if last not in frozen:
            pay(last, places[n - 2], _stuck(game, last), "stuck")

    if opts.den_bai and len(frozen) >= 2:
        for k in range(1, n):
            t = (winner + k) % n
            if game._passed_with_play[t]:
                game._den_bai = t
                break
        if game._den_bai is not None:
            kept = game._payments[:first_line]
            total = 0
            for line in game._payments[first_line:]:
                if line["to"] == winner and line["reason"] in DEN_BAI_REASONS:
                    total += line["points"]
                else:
                    kept.append(line)
            game._payments = kept
            pay(game._den_bai, winner, total, "den_bai")

    if opts.four_pair_bonus:
        for s in range(n):
            if has_four_pair_sequence(game._initial[s]):
                for t in range(n):
                    if t != s:
                        pay(t, s, opts.four_pair_bonus, "four_pair_bonus")

    game._next_leader = game._den_bai if game._den_bai is not None else winner
    game._next_starting = False


def settle_instant_win(game: Game, winner: int, kind: str) -> None:
    opts = game.options
    for t in range(game.players):
        if t == winner:
            continue
        game._pay(t, winner, opts.instant_win_points, "instant_win")
        if opts.count_stuck_on_instant_win:
            game._pay(t, winner, _stuck(game, t), "stuck")
