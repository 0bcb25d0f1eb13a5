"""Reads the pages need that the tournaments app's selectors do not provide.

Every function here runs a fixed number of queries whatever the data size (aggregates in
the database, `select_related`/`prefetch_related` for lists), so page query counts can be
pinned in tests and a 10,000-game tournament renders as fast as a small one.
"""

from __future__ import annotations

import json
import math
import zlib
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from django.core.cache import cache
from django.db.models import Count, F, Max, OuterRef, Prefetch, Q, QuerySet, Subquery, Sum
from django.db.models.functions import Coalesce
from django.utils import timezone

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

RECENT_CHANGE_DAYS = 7
CHART_MAX_POINTS = 240
Z95 = 1.96


# ---------------------------------------------------------------- tournaments
def tournament_list_with_progress(*, statuses: list[str] | None = None, limit: int | None = None) -> QuerySet[Tournament]:
    qs = Tournament.objects.annotate(
        tables_total=Count("tables"),
        tables_done=Count("tables", filter=Q(tables__status=Table.Status.DONE)),
        games_planned_sum=Sum("tables__games_planned"),
        games_done_sum=Sum("tables__games_recorded"),
    ).order_by("-created_at", "-id")
    if statuses:
        qs = qs.filter(status__in=statuses)
    if limit:
        qs = qs[:limit]
    return qs


@dataclass
class Progress:
    status: str
    tables_total: int
    tables_done: int
    tables_running: int
    tables_failed: int
    games_planned: int
    games_done: int
    strikes: int = 0
    forfeits: int = 0

    @property
    def fraction(self) -> float:
        if self.games_planned:
            return min(1.0, self.games_done / self.games_planned)
        return 1.0 if self.status == Tournament.Status.FINISHED else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "tables_total": self.tables_total,
            "tables_done": self.tables_done,
            "tables_running": self.tables_running,
            "tables_failed": self.tables_failed,
            "games_planned": self.games_planned,
            "games_done": self.games_done,
            "fraction": round(self.fraction, 4),
            "percent": round(100 * self.fraction, 1),
        }


def tournament_progress(*, tournament: Tournament) -> Progress:
    """One aggregate query over the tournament's tables."""
    agg = Table.objects.filter(tournament=tournament).aggregate(
        total=Count("id"),
        done=Count("id", filter=Q(status=Table.Status.DONE)),
        running=Count("id", filter=Q(status__in=[Table.Status.RUNNING, Table.Status.WAITING])),
        failed=Count("id", filter=Q(status=Table.Status.FAILED)),
        planned=Sum("games_planned"),
        done_games=Sum("games_recorded"),
    )
    return Progress(
        status=tournament.status,
        tables_total=agg["total"] or 0,
        tables_done=agg["done"] or 0,
        tables_running=agg["running"] or 0,
        tables_failed=agg["failed"] or 0,
        games_planned=agg["planned"] or 0,
        games_done=agg["done_games"] or 0,
    )


@dataclass
class Standing:
    entrant_id: int
    bot_id: int
    bot_name: str
    owner: str
    status: str
    games: int = 0
    points: int = 0
    sum_sq: int = 0
    firsts: int = 0
    avg_place: float | None = None
    strikes: int = 0
    forfeits: int = 0
    rank: int = 0

    @property
    def mean(self) -> float:
        return self.points / self.games if self.games else 0.0

    @property
    def ci95(self) -> float | None:
        """Half-width of the 95% confidence interval of the mean points per game."""
        if self.games < 2:
            return None
        var = (self.sum_sq - self.games * self.mean**2) / (self.games - 1)
        return Z95 * math.sqrt(max(var, 0.0) / self.games)

    @property
    def win_rate(self) -> float:
        return self.firsts / self.games if self.games else 0.0


