"""Luck-adjusted standings (tournaments.scoring.adjusted) over the revealed games, and their
cache, keyed by `sealing.reveal_state` so that a new reveal or baseline makes a new key.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.core.cache import cache

from tournaments.models import Entrant, Tournament
from tournaments.sealing import reveal_state
from tournaments.selectors.revealed_games import revealed_game_seats


@dataclass(frozen=True)
class LuckAdjustedRow:
    rank: int
    bot_id: int
    bot_name: str
    games: int
    points_mean: float
    points_ci: float
    adjusted_mean: float
    adjusted_ci: float
    compared: int  # games with counterparts or a baseline to compare with


@dataclass(frozen=True)
class LuckAdjustedStandings:
    rows: list[LuckAdjustedRow]
    games_scored: int
    games_withheld: int  # games on deals not yet revealed (played at every table)
    deals_with_baseline: int
    method: str = (
        "points minus the mean result of the same cards: the same seat of the same deal at "
        "the deal group's other tables (each corrected for its bot's strength and its "
        "opponents'), and a house-bot baseline of the deal"
    )


#: How long computed luck-adjusted standings stay cached. The key changes whenever the
#: games they count change (a deal revealed, a baseline computed), so this only bounds
#: the memory of tournaments nobody looks at any more.
LUCK_ADJUSTED_CACHE_S = 24 * 3600


def tournament_luck_adjusted(*, tournament: Tournament) -> LuckAdjustedStandings:
    """Raw and luck-adjusted points per game with 95% intervals (tournaments.scoring).

    Only games on revealed deals count: before a deal has been played at every table of
    its group, its results compared across tables (or its baseline) would tell the bots
    still playing it something about the cards.

    The scoring reads every seat of every counted game (10,000 games: 40,000 rows and most
    of the tournament page's time), so its result is cached under a key made of what it
    depends on: how many games count, the last reveal and how many deals have a
    baseline. A new reveal or baseline makes a new key; nothing else changes a counted
    game (a deal is revealed only once all its games are recorded). Two queries when
    cached (the key and the entrants' names, which may change), three or four otherwise."""
    state = reveal_state(tournament=tournament)
    # v2: counterparts corrected for their strength: v1's values are not these.
    key = f"luck-adjusted:v2:{tournament.pk}:{state['scored']}:{state['last_reveal']}:{state['baselines']}"
    scored = cache.get(key)
    if scored is None:
        scored = _luck_adjusted_compute(tournament, with_baselines=state["baselines"] > 0)
        cache.set(key, scored, LUCK_ADJUSTED_CACHE_S)
    ranked, games_scored, deals_with_baseline = scored
    who = {pk: (bot_id, name) for pk, bot_id, name in Entrant.objects.filter(tournament=tournament).values_list("pk", "bot_id", "bot__name")}
    result = [
        LuckAdjustedRow(
            rank=rank, bot_id=who[r.entrant][0], bot_name=who[r.entrant][1], games=r.games,
            points_mean=r.points_mean, points_ci=r.points_ci, adjusted_mean=r.adjusted_mean,
            adjusted_ci=r.adjusted_ci, compared=r.compared,
        )
        for rank, r in enumerate(ranked, start=1)
        if r.entrant in who
    ]
    return LuckAdjustedStandings(
        rows=result, games_scored=games_scored, games_withheld=state["withheld"],
        deals_with_baseline=deals_with_baseline,
    )


def _luck_adjusted_compute(tournament: Tournament, *, with_baselines: bool) -> tuple[list[Any], int, int]:
    """The scoring itself (one query, two with baselines): standings by entrant id, games
    and deals counted.

    The seats come without their deal's baseline and the baselines once per deal
    (tournaments.selectors.revealed_games)."""
    from tournaments.scoring.adjusted import GameRow, adjusted_standings

    games, baselines = revealed_game_seats(tournament, with_baselines=with_baselines)
    rows = []
    for deal_id, entrants, points in games.values():
        baseline = baselines.get(deal_id)
        rows.append(GameRow(
            deal=deal_id, entrants=entrants, points=points,
            baseline=baseline if isinstance(baseline, list) and len(baseline) == len(points) else None,
        ))
    deals_with_baseline = len({g.deal for g in rows if g.baseline is not None})
    return adjusted_standings(rows), len(rows), deals_with_baseline
