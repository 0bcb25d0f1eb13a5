"""Ladder seasons (docs/organiser-guide.md, "Seasons"): a ladder with `season_days` runs in
seasons of that length, one after another, while it runs.

The beat's tick calls `seasons_roll` for every running ladder before seating its tables:
the first season opens when the ladder started; a season whose end has passed is closed,
its standings frozen (the standings selector's rows at that instant: revealed games only,
through tournaments.sealing), and the next one opens at once with the ladder's rating rule
applied to its entrants' pool ratings: each moves `season_regression` of the way back to
START_RATING (0, the default: carried over unchanged). Tables are seated in the open
season (`Table.season`) and count in its standings only; a table still playing when its
season ends is played out and rated, but its later games count in no season's standings
(the frozen ones never change).

Locks: the tournament's row, then its pool's row (the rating path's order:
tournaments.rating_order). The rating step takes the pool's next rating sequence number,
so `ratings_recompute` replays it at the same place among the pool's games."""

from __future__ import annotations

from dataclasses import asdict
from datetime import datetime, timedelta

from django.db import transaction
from django.db.models import F

from tournaments.models import START_RATING, Entrant, Rating, RatingPool, Season, Tournament
from tournaments.ratings.elo import season_regressed
from tournaments.selectors.standings import tournament_standings

#: The frozen row of each bot: what the season page and the API show.
FROZEN_FIELDS = (
    "rank", "bot_id", "bot_name", "owner", "status", "games", "points", "points_mean", "points_ci",
    "place_mean", "firsts", "forfeits", "strikes", "rating",
)


def seasons_roll(*, tournament: Tournament, now: datetime) -> Season | None:
    """Open the ladder's first season, or close every season that has ended by `now` and
    open the next; the open season after it (None: the ladder has no seasons)."""
    if tournament.format != Tournament.Format.LADDER or not tournament.season_days:
        return None
    with transaction.atomic():
        locked = Tournament.objects.select_for_update().get(pk=tournament.pk)
        if locked.status != Tournament.Status.RUNNING or not locked.season_days:
            return None
        length = timedelta(days=locked.season_days)
        current = Season.objects.filter(tournament=locked, ended_at__isnull=True).first()
        if current is None:
            last = Season.objects.filter(tournament=locked).order_by("-number").first()
            start = last.ends_at if last else (locked.started_at or now)
            current = Season.objects.create(
                tournament=locked, number=(last.number + 1) if last else 1, started_at=start, ends_at=start + length
            )
        # A beat that stopped for longer than a season closes the missed ones one by one
        # (empty ones included): season numbers stay consecutive, each with its own end.
        while current.ends_at <= now:
            _season_close(tournament=locked, season=current)
            current = Season.objects.create(
                tournament=locked, number=current.number + 1, started_at=current.ends_at,
                ends_at=current.ends_at + length,
            )
        return current


def _season_close(*, tournament: Tournament, season: Season) -> None:
    rows = tournament_standings(tournament=tournament, with_strength=False, season=season.number)
    season.standings = [
        {name: value for name, value in asdict(row).items() if name in FROZEN_FIELDS}
        for row in rows
        if row.games or row.forfeits
    ]
    for row in season.standings:
        if row["points_ci"] == float("inf"):
            row["points_ci"] = None  # JSON has no infinity: one game has no interval
    season.ended_at = season.ends_at
    season.regression = tournament.season_regression
    if tournament.pool_id is not None and tournament.season_regression > 0:
        _ratings_regress(tournament=tournament, season=season)
    season.save()


def _ratings_regress(*, tournament: Tournament, season: Season) -> None:
    """The rating rule, one step of the pool's rating sequence: the ladder's entrants'
    ratings move `season_regression` of the way back to START_RATING."""
    pool = RatingPool.objects.select_for_update().get(pk=tournament.pool_id)
    bots = Entrant.objects.filter(tournament=tournament).values_list("bot_id", flat=True)
    ratings = list(Rating.objects.filter(pool=pool, bot_id__in=bots).order_by("bot_id"))
    if not ratings:
        return
    RatingPool.objects.filter(pk=pool.pk).update(games_rated=F("games_rated") + 1)
    season.pool = pool
    season.rating_seq = pool.games_rated + 1
    regressed = {}
    for r in ratings:
        after = season_regressed(r.rating, tournament.season_regression, mean=START_RATING)
        regressed[str(r.bot_id)] = [r.rating, after]
        r.rating = after
    Rating.objects.bulk_update(ratings, ["rating"])
    season.regressed = regressed
