"""The revealed games of a tournament as scoring reads them: each game's deal, entrants and
points in seat order, and the revealed deals' luck baselines. One read for the two
analyses that need it (the luck-adjusted standings and the collusion report), both on
revealed games only (tournaments.sealing)."""

from __future__ import annotations

from typing import Any

from tournaments.models import Deal, GameSeat, Tournament
from tournaments.sealing import deals_revealed, revealed

# game id -> (deal id, entrant ids in seat order, points in seat order)
GameSeats = dict[int, tuple[int, list[int], list[int]]]


def revealed_game_seats(tournament: Tournament, *, with_baselines: bool) -> tuple[GameSeats, dict[int, Any]]:
    """The games (one query) and, with `with_baselines`, the baselines by deal id (a second
    one: joined to every seat, the same JSON was fetched and parsed four times a game)."""
    baselines = dict(
        Deal.objects.filter(deals_revealed(), tournament=tournament, baseline__isnull=False)
        .values_list("pk", "baseline")
    ) if with_baselines else {}
    seats = (
        GameSeat.objects.filter(revealed("game__"), game__table__tournament=tournament)
        .order_by("game_id", "seat")
        .values_list("game_id", "entrant_id", "points", "game__deal_id")
    )
    games: GameSeats = {}
    for game_id, entrant_id, points, deal_id in seats:
        row = games.get(game_id)
        if row is None:
            row = games[game_id] = (deal_id, [], [])
        row[1].append(entrant_id)
        row[2].append(points)
    return games, baselines