def tournament_standings(*, tournament: Tournament) -> list[Standing]:
    """Two queries: entrants (with their forfeited tables), then one GROUP BY over the game seats.

    `forfeits` counts tables an entrant forfeited (`TableSeat.forfeited`: absent past the
    connect deadline, or forfeited by the referee mid-table), as the API's standings do, not
    the games played for it after a forfeit.

    `tournaments.selectors.tournament_standings` ranks the same way but streams every seat
    into Python and fits Plackett-Luce strengths: about 2 s for 10,000 games, too slow for a
    page, so the page aggregates in the database instead.
    """
    # A correlated subquery rather than a JOIN: no GROUP BY over the entrant and bot columns.
    forfeited_tables = (
        TableSeat.objects.filter(entrant_id=OuterRef("pk"), forfeited=True)
        .order_by()
        .values("entrant_id")
        .annotate(n=Count("id"))
        .values("n")
    )
    entrants = (
        Entrant.objects.filter(tournament=tournament)
        .select_related("bot__owner")
        .annotate(table_forfeits=Coalesce(Subquery(forfeited_tables), 0))
    )
    rows = {
        e.id: Standing(
            entrant_id=e.id,
            bot_id=e.bot_id,
            bot_name=e.bot.name,
            owner=e.bot.owner.username,
            status=e.status,
            forfeits=e.table_forfeits,
        )
        for e in entrants
    }
    # Filtering on the entrant ids (an indexed foreign key) avoids joining games and tables.
    agg = (
        GameSeat.objects.filter(entrant_id__in=list(rows))
        .values("entrant_id")
        .annotate(
            games=Count("id"),
            pts=Sum("points"),
            sq=Sum(F("points") * F("points")),
            firsts=Count("id", filter=Q(place=1)),
            place_sum=Sum("place"),
            strike_sum=Sum("strikes"),
        )
    )
    for a in agg:
        row = rows.get(a["entrant_id"])
        if row is None:
            continue
        row.games = a["games"]
        row.points = a["pts"] or 0
        row.sum_sq = a["sq"] or 0
        row.firsts = a["firsts"]
        row.avg_place = (a["place_sum"] or 0) / a["games"] if a["games"] else None
        row.strikes = a["strike_sum"] or 0
    # The same order as tournaments.selectors.tournament_standings (the API's standings).
    ordered = sorted(
        rows.values(),
        key=lambda r: (-r.points, r.avg_place if r.games and r.avg_place is not None else 99, -r.firsts, r.bot_name),
    )
    for i, row in enumerate(ordered, start=1):
        row.rank = i
    return ordered


@dataclass
class CrossCell:
    tables: int = 0
    ahead: int = 0
    behind: int = 0
    diff: int = 0


def tournament_cross_table(*, tournament: Tournament, standings: list[Standing]) -> list[tuple[Standing, list[CrossCell | None]]]:
    """Pairwise table results (places at shared tables) in standings order; one query."""
    seats = TableSeat.objects.filter(table__tournament=tournament).values_list(
        "table_id", "entrant_id", "place", "points"
    )
    by_table: dict[int, list[tuple[int, int | None, int]]] = {}
    for table_id, entrant_id, place, points in seats:
        by_table.setdefault(table_id, []).append((entrant_id, place, points))
    cells: dict[tuple[int, int], CrossCell] = {}
    for members in by_table.values():
        for a, pa, xa in members:
            for b, pb, xb in members:
                if a == b:
                    continue
                cell = cells.setdefault((a, b), CrossCell())
                cell.tables += 1
                cell.diff += xa - xb
                if pa is not None and pb is not None:
                    if pa < pb:
                        cell.ahead += 1
                    elif pa > pb:
                        cell.behind += 1
    order = [s.entrant_id for s in standings]
    return [(s, [None if a == s.entrant_id else cells.get((s.entrant_id, a)) for a in order]) for s in standings]


@dataclass
class BracketRound:
    number: int
    tables: list[Table] = field(default_factory=list)


