"""Reads only the pages need, and the shaping of selector results for templates.

Everything the API also shows (progress, standings, cross-tables, brackets, tables, games,
pools) comes from `tournaments.selectors`, so a page and the API cannot disagree: copies kept
here once drifted apart. What stays here has no API counterpart: leaderboard sparklines and
recent changes, rating charts, a bot's results and head-to-heads, incidents, notable games.

Every function here runs a fixed number of queries whatever the data size (aggregates in
the database, `select_related`/`prefetch_related` for lists), so page query counts can be
pinned in tests and a 10,000-game tournament renders as fast as a small one. Like the
selectors, they show only results of games whose deal is revealed (`tournaments.sealing`;
docs/fair-play.md): ratings need no filter, since a game is rated only once revealed.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.core.cache import cache
from django.db.models import Count, F, Max, Q, QuerySet, Subquery, Sum
from django.utils import timezone

from bots_sdk.rules import ReplayError
from tournaments import sealing
from tournaments.models import (
    Bot,
    Game,
    GameSeat,
    Rating,
    RatingChange,
    RatingPool,
    Replay,
    Tournament,
)
from tournaments.selectors.cross_table import CrossTable
from tournaments.selectors.ratings import pool_leaderboard, rating_list
from tournaments.selectors.standings import StandingRow
from tournaments.selectors.tournaments import Progress, tournament_progress

RECENT_CHANGE_DAYS = 7
CHART_MAX_POINTS = 240


# ---------------------------------------------------------------- tournaments
def tournaments_with_progress(*, tournaments: Iterable[Tournament]) -> list[tuple[Tournament, Progress]]:
    """Rows of `tournament_list` with their progress, for the tournament tables of
    the home, list and organise pages (no further queries: the rows carry the counts)."""
    return [(t, tournament_progress(tournament=t)) for t in tournaments]


def cross_table_rows(
    *, cross: CrossTable, standings: list[StandingRow]
) -> list[tuple[StandingRow, list[dict[str, float] | None]]]:
    """The selector's cross-table in standings order, as the page draws it: no cell on the
    diagonal or for a pair that shared no game."""
    order = [s.entrant_id for s in standings]
    rows = []
    for s in standings:
        mine = cross.cells.get(s.entrant_id, {})
        cells = [mine.get(b) if b != s.entrant_id else None for b in order]
        rows.append((s, [c if c and c["games"] else None for c in cells]))
    return rows


def _listed(items: list) -> str:
    words = [str(i) for i in items]
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} and {words[-1]}"


def knockout_round_labels(*, rounds: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """What the knockout page's header says of each round: its real table sizes and games
    ("round 1: tables of 3, 3 and 2 players, 6, 6 and 4 games"), planned rounds marked."""
    labels = []
    for r in rounds:
        sizes, games = r["table_sizes"], r["games"]
        name = "final" if r["final"] else f"round {r['round']}"
        if len(sizes) == 1:
            text = f"{sizes[0]} players, {games[0]} game{'s' if games[0] != 1 else ''}"
        elif len(set(sizes)) == 1 and len(set(games)) == 1:
            text = f"{len(sizes)} tables of {sizes[0]}, {games[0]} games each"
        else:
            text = f"tables of {_listed(sizes)} players, {_listed(games)} games"
        labels.append({"name": name, "text": text, "planned": r["planned"], "round": r["round"], "sizes": sizes})
    return labels


def tournament_incidents(*, tournament: Tournament, limit: int = 50) -> QuerySet[GameSeat]:
    """Seats that drew strikes or forfeited in revealed games (the organiser's view of
    misbehaving bots)."""
    return (
        GameSeat.objects.filter(entrant__tournament=tournament)
        .exclude(game_id__in=sealing.sealed_games(tournament=tournament))
        .filter(Q(strikes__gt=0) | Q(forfeited=True))
        .select_related("bot", "game__table")
        .order_by("-game_id")[:limit]
    )


# ---------------------------------------------------------------- ratings
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


def leaderboard_rows(*, pool: RatingPool, limit: int | None = None) -> list[LeaderRow]:
    """The API's leaderboard (`pool_leaderboard`: revoked bots left out) with
    what the page adds. Three queries: the ratings with bots and owners, the recent change
    per bot, and the last SPARK_POINTS ratings of every bot (one window query)."""
    ratings = list(pool_leaderboard(pool=pool)[: limit or None])
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
        # ranked among the bots the leaderboards list (revoked ones are left out)
        rating_list().annotate(
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
        s = series.setdefault(pool_id, {"pool": f"{preset}-{seats}", "slug": f"{preset}-{seats}", "points": [before]})
        s["points"].append(after)
    out = []
    for s in series.values():
        pts = s["points"]
        s["games"] = len(pts) - 1  # before thinning: the games the series stands for
        if len(pts) > CHART_MAX_POINTS:
            step = len(pts) / CHART_MAX_POINTS
            pts = [pts[int(i * step)] for i in range(CHART_MAX_POINTS)] + [pts[-1]]
        s["points"] = pts
        out.append(s)
    return out


#: The smallest rating range a chart spans: a bot moving ±7 Elo should look nearly flat,
#: not fill the chart as if it had swung.
CHART_MIN_SPAN = 100.0


def svg_chart(points: list[float], *, games: int | None = None, width: int = 600, height: int = 160) -> dict[str, Any]:
    """Coordinates for a server-drawn line chart (no chart library on the client): the
    line, the y-axis's low and high (spanning at least CHART_MIN_SPAN Elo, centred on the
    series) and an x-axis of game numbers (`games`: how many games the points stand for,
    when they were thinned), with ticks at the start, middle and end."""
    if len(points) < 2:
        return {}
    lo, hi = min(points), max(points)
    if hi - lo < CHART_MIN_SPAN:
        mid = (hi + lo) / 2
        lo, hi = mid - CHART_MIN_SPAN / 2, mid + CHART_MIN_SPAN / 2
    pad_l, pad_r, pad_t, pad_b = 44, 8, 10, 30
    w, h = width - pad_l - pad_r, height - pad_t - pad_b
    n = len(points) - 1
    total = games if games is not None else n
    coords = [
        (pad_l + w * i / n, pad_t + h * (1 - (p - lo) / (hi - lo))) for i, p in enumerate(points)
    ]
    ticks = sorted({0, total // 2, total})
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
        "games": total,
        "x_ticks": [{"x": round(pad_l + w * t / total, 1) if total else pad_l, "label": t} for t in ticks],
        "tick_label_y": pad_t + h + 13,
        "axis_label_y": height - 2,
        "x_mid": round(pad_l + w / 2, 1),
    }


# ---------------------------------------------------------------- bots
def bot_tournament_results(*, bot: Bot) -> list[dict[str, Any]]:
    """Per tournament: revealed games, points, firsts; one GROUP BY query."""
    rows = list(
        GameSeat.objects.filter(sealing.revealed("game__"), bot=bot, entrant__isnull=False)
        .values("entrant__tournament_id", "entrant__tournament__name", "entrant__tournament__slug", "entrant__tournament__status", "entrant__status")
        .annotate(games=Count("id"), points=Sum("points"), firsts=Count("id", filter=Q(place=1)), last=Max("game__recorded_at"))
        .order_by("-last")
    )
    for r in rows:
        r["per_game"] = (r["points"] or 0) / r["games"] if r["games"] else 0.0
    return rows


def bot_head_to_head(*, bot: Bot, limit: int = 50) -> list[dict[str, Any]]:
    """Against each opponent, over revealed games: shared games, how often this bot finished
    ahead, point balance."""
    rows = (
        GameSeat.objects.filter(sealing.revealed("game__"), game__seats__bot=bot)
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
    """Recent games worth watching: chop chains, frozen players, upsets, instant wins that
    were played out; among those, longer games first (more play to watch).

    A game with no move (an instant win declared on the deal, the most common "notable"
    before) has nothing to watch and is never picked. Reads the last NOTABLE_SCAN replays
    (about 1 KB each) and caches the pick briefly, so the home page stays cheap however
    many games are played.
    """
    cached = cache.get("web:notable_games")
    if cached is not None:
        return cached
    # Only games whose deal is revealed: an "instant win" or a chop chain tells the tables
    # still playing that deal something about its hands.
    replays = Replay.objects.filter(sealing.revealed("game__")).order_by("-game_id").values_list(
        "game_id", "data", "game__table__tournament__name"
    )[:NOTABLE_SCAN]
    picks: list[dict[str, Any]] = []
    silent: set[int] = set()  # games with no move
    for game_id, blob, tournament_name in replays:
        try:
            data = Replay.read_data(blob, game_id=game_id)
        except ReplayError:
            continue  # a damaged replay is left out of the highlights
        moves = data.get("moves") or []
        if not moves:
            silent.add(game_id)
            continue  # nothing was played: nothing to watch
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
            # More play, more to watch: up to 3 points for a long game (120 moves and over).
            score += min(len(moves), 120) / 40
            tags.append(f"{len(moves)} moves")
            picks.append({"game_id": game_id, "tournament": tournament_name, "tags": tags, "score": score})
    upsets = (
        # Rated games are revealed ones; the filter also keeps out any rated before that rule.
        RatingChange.objects.filter(sealing.revealed("game__"), game__seats__place=1, game__seats__bot=F("bot"))
        .annotate(gain=F("rating_after") - F("rating_before"))
        .filter(gain__gt=12)
        .select_related("bot", "game__table__tournament")
        .only("game_id", "rating_before", "rating_after", "bot__name", "game__table__tournament__name")
        .order_by("-game_id")[:20]
    )
    for ch in upsets:
        if ch.game_id in silent:
            continue
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
