"""The cross-table: how each entrant fared against each other over the revealed games
(`sealing.sealed_games` left out), summed with numpy.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import chain
from typing import Any

import numpy as np

from tournaments.models import GameSeat, Tournament
from tournaments.sealing import sealed_games


@dataclass
class CrossTable:
    """cells[a][b]: how entrant a fared against b over the games they shared.

    `score` counts 1 for every shared game a finished above b and 1/2 for a shared place,
    the same pairwise decomposition Elo uses; `above` and `below` count the games a
    finished above and below b; `points` is a's points minus b's in them.
    """

    entrants: list[dict[str, Any]]
    cells: dict[int, dict[int, dict[str, float]]] = field(default_factory=dict)


def tournament_cross_table(*, tournament: Tournament) -> CrossTable:
    """Pairwise results between all entrants over the revealed games, entrants in seed
    order (2 queries).

    Every pair of seats in every game counts, so a 10,000-game round robin has 40,000 seats
    and 60,000 pairs: numpy sums the pairs (bincount over entrant-pair indices) instead of a
    Python loop, which took longer than reading the seats.
    """
    entrants = list(tournament.entrants.select_related("bot").order_by("seed_rank", "id"))
    n = len(entrants)
    ids = np.array([e.id for e in entrants], dtype=np.int64)
    rows = list(
        GameSeat.objects.filter(entrant_id__in=ids.tolist())
        .exclude(game_id__in=sealed_games(tournament=tournament))
        .order_by()
        .values_list("game_id", "entrant_id", "place", "points")
    )
    seats = np.fromiter(chain.from_iterable(rows), dtype=np.int64, count=4 * len(rows)).reshape(-1, 4)
    seats = seats[np.argsort(seats[:, 0], kind="stable")]  # a game's seats side by side
    game, place, points = seats[:, 0], seats[:, 2], seats[:, 3]
    by_id = np.argsort(ids)
    who = by_id[np.searchsorted(ids, seats[:, 1], sorter=by_id)]  # entrant id -> position
    # Every pair of seats of one game `span` rows apart (a the earlier row, b the later),
    # summed per (a, b) into flat n*n arrays; then folded into both directions.
    shared, a_above, tied, margin = (np.zeros(n * n) for _ in range(4))
    span = 1
    while span < len(game):
        same = game[:-span] == game[span:]
        if not same.any():
            break  # no game has more than `span` seats
        a, b = who[:-span][same], who[span:][same]
        pa, pb = place[:-span][same], place[span:][same]
        pair, reverse = a * n + b, b * n + a
        shared += np.bincount(pair, minlength=n * n)
        a_above += np.bincount(pair, weights=pa < pb, minlength=n * n)
        a_above += np.bincount(reverse, weights=pb < pa, minlength=n * n)
        tied += np.bincount(pair, weights=pa == pb, minlength=n * n)
        margin += np.bincount(pair, weights=(points[:-span] - points[span:])[same], minlength=n * n)
        span += 1
    shared, above, tied, margin = (m.reshape(n, n) for m in (shared, a_above, tied, margin))
    games = (shared + shared.T).astype(np.int64).tolist()
    score = (above + 0.5 * (tied + tied.T)).tolist()
    points_diff = (margin - margin.T).astype(np.int64).tolist()
    above = above.astype(np.int64).tolist()
    cells: dict[int, dict[int, dict[str, float]]] = {
        ea.id: {
            eb.id: {
                "games": games[i][j],
                "score": score[i][j],
                "points": points_diff[i][j],
                "above": above[i][j],
                "below": above[j][i],
            }
            for j, eb in enumerate(entrants)
            if j != i
        }
        for i, ea in enumerate(entrants)
    }
    return CrossTable(
        entrants=[{"entrant_id": e.id, "bot_id": e.bot_id, "bot_name": e.bot.name, "seed_rank": e.seed_rank} for e in entrants],
        cells=cells,
    )