def tournament_tables(*, tournament: Tournament) -> QuerySet[Table]:
    return (
        Table.objects.filter(tournament=tournament)
        .order_by("round", "number")
        .prefetch_related(
            Prefetch(
                "seats",
                queryset=TableSeat.objects.select_related("entrant__bot").order_by("seat"),
            )
        )
    )


def tournament_bracket(*, tournament: Tournament) -> list[BracketRound]:
    rounds: dict[int, BracketRound] = {}
    for table in tournament_tables(tournament=tournament):
        rounds.setdefault(table.round, BracketRound(number=table.round)).tables.append(table)
    return [rounds[k] for k in sorted(rounds)]


def game_list(*, tournament: Tournament | None = None, bot: Bot | None = None) -> QuerySet[Game]:
    qs = Game.objects.all()
    if tournament is not None:
        # An IN over the tournament's table ids lets the database walk games newest first
        # and stop at the page size instead of sorting every game of the tournament.
        qs = qs.filter(table_id__in=Table.objects.filter(tournament=tournament).values("id"))
    if bot is not None:
        qs = qs.filter(seats__bot=bot)
    return qs.select_related("table__tournament").prefetch_related(
        Prefetch("seats", queryset=GameSeat.objects.select_related("bot").order_by("place", "seat"))
    ).order_by("-id")  # ids follow recording order; the primary key index avoids a sort


def tournament_incidents(*, tournament: Tournament, limit: int = 50) -> QuerySet[GameSeat]:
    """Seats that drew strikes or forfeited (the organiser's view of misbehaving bots)."""
    return (
        GameSeat.objects.filter(entrant__tournament=tournament)
        .filter(Q(strikes__gt=0) | Q(forfeited=True))
        .select_related("bot", "game__table")
        .order_by("-game_id")[:limit]
    )


# ---------------------------------------------------------------- ratings
def pool_list() -> QuerySet[RatingPool]:
    return RatingPool.objects.annotate(bot_count=Count("ratings")).order_by("preset", "seats")


SPARK_POINTS = 40


@dataclass
class LeaderRow:
    rank: int
    rating: Rating
    recent_change: float | None
    spark: str = ""  # SVG polyline points of the last SPARK_POINTS ratings


def sparkline(points: list[float], *, width: int = 120, height: int = 26) -> str:
    if len(points) < 2:
        return ""
    lo, hi = min(points), max(points)
    span = (hi - lo) or 1.0
    n = len(points) - 1
    return " ".join(
        f"{width * i / n:.1f},{2 + (height - 4) * (1 - (p - lo) / span):.1f}" for i, p in enumerate(points)
    )


def pool_leaderboard(*, pool: RatingPool, limit: int | None = None) -> list[LeaderRow]:
    """Three queries: ratings with bots and owners, the recent change per bot, and the
    last SPARK_POINTS ratings of every bot (one window query) for the sparklines."""
    ratings = list(
        Rating.objects.filter(pool=pool)
        .select_related("bot__owner")
        .order_by("-rating", "bot__name")[: limit or None]
    )
    since = timezone.now() - timedelta(days=RECENT_CHANGE_DAYS)
    bot_ids = [r.bot_id for r in ratings]
    deltas = dict(
        # Game ids grow with recording time: compare ids (indexed) instead of joining games.
        RatingChange.objects.filter(
            pool=pool,
            bot_id__in=bot_ids,
            game_id__gte=Subquery(
                Game.objects.filter(recorded_at__gte=since).order_by("id").values("id")[:1]
            ),
        )
        .values("bot_id")
        .annotate(d=Sum(F("rating_after") - F("rating_before")))
        .values_list("bot_id", "d")
    )
    from django.db.models import Window
    from django.db.models.functions import RowNumber

    recent = (
        RatingChange.objects.filter(pool=pool, bot_id__in=bot_ids)
        .annotate(pos=Window(RowNumber(), partition_by=[F("bot_id")], order_by=F("seq").desc()))
        .filter(pos__lte=SPARK_POINTS)
        .values_list("bot_id", "seq", "rating_after")
    )
    series: dict[int, list[tuple[int, float]]] = {}
    for bot_id, seq, after in recent:
        series.setdefault(bot_id, []).append((seq, after))
    return [
        LeaderRow(
            rank=i,
            rating=r,
            recent_change=deltas.get(r.bot_id),
            spark=sparkline([v for _, v in sorted(series.get(r.bot_id, []))]),
        )
        for i, r in enumerate(ratings, start=1)
    ]


