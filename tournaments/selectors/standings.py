"""A tournament's standings: points, places and their intervals, Plackett-Luce strengths,
the knockout's round reached.

Sums over revealed games only: the tournament's few sealed games are left out by id
(`sealing.sealed_games`), a table's forfeits once its result is public
(`sealing.seat_results_public`).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from django.db.models import Case, Count, F, OuterRef, Q, Subquery, Sum, When
from django.db.models.functions import Coalesce

from tournaments.models import Entrant, GameSeat, Rating, TableSeat, Tournament
from tournaments.ratings.plackett_luce import plackett_luce_fit
from tournaments.scoring.intervals import half_width
from tournaments.sealing import sealed_games, seat_results_public


@dataclass
class StandingRow:
    rank: int
    entrant_id: int
    bot_id: int
    bot_name: str
    status: str
    seed_rank: int | None
    games: int
    points: int
    points_mean: float
    points_ci: float  # half-width of the 95% interval of the mean
    place_mean: float
    place_ci: float
    firsts: int
    forfeits: int  # tables forfeited (absent past the connect deadline, or mid-table)
    strikes: int = 0  # fallback moves the referee played for the bot
    owner: str = ""
    strength: float | None = None  # Plackett-Luce, Elo scale
    strength_low: float | None = None
    strength_high: float | None = None
    rating: float | None = None  # the pool's current Elo
    round_reached: int | None = None  # knockouts: the last round the bot played


def _mean_ci(total: float, total_sq: float, n: int) -> tuple[float, float]:
    """Mean and 95% half-width from sums, by the one interval rule (Student t:
    tournaments.scoring.intervals), as the luck-adjusted standings."""
    if n == 0:
        return 0.0, 0.0
    mean = total / n
    if n < 2:
        return mean, float("inf")
    return mean, half_width((total_sq - n * mean * mean) / (n - 1), n)


def tournament_standings(
    *, tournament: Tournament, with_strength: bool = True, season: int | None = None
) -> list[StandingRow]:
    """Standings by points, then average place, then first places (2 queries; 3 with the
    strengths). Knockouts rank by the round reached first: the winner, the final's other
    places, then each earlier round's losers by their place at that table.

    Each row has 95% confidence intervals (Student t, the luck-adjusted standings' rule)
    for mean points and mean place, the bot's current
    pool Elo and, with `with_strength`, the tournament's Plackett-Luce strength
    (order-independent). The sums are aggregated in the database, so a 10,000-game
    tournament costs about what a small one does; the strength fit needs every game's
    finishing order streamed into Python and takes seconds at that size, so pages that do
    not show it pass `with_strength=False`.

    `season`: a ladder's season number; only the tables seated in that season count
    (tournaments.services.seasons).
    """
    in_season = Q() if season is None else Q(table__season=season)
    game_in_season = Q() if season is None else Q(game__table__season=season)
    # Correlated subqueries rather than JOINs: no GROUP BY over the entrant and bot columns.
    # Only tables whose result is public count (closed, every game revealed).
    forfeited_tables = (
        TableSeat.objects.filter(seat_results_public(), in_season, entrant_id=OuterRef("pk"), forfeited=True)
        .order_by()
        .values("entrant_id")
        .annotate(n=Count("id"))
        .values("n")
    )
    rating = Rating.objects.filter(pool_id=tournament.pool_id, bot_id=OuterRef("bot_id")).values("rating")[:1]
    knockout = tournament.format == Tournament.Format.KNOCKOUT
    extra = {}
    if knockout:
        # The seat of the last round each entrant played: how far it got, and how it ended
        # (once that table's result is public; until then it ranks as still playing).
        last_seat = TableSeat.objects.filter(entrant_id=OuterRef("pk")).order_by("-table__round").annotate(
            shown_place=Case(When(seat_results_public(), then=F("place")), default=None),
            shown_advanced=Case(When(seat_results_public(), then=F("advanced")), default=None),
        )
        extra = {
            "ko_round": Subquery(last_seat.values("table__round")[:1]),
            "ko_place": Subquery(last_seat.values("shown_place")[:1]),
            "ko_advanced": Subquery(last_seat.values("shown_advanced")[:1]),
        }
    entrants = list(
        Entrant.objects.filter(tournament_id=tournament.pk)
        .select_related("bot__owner")
        .annotate(table_forfeits=Coalesce(Subquery(forfeited_tables), 0), pool_rating=Subquery(rating), **extra)
        .order_by("id")
    )
    # Filtering on the entrant ids (an indexed foreign key) avoids joining games and tables;
    # the tournament's few sealed games are left out by id.
    sums = {
        row["entrant_id"]: row
        for row in GameSeat.objects.filter(game_in_season, entrant_id__in=[e.id for e in entrants])
        .exclude(game_id__in=sealed_games(tournament=tournament))
        .order_by()
        .values("entrant_id")
        .annotate(
            # Names unlike the fields': an annotation named "points" would shadow F("points").
            n=Count("id"),
            points_sum=Sum("points"),
            points_sq=Sum(F("points") * F("points")),
            place_sum=Sum("place"),
            place_sq=Sum(F("place") * F("place")),
            firsts_n=Count("id", filter=Q(place=1)),
            strikes_sum=Sum("strikes"),
        )
    }
    strengths = {}
    if with_strength and sums:
        games: dict[int, list[tuple[int, int]]] = defaultdict(list)
        for game_id, entrant_id, place in (
            GameSeat.objects.filter(game_in_season, game__table__tournament_id=tournament.pk)
            .exclude(game_id__in=sealed_games(tournament=tournament))
            .order_by("game_id", "seat")
            .values_list("game_id", "entrant_id", "place")
        ):
            games[game_id].append((place, entrant_id))
        orders, tails = [], []
        for placed in games.values():
            placed.sort()
            orders.append([entrant for _, entrant in placed])
            last = placed[-1][0]
            tied = [i for i, (place, _) in enumerate(placed) if place == last]
            tails.append(tied[0] if len(tied) > 1 else None)
        strengths = plackett_luce_fit(orders, tails)
    rows = []
    for e in entrants:
        agg = sums.get(e.id, {})
        n = agg.get("n", 0)
        p_mean, p_ci = _mean_ci(agg.get("points_sum") or 0, agg.get("points_sq") or 0, n)
        pl_mean, pl_ci = _mean_ci(agg.get("place_sum") or 0, agg.get("place_sq") or 0, n)
        s = strengths.get(e.id)
        rows.append(
            StandingRow(
                rank=0,
                entrant_id=e.id,
                bot_id=e.bot_id,
                bot_name=e.bot.name,
                status=e.status,
                seed_rank=e.seed_rank,
                games=n,
                points=agg.get("points_sum") or 0,
                points_mean=p_mean,
                points_ci=p_ci,
                place_mean=pl_mean,
                place_ci=pl_ci,
                firsts=agg.get("firsts_n", 0),
                forfeits=e.table_forfeits,
                strikes=agg.get("strikes_sum") or 0,
                owner=e.bot.owner.username,
                strength=s.rating if s else None,
                strength_low=s.low if s else None,
                strength_high=s.high if s else None,
                rating=e.pool_rating,
                round_reached=getattr(e, "ko_round", None),
            )
        )

    def by_points(r: StandingRow) -> tuple:
        return (-r.points, r.place_mean if r.games else 99, -r.firsts, r.bot_name)

    if knockout:
        # How far a bot got comes first: the winner, the final's other places, then those out
        # in each earlier round by their place at that table; points only after that.
        reached = {e.id: _knockout_reached(e) for e in entrants}
        rows.sort(key=lambda r: (*reached[r.entrant_id], *by_points(r)))
    else:
        rows.sort(key=by_points)
    for i, row in enumerate(rows, start=1):
        row.rank = i
    return rows


def _knockout_reached(entrant: Entrant) -> tuple[int, bool, int]:
    """Sort key of how far an entrant got: later rounds first; in a round, those still in
    (or the winner) before those out; those out by their place at the table."""
    out = entrant.ko_advanced is False
    placed = out or entrant.ko_advanced  # a table still playing has no places yet
    return (-(entrant.ko_round or 0), out, (entrant.ko_place or 99) if placed else 99)
