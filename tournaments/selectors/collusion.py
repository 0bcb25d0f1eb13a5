"""The collusion report's read (tournaments.scoring.collusion has the statistics).

Not public: the API view and the organiser page show it to the tournament's organiser
and staff only (tournaments.services.accounts.user_can_manage_tournament). It is sealed
like every read of results all the same (docs/fair-play.md): only games whose deal is
revealed count, so a report read during play says nothing about a deal another table has
still to play — an organiser may also be a competitor.

The statistics read every seat of every counted game (and solve a small linear system per
pair), so the result is cached under a key of what it depends on, as the luck-adjusted
standings are: the games counted, the last reveal, the baselines, and alpha. Queries: two
when cached (the key and the entrants), four otherwise (also the seats and the baselines).
"""

from __future__ import annotations

from dataclasses import dataclass

from django.core.cache import cache

from tournaments.isolation import bot_isolated
from tournaments.models import Entrant, Tournament
from tournaments.scoring.adjusted import GameRow
from tournaments.scoring.collusion import DEFAULT_ALPHA, METHOD, CollusionReport, collusion_report
from tournaments.sealing import reveal_state
from tournaments.selectors.revealed_games import revealed_game_seats

COLLUSION_CACHE_S = 24 * 3600


@dataclass(frozen=True)
class CollusionPair:
    bot_a: str
    bot_b: str
    house_a: bool
    house_b: bool
    games: int
    gain_a: float
    gain_b: float
    joint_gain: float
    se: float | None
    z: float | None
    p_value: float | None
    p_adjusted: float | None
    tested: bool
    flagged: bool
    note: str

    @property
    def ci(self) -> float | None:
        """Half-width of the joint gain's 95% interval."""
        return None if self.se is None else 1.959964 * self.se


@dataclass(frozen=True)
class Collusion:
    pairs: list[CollusionPair]
    tested: int
    flagged: int
    alpha: float
    games_scored: int
    games_withheld: int
    residual_sd: float | None
    correction: str = "holm"
    method: str = METHOD


def tournament_collusion(*, tournament: Tournament, alpha: float = DEFAULT_ALPHA) -> Collusion:
    """The report over the tournament's revealed games (only organisers and staff may be
    shown it: the caller checks)."""
    state = reveal_state(tournament=tournament)
    key = f"collusion:v1:{tournament.pk}:{state['scored']}:{state['last_reveal']}:{state['baselines']}:{alpha!r}"
    entrants = {
        # "isolated": cannot communicate out of band (tournaments.isolation), so cannot
        # collude by sharing hands; only pairs of two bots that can are tested.
        e.pk: (e.bot.name, bot_isolated(e.bot))
        for e in Entrant.objects.filter(tournament=tournament).select_related("bot")
    }
    report = cache.get(key)
    if report is None:
        report = _compute(tournament, entrants, alpha=alpha, with_baselines=state["baselines"] > 0)
        cache.set(key, report, COLLUSION_CACHE_S)
    pairs = []
    for p in report.pairs:
        if p.a not in entrants or p.b not in entrants:
            continue
        finite = p.se != float("inf")
        pairs.append(CollusionPair(
            bot_a=entrants[p.a][0], bot_b=entrants[p.b][0], house_a=entrants[p.a][1], house_b=entrants[p.b][1],
            games=p.games, gain_a=p.gain_a, gain_b=p.gain_b, joint_gain=p.joint_gain,
            se=p.se if finite else None, z=p.z if finite else None, p_value=p.p_value if finite else None,
            p_adjusted=p.p_adjusted, tested=p.tested, flagged=p.flagged, note=p.note,
        ))
    sd = report.residual_sd if report.residual_sd != float("inf") else None
    return Collusion(
        pairs=pairs, tested=report.tested, flagged=report.flagged, alpha=alpha,
        games_scored=report.games, games_withheld=state["withheld"], residual_sd=sd,
    )


def _compute(tournament: Tournament, entrants: dict[int, tuple[str, bool]], *, alpha: float,
             with_baselines: bool) -> CollusionReport:
    games, baselines = revealed_game_seats(tournament, with_baselines=with_baselines)
    rows = []
    for deal_id, seated, points in games.values():
        if any(e is None for e in seated):
            continue  # a seat whose entrant was removed: the game cannot be attributed
        baseline = baselines.get(deal_id)
        rows.append(GameRow(
            deal=deal_id, entrants=seated, points=points,
            baseline=baseline if isinstance(baseline, list) and len(baseline) == len(points) else None,
        ))
    isolated = {pk for pk, (_name, is_isolated) in entrants.items() if is_isolated}
    return collusion_report(rows, can_collude=lambda e: e not in isolated, alpha=alpha)