def home_leaderboards(*, per_pool: int = 5) -> list[tuple[RatingPool, list[Rating]]]:
    """Top bots of every pool in two queries (pools, then all ratings ranked per pool)."""
    from django.db.models import Window
    from django.db.models.functions import RowNumber

    pools = list(RatingPool.objects.order_by("preset", "seats"))
    ranked = (
        Rating.objects.annotate(
            pos=Window(RowNumber(), partition_by=[F("pool_id")], order_by=[F("rating").desc(), F("bot__name").asc()])
        )
        .select_related("bot__owner")
        .order_by("pool_id", "pos")
    )
    tops: dict[int, list[Rating]] = {}
    for r in ranked:
        if r.pos <= per_pool:
            tops.setdefault(r.pool_id, []).append(r)
    return [(p, tops.get(p.id, [])) for p in pools if tops.get(p.id)]


def rating_history(*, bot: Bot) -> list[dict[str, Any]]:
    """Rating series per pool, thinned to at most CHART_MAX_POINTS points each; one query."""
    series: dict[int, dict[str, Any]] = {}
    rows = (
        RatingChange.objects.filter(bot=bot)
        .select_related("pool")
        .order_by("pool_id", "seq")
        .values_list("pool_id", "pool__preset", "pool__seats", "seq", "rating_before", "rating_after")
    )
    for pool_id, preset, seats, _seq, before, after in rows:
        s = series.setdefault(pool_id, {"pool": f"{preset}/{seats}p", "points": [before]})
        s["points"].append(after)
    out = []
    for s in series.values():
        pts = s["points"]
        if len(pts) > CHART_MAX_POINTS:
            step = len(pts) / CHART_MAX_POINTS
            pts = [pts[int(i * step)] for i in range(CHART_MAX_POINTS)] + [pts[-1]]
        s["points"] = pts
        s["games"] = len(s["points"]) - 1
        out.append(s)
    return out


def svg_chart(points: list[float], *, width: int = 600, height: int = 160) -> dict[str, Any]:
    """Coordinates for a server-drawn line chart (no chart library on the client)."""
    if len(points) < 2:
        return {}
    lo, hi = min(points), max(points)
    if hi - lo < 1:
        lo, hi = lo - 5, hi + 5
    pad_l, pad_r, pad_t, pad_b = 44, 8, 10, 18
    w, h = width - pad_l - pad_r, height - pad_t - pad_b
    n = len(points) - 1
    coords = [
        (pad_l + w * i / n, pad_t + h * (1 - (p - lo) / (hi - lo))) for i, p in enumerate(points)
    ]
    return {
        "width": width,
        "height": height,
        "path": "M" + " L".join(f"{x:.1f},{y:.1f}" for x, y in coords),
        "lo": round(lo),
        "hi": round(hi),
        "first": round(points[0]),
        "last": round(points[-1]),
        "x0": pad_l,
        "x1": width - pad_r,
        "y_top": pad_t,
        "y_bottom": pad_t + h,
    }


