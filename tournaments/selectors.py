"""Every read the API and the spectator pages need, in a fixed small number of queries.

Each selector's query count is pinned in tests/tournaments/test_selectors.py, so pages stay
free of N+1 queries as data grows. Statistics (confidence intervals, Plackett-Luce) are
computed in Python from one aggregated query.
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from django.db.models import Count, Prefetch, Q, QuerySet

from tournaments.models import (
    Bot,
    Entrant,
    Game,
    GameSeat,
    Rating,
    RatingChange,
    RatingPool,
    Replay,
    Table,
    TableSeat,
    Tournament,
)
from tournaments.ratings.plackett_luce import plackett_luce_fit
from tournaments.scheduling.knockout import knockout_plan

DONE_STATUSES = (Table.Status.DONE, Table.Status.FAILED, Table.Status.CANCELLED)
Z95 = 1.96


# --- tournaments -----------------------------------------------------------------------


def tournament_list(*, status: str | None = None, format: str | None = None) -> QuerySet[Tournament]:
    """Tournaments, newest first, with entrant and progress counts annotated (1 query)."""
    qs = Tournament.objects.select_related("organiser", "pool").annotate(
        entrant_count=Count("entrants", distinct=True),
        tables_total=Count("tables", distinct=True),
        tables_done=Count("tables", filter=Q(tables__status__in=DONE_STATUSES), distinct=True),
    )
    if status:
        qs = qs.filter(status=status)
    if format:
        qs = qs.filter(format=format)
    return qs.order_by("-created_at", "-id")


def tournament_get(*, slug: str) -> Tournament:
    return Tournament.objects.select_related("organiser", "pool").get(slug=slug)


@dataclass(frozen=True)
class Progress:
    status: str
    tables_total: int
    tables_done: int
    tables_running: int
    games_done: int
    games_planned: int

    @property
    def percent(self) -> float:
        if not self.games_planned:
            return 100.0 if self.status == Tournament.Status.FINISHED else 0.0
        return round(100.0 * self.games_done / self.games_planned, 1)

    def as_dict(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "tables_total": self.tables_total,
            "tables_done": self.tables_done,
            "tables_running": self.tables_running,
            "games_done": self.games_done,
            "games_planned": self.games_planned,
            "percent": self.percent,
        }


def tournament_progress(*, tournament: Tournament) -> Progress:
    """Tables done / total and games done, at any moment (1 query; knockouts 3, counting
    the rounds not created yet)."""
    from django.db.models import Sum

    agg = Table.objects.filter(tournament_id=tournament.pk).aggregate(
        total=Count("id"),
        done=Count("id", filter=Q(status__in=DONE_STATUSES)),
        running=Count("id", filter=Q(status__in=[Table.Status.RUNNING, Table.Status.WAITING])),
        games=Sum("games_recorded"),
        planned=Sum("games_planned", filter=~Q(status=Table.Status.CANCELLED)),
    )
    tables_total, games_planned = agg["total"] or 0, agg["planned"] or 0
    if tournament.format == Tournament.Format.KNOCKOUT and tournament.status == Tournament.Status.RUNNING:
        # Later rounds do not exist yet: count them from the bracket's shape (1 more query).
        rounds = knockout_plan(tournament.entrants.count(), tournament.seats_per_table, tournament.advance_per_table)
        created = set(Table.objects.filter(tournament_id=tournament.pk).values_list("round", flat=True))
        for number, sizes in enumerate(rounds, start=1):
            if number not in created:
                tables_total += len(sizes)
                games_planned += sum(tournament.games_per_table or tournament.duplicate_sets * size for size in sizes)
    return Progress(
        status=tournament.status,
        tables_total=tables_total,
        tables_done=agg["done"] or 0,
        tables_running=agg["running"] or 0,
        games_done=agg["games"] or 0,
        games_planned=games_planned,
    )


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
    forfeits: int
    strength: float | None = None  # Plackett-Luce, Elo scale
    strength_low: float | None = None
    strength_high: float | None = None
    rating: float | None = None  # the pool's current Elo


def _mean_ci(total: float, total_sq: float, n: int) -> tuple[float, float]:
    if n == 0:
        return 0.0, 0.0
    mean = total / n
    if n < 2:
        return mean, float("inf")
    variance = max(0.0, (total_sq - n * mean * mean) / (n - 1))
    return mean, Z95 * math.sqrt(variance / n)


def tournament_standings(*, tournament: Tournament, with_strength: bool = True) -> list[StandingRow]:
    """Standings by points, then average place, then first places (4 queries).

    Each row has 95% confidence intervals for mean points and mean place, the tournament's
    Plackett-Luce strength (order-independent) and the bot's current pool Elo.
    """
    entrants = list(tournament.entrants.select_related("bot").order_by("id"))
    seats = (
        GameSeat.objects.filter(game__table__tournament=tournament)
        .order_by("game_id", "seat")
        .values_list("game_id", "entrant_id", "place", "points")
    )
    stats: dict[int, list[float]] = defaultdict(lambda: [0, 0, 0.0, 0.0, 0, 0, 0])
    games: dict[int, list[tuple[int, int]]] = defaultdict(list)
    for game_id, entrant_id, place, points in seats:
        row = stats[entrant_id]
        row[0] += 1
        row[1] += points
        row[2] += points * points
        row[3] += place
        row[4] += place * place
        row[5] += place == 1
        games[game_id].append((place, entrant_id))
    for entrant_id in TableSeat.objects.filter(table__tournament=tournament, forfeited=True).values_list(
        "entrant_id", flat=True
    ):
        # Forfeits count tables: absent past the connect deadline, or forfeited mid-table.
        stats[entrant_id][6] += 1
    ratings = {}
    if tournament.pool_id:
        ratings = dict(
            Rating.objects.filter(pool_id=tournament.pool_id, bot_id__in=[e.bot_id for e in entrants])
            .values_list("bot_id", "rating")
        )
    strengths = {}
    if with_strength and games:
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
        n, pts, pts_sq, pl, pl_sq, firsts, forfeits = stats.get(e.id, (0, 0, 0, 0, 0, 0, 0))
        p_mean, p_ci = _mean_ci(pts, pts_sq, n)
        pl_mean, pl_ci = _mean_ci(pl, pl_sq, n)
        s = strengths.get(e.id)
        rows.append(
            StandingRow(
                rank=0,
                entrant_id=e.id,
                bot_id=e.bot_id,
                bot_name=e.bot.name,
                status=e.status,
                seed_rank=e.seed_rank,
                games=int(n),
                points=int(pts),
                points_mean=p_mean,
                points_ci=p_ci,
                place_mean=pl_mean,
                place_ci=pl_ci,
                firsts=int(firsts),
                forfeits=int(forfeits),
                strength=s.rating if s else None,
                strength_low=s.low if s else None,
                strength_high=s.high if s else None,
                rating=ratings.get(e.bot_id),
            )
        )
    rows.sort(key=lambda r: (-r.points, r.place_mean if r.games else 99, -r.firsts, r.bot_name))
    for i, row in enumerate(rows, start=1):
        row.rank = i
    return rows


@dataclass
class CrossTable:
    """cells[a][b]: how entrant a fared against b over the games they shared.

    `score` counts 1 for every shared game a finished above b and 1/2 for a shared place,
    the same pairwise decomposition Elo uses; `points` is a's points minus b's in them.
    """

    entrants: list[dict[str, Any]]
    cells: dict[int, dict[int, dict[str, float]]] = field(default_factory=dict)


def tournament_cross_table(*, tournament: Tournament) -> CrossTable:
    """Pairwise results between all entrants (2 queries)."""
    entrants = list(tournament.entrants.select_related("bot").order_by("seed_rank", "id"))
    by_game: dict[int, list[tuple[int, int, int]]] = defaultdict(list)
    for game_id, entrant_id, place, points in (
        GameSeat.objects.filter(game__table__tournament=tournament)
        .values_list("game_id", "entrant_id", "place", "points")
    ):
        by_game[game_id].append((entrant_id, place, points))
    cells: dict[int, dict[int, dict[str, float]]] = {
        a.id: {b.id: {"games": 0, "score": 0.0, "points": 0} for b in entrants if b.id != a.id}
        for a in entrants
    }
    for seats in by_game.values():
        for a, place_a, points_a in seats:
            for b, place_b, points_b in seats:
                if a == b or a not in cells or b not in cells[a]:
                    continue
                cell = cells[a][b]
                cell["games"] += 1
                cell["score"] += 1.0 if place_a < place_b else 0.5 if place_a == place_b else 0.0
                cell["points"] += points_a - points_b
    return CrossTable(
        entrants=[{"entrant_id": e.id, "bot_id": e.bot_id, "bot_name": e.bot.name, "seed_rank": e.seed_rank} for e in entrants],
        cells=cells,
    )


def tournament_bracket(*, tournament: Tournament) -> list[dict[str, Any]]:
    """Rounds -> tables -> seats, for drawing a bracket (2 queries)."""
    tables = (
        Table.objects.filter(tournament=tournament)
        .order_by("round", "number")
        .prefetch_related(
            Prefetch("seats", queryset=TableSeat.objects.select_related("entrant__bot").order_by("seat"))
        )
    )
    rounds: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for table in tables:
        rounds[table.round].append(
            {
                "table_id": table.pk,
                "number": table.number,
                "status": table.status,
                "games_recorded": table.games_recorded,
                "games_planned": table.games_planned,
                "seats": [
                    {
                        "seat": s.seat,
                        "entrant_id": s.entrant_id,
                        "bot_id": s.entrant.bot_id,
                        "bot_name": s.entrant.bot.name,
                        "seed_rank": s.entrant.seed_rank,
                        "points": s.points,
                        "place": s.place,
                        "advanced": s.advanced,
                        "forfeited": s.forfeited,
                    }
                    for s in table.seats.all()
                ],
            }
        )
    return [{"round": r, "tables": rounds[r]} for r in sorted(rounds)]


def table_list(*, tournament: Tournament) -> QuerySet[Table]:
    return (
        Table.objects.filter(tournament=tournament)
        .order_by("round", "number")
        .prefetch_related(Prefetch("seats", queryset=TableSeat.objects.select_related("entrant__bot")))
    )


# --- ratings ---------------------------------------------------------------------------


def pool_list() -> QuerySet[RatingPool]:
    return RatingPool.objects.annotate(bots=Count("ratings")).order_by("preset", "seats")


def pool_get(*, preset: str, seats: int) -> RatingPool:
    return RatingPool.objects.get(preset=preset, seats=seats)


def pool_leaderboard(*, pool: RatingPool, min_games: int = 0) -> QuerySet[Rating]:
    """Ratings of a pool, best first (1 query; page it)."""
    return (
        Rating.objects.filter(pool=pool, games__gte=min_games, bot__revoked_at__isnull=True)
        .select_related("bot", "bot__owner")
        .order_by("-rating", "bot__name")
    )


def bot_rating_history(*, bot: Bot, pool: RatingPool) -> QuerySet[RatingChange]:
    return RatingChange.objects.filter(bot=bot, pool=pool).order_by("seq")


# --- bots ------------------------------------------------------------------------------


def bot_list(*, owner=None) -> QuerySet[Bot]:
    qs = Bot.objects.select_related("owner")
    if owner is not None:
        qs = qs.filter(owner=owner)
    return qs.order_by("name")


def bot_get(*, name: str) -> Bot:
    return Bot.objects.select_related("owner").get(name=name)


@dataclass
class BotPage:
    bot: Bot
    ratings: list[Rating]
    tournaments: list[Entrant]
    recent_games: list[GameSeat]
    versions: list[str]


def bot_page(*, bot: Bot, recent: int = 20) -> BotPage:
    """What a bot's page shows: ratings per pool, tournaments, recent games (4 queries)."""
    ratings = list(Rating.objects.filter(bot=bot).select_related("pool").order_by("pool__preset", "pool__seats"))
    tournaments = list(
        Entrant.objects.filter(bot=bot).select_related("tournament").order_by("-tournament__created_at")
    )
    recent_games = list(
        GameSeat.objects.filter(bot=bot)
        .select_related("game__table__tournament")
        .order_by("-game_id")[:recent]
    )
    versions = list(bot.versions.order_by("first_seen_at").values_list("version", flat=True))
    return BotPage(bot=bot, ratings=ratings, tournaments=tournaments, recent_games=recent_games, versions=versions)