# ---------------------------------------------------------------- bots
def bot_tournament_results(*, bot: Bot) -> list[dict[str, Any]]:
    """Per tournament: games, points, firsts; one GROUP BY query."""
    rows = list(
        GameSeat.objects.filter(bot=bot, entrant__isnull=False)
        .values("entrant__tournament_id", "entrant__tournament__name", "entrant__tournament__slug", "entrant__tournament__status", "entrant__status")
        .annotate(games=Count("id"), points=Sum("points"), firsts=Count("id", filter=Q(place=1)), last=Max("game__recorded_at"))
        .order_by("-last")
    )
    for r in rows:
        r["per_game"] = (r["points"] or 0) / r["games"] if r["games"] else 0.0
    return rows


def bot_head_to_head(*, bot: Bot, limit: int = 50) -> list[dict[str, Any]]:
    """Against each opponent: shared games, how often this bot finished ahead, point balance."""
    rows = (
        GameSeat.objects.filter(game__seats__bot=bot)
        .exclude(bot=bot)
        .values("bot_id", "bot__name")
        .annotate(
            games=Count("id"),
            ahead=Count("id", filter=Q(game__seats__place__lt=F("place"))),
            behind=Count("id", filter=Q(game__seats__place__gt=F("place"))),
            opp_points=Sum("points"),
            my_points=Sum("game__seats__points"),
        )
        .order_by("-games", "bot__name")[:limit]
    )
    out = list(rows)
    for r in out:
        r["balance"] = (r["my_points"] or 0) - (r["opp_points"] or 0)
    return out


# ---------------------------------------------------------------- notable games
NOTABLE_SCAN = 300
NOTABLE_CACHE_SECONDS = 30


def notable_games(*, limit: int = 6) -> list[dict[str, Any]]:
    """Recent games worth watching: upsets, chop chains, frozen players, instant wins.

    Reads the last NOTABLE_SCAN replays (about 1 KB each) and caches the pick briefly, so
    the home page stays cheap however many games are played.
    """
    cached = cache.get("web:notable_games")
    if cached is not None:
        return cached
    replays = Replay.objects.order_by("-game_id").values_list(
        "game_id", "data", "game__table__tournament__name"
    )[:NOTABLE_SCAN]
    picks: list[dict[str, Any]] = []
    for game_id, blob, tournament_name in replays:
        try:
            data = json.loads(zlib.decompress(bytes(blob)))
        except (ValueError, zlib.error):
            continue
        result = data.get("result") or {}
        payments = result.get("payments") or []
        chop_points = sum(p.get("points", 0) for p in payments if "chop" in str(p.get("reason", "")))
        chops = sum(1 for p in payments if "chop" in str(p.get("reason", "")))
        frozen = result.get("frozen") or []
        tags = []
        score = 0
        if result.get("instant_winner") is not None:
            tags.append("instant win")
            score += 6
        if frozen:
            tags.append(f"{len(frozen)} frozen")
            score += 4 * len(frozen)
        if chops:
            tags.append(f"chop chain ({chop_points} pts)")
            score += 2 + chop_points
        if score:
            picks.append({"game_id": game_id, "tournament": tournament_name, "tags": tags, "score": score})
    upsets = (
        RatingChange.objects.filter(game__seats__place=1, game__seats__bot=F("bot"))
        .annotate(gain=F("rating_after") - F("rating_before"))
        .filter(gain__gt=12)
        .select_related("bot", "game__table__tournament")
        .only("game_id", "rating_before", "rating_after", "bot__name", "game__table__tournament__name")
        .order_by("-game_id")[:20]
    )
    for ch in upsets:
        picks.append({"game_id": ch.game_id, "tournament": ch.game.table.tournament.name, "tags": [f"upset: {ch.bot.name} +{ch.delta:.0f}"], "score": 3 + ch.delta / 4})
    seen: set[int] = set()
    out = []
    for p in sorted(picks, key=lambda p: -p["score"]):
        if p["game_id"] in seen:
            continue
        seen.add(p["game_id"])
        out.append(p)
        if len(out) >= limit:
            break
    cache.set("web:notable_games", out, NOTABLE_CACHE_SECONDS)
    return out