@dataclass(frozen=True)
class HeadToHead:
    games: int
    a_above: int
    b_above: int
    shared_place: int
    a_points: int
    b_points: int

    @property
    def a_score(self) -> float:
        """a's pairwise score rate, with a 95% interval half-width."""
        return (self.a_above + 0.5 * self.shared_place) / self.games if self.games else 0.0

    @property
    def a_score_ci(self) -> float:
        if self.games < 2:
            return float("inf") if self.games else 0.0
        p = self.a_score
        return Z95 * math.sqrt(max(p * (1 - p), 1e-12) / self.games)


def head_to_head(*, bot_a: Bot, bot_b: Bot, pool: RatingPool | None = None) -> HeadToHead:
    """How two bots fared in the games they shared (1 query)."""
    shared = Game.objects.filter(seats__bot=bot_a).filter(seats__bot=bot_b)
    qs = GameSeat.objects.filter(bot_id__in=[bot_a.pk, bot_b.pk], game__in=shared)
    if pool is not None:
        qs = qs.filter(game__pool=pool)
    by_game: dict[int, dict[int, tuple[int, int]]] = defaultdict(dict)
    for game_id, bot_id, place, points in qs.values_list("game_id", "bot_id", "place", "points"):
        by_game[game_id][bot_id] = (place, points)
    games = a_above = b_above = shared = a_points = b_points = 0
    for seats in by_game.values():
        if bot_a.pk not in seats or bot_b.pk not in seats:
            continue
        (pa, xa), (pb, xb) = seats[bot_a.pk], seats[bot_b.pk]
        games += 1
        a_above += pa < pb
        b_above += pb < pa
        shared += pa == pb
        a_points += xa
        b_points += xb
    return HeadToHead(games, a_above, b_above, shared, a_points, b_points)


# --- games and replays -----------------------------------------------------------------


def game_list(*, tournament: Tournament | None = None, bot: Bot | None = None, table: Table | None = None) -> QuerySet[Game]:
    """Games, newest first, with seats and bots prefetched (2 queries per page)."""
    qs = Game.objects.select_related("table__tournament").prefetch_related(
        Prefetch("seats", queryset=GameSeat.objects.select_related("bot", "version").order_by("seat"))
    )
    if tournament is not None:
        qs = qs.filter(table__tournament=tournament)
    if table is not None:
        qs = qs.filter(table=table)
    if bot is not None:
        qs = qs.filter(seats__bot=bot)
    return qs.order_by("-id")


def game_get(*, game_id: int) -> Game:
    return (
        Game.objects.select_related("table__tournament", "pool")
        .prefetch_related(Prefetch("seats", queryset=GameSeat.objects.select_related("bot", "version").order_by("seat")))
        .get(pk=game_id)
    )


def game_replay(*, game_id: int) -> dict[str, Any]:
    """The engine's replay JSON of a game (1 query)."""
    replay = Replay.objects.get(game_id=game_id)
    return json.loads(replay.decoded_text())
