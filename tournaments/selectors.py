"""Every read the API and the spectator pages share, in a fixed small number of queries.

The web pages, the API, the live-progress endpoints and the demo command all read progress,
standings, cross-tables, brackets, tables and games here, so they cannot disagree (copies in
the web app once drifted apart). Each selector's query count is pinned in
tests/tournaments/test_selectors.py, so pages stay free of N+1 queries as data grows.
Sums are aggregated in the database; only statistics that need every game (Plackett-Luce,
pairwise results) read the seats, and those are summed with numpy.

Every read here is public, so every read is **sealed** (docs/fair-play.md): a game's result
(places, points, strikes, forfeits, its rating change) and everything aggregated from it is
shown only once the game's deal is revealed — played at every table of its deal group. A
result of a deal that another table has still to play would tell the bots there something
about the cards they are about to be dealt (a stuck-card penalty says a seat held 2s or a
bomb). So lists leave sealed games out, standings and head-to-heads sum revealed games only,
and a table's result (its seats' points, places, advancement and forfeits) is shown once
the table is closed and every game it recorded is revealed. Progress counts games played,
not their results.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from itertools import chain
from typing import Any

import numpy as np
from django.conf import settings
from django.core.cache import cache
from django.db.models import (
    Case,
    CharField,
    Count,
    F,
    Max,
    OuterRef,
    Prefetch,
    Q,
    QuerySet,
    Subquery,
    Sum,
    Value,
    When,
    prefetch_related_objects,
)
from django.db.models.functions import Coalesce
from django.utils import timezone

from tournaments.models import (
    Bot,
    Deal,
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
from tournaments.scheduling.knockout import knockout_advance_count, knockout_plan
from tournaments.scoring.intervals import half_width
from tournaments.sealing import (
    CLOSED_STATUSES,
    deals_revealed,
    game_check,
    reveal_state,
    revealed,
    sealed_games,
    seat_results_public,
    table_has_sealed,
    table_results_public,
    table_seat_result,
)

DONE_STATUSES = CLOSED_STATUSES
Z95 = 1.96


# --- tournaments -----------------------------------------------------------------------


RUNNING_STATUSES = (Table.Status.RUNNING, Table.Status.WAITING)
PROGRESS_COUNTS = (
    "entrant_count", "tables_total", "tables_done", "tables_running", "tables_failed",
    "games_done", "games_planned", "rounds_created",
)


def _progress_counts(tables: str) -> dict[str, Any]:
    """A tournament's progress aggregated over its tables, reached through `tables`
    ("tables__" from Tournament, "" from Table).

    A closed table (done, failed or cancelled) plans only the games it recorded: it will
    play no more, so the bar of a tournament whose every table is closed reads 100 %, and
    the games bar agrees with the tables the "tables done" count calls done.
    """
    table = f"{tables}id" if tables else "id"
    closed = Q(**{f"{tables}status__in": DONE_STATUSES})
    return {
        "tables_total": Count(table),
        "tables_done": Count(table, filter=closed),
        "tables_running": Count(table, filter=Q(**{f"{tables}status__in": RUNNING_STATUSES})),
        "tables_failed": Count(table, filter=Q(**{f"{tables}status": Table.Status.FAILED})),
        "games_done": Sum(f"{tables}games_recorded"),
        "games_planned": Sum(
            Case(When(closed, then=F(f"{tables}games_recorded")), default=F(f"{tables}games_planned"))
        ),
        # Knockout rounds are created one after another, so the last number says which exist.
        "rounds_created": Max(f"{tables}round"),
    }


def _entrant_count(tournament: OuterRef | int) -> Subquery:
    return Subquery(
        Entrant.objects.filter(tournament_id=tournament)
        .order_by()
        .values("tournament_id")
        .annotate(n=Count("id"))
        .values("n")
    )


def _winner() -> Case:
    """The bot that won a finished knockout: the one seat that went through the last round
    (the final's first; or the only entrant left when the others of a round forfeited).
    Null for other formats and for a knockout not finished."""
    last_round = Table.objects.filter(tournament_id=OuterRef("table__tournament_id")).order_by("-round").values("round")[:1]
    seat = (
        TableSeat.objects.filter(table__tournament_id=OuterRef("pk"), advanced=True, table__round=Subquery(last_round))
        .order_by("table__number")
        .values("entrant__bot__name")[:1]
    )
    finished_knockout = Q(status=Tournament.Status.FINISHED, format=Tournament.Format.KNOCKOUT)
    return Case(When(finished_knockout, then=Subquery(seat)), default=Value(None), output_field=CharField())


def tournament_list(
    *, status: str | None = None, statuses: Iterable[str] | None = None, format: str | None = None
) -> QuerySet[Tournament]:
    """Tournaments, newest first, each carrying its entrant count, progress counts and
    knockout `winner` (1 query), so `tournament_progress` of a row needs no query of its own."""
    qs = Tournament.objects.select_related("organiser", "pool").annotate(
        # A subquery, not a JOIN: joining entrants and tables would multiply the sums.
        entrant_count=Coalesce(_entrant_count(OuterRef("pk")), 0),
        winner=_winner(),
        **_progress_counts("tables__"),
    )
    if status:
        qs = qs.filter(status=status)
    if statuses is not None:
        qs = qs.filter(status__in=list(statuses))
    if format:
        qs = qs.filter(format=format)
    return qs.order_by("-created_at", "-id")


def tournament_get(*, slug: str) -> Tournament:
    """A tournament with its knockout `winner` (1 query)."""
    return Tournament.objects.select_related("organiser", "pool").annotate(winner=_winner()).get(slug=slug)


ACTIVITY_STATES = (
    "draft", "scheduled", "starting", "not_started", "running", "waiting", "not_ticking",
    "finished", "cancelled",
)


@dataclass(frozen=True)
class Activity:
    """What a tournament is doing now, for people: its status says what was decided (a
    ladder is `running` until cancelled), this says whether anything happens. "Running" is
    shown only for what runs; a ladder whose last tick started no table is `waiting` (with
    the tick's reason), one that no tick has looked at for a while is `not_ticking`, and a
    scheduled start whose time passed long ago is `not_started` (nothing starts it: Celery
    beat is not running)."""

    state: str  # one of ACTIVITY_STATES
    label: str
    reason: str = ""


def tick_overdue_s() -> float:
    """Seconds without a tick after which nobody ticks: two periods of the scheduler
    (settings.TIENLEN_TICK_SECONDS) and half a minute of slack for a loaded machine."""
    return 2 * float(getattr(settings, "TIENLEN_TICK_SECONDS", 30.0)) + 30.0


def _ago(seconds: float) -> str:
    seconds = max(0, int(seconds))
    if seconds < 120:
        return f"{seconds} s"
    if seconds < 7200:
        return f"{seconds // 60} min"
    return f"{seconds // 3600} h"


def _when(moment: datetime) -> str:
    return f"{moment.astimezone(UTC):%Y-%m-%d %H:%M:%S} UTC"


BEAT_HINT = (
    "Ladder tables and scheduled starts need Celery beat: run `celery -A tienlen_site beat` "
    "beside the workers (`make demo` and the Docker deployment start it)."
)


def tournament_activity(*, tournament: Tournament, open_tables: int, now: datetime | None = None) -> Activity:
    """The tournament's `Activity` from its row and how many of its tables are open (not
    closed: pending, running or waiting); no query."""
    now = now or timezone.now()
    status = tournament.status
    tick = float(getattr(settings, "TIENLEN_TICK_SECONDS", 30.0))
    overdue = tick_overdue_s()
    S = Tournament.Status
    if status in (S.DRAFT, S.FINISHED, S.CANCELLED):
        return Activity(status, Tournament.Status(status).label, tournament.status_reason)
    if status == S.SCHEDULED:
        starts = tournament.starts_at
        if starts is not None and starts > now:
            return Activity("scheduled", "Scheduled", f"Starts at {_when(starts)}.")
        if starts is not None and (now - starts).total_seconds() > overdue:
            return Activity(
                "not_started", "Not started",
                f"Its start time, {_when(starts)}, passed {_ago((now - starts).total_seconds())} ago and "
                f"nothing has started it: no scheduler tick (every {tick:g} s) picked it up. {BEAT_HINT}",
            )
        return Activity("starting", "Starting", "Its first tables are being created.")
    if tournament.format != Tournament.Format.LADDER:
        return Activity("running", "Running", tournament.status_reason)
    last = tournament.ticked_at
    since = last or tournament.started_at
    if since is not None and (now - since).total_seconds() > overdue:
        playing = (
            f" Its {open_tables} open table{'s' if open_tables != 1 else ''} still play, but no new one will start."
            if open_tables else " No new table will start."
        )
        looked = f"since {_when(last)} ({_ago((now - last).total_seconds())} ago)" if last else (
            f"since it started, {_ago((now - since).total_seconds())} ago"
        )
        return Activity(
            "not_ticking", "Not ticking",
            f"Nobody ticks this ladder: no scheduler tick (every {tick:g} s) has looked at it {looked}."
            f"{playing} {BEAT_HINT}",
        )
    if last is None:
        return Activity("starting", "Starting", f"The scheduler's first tick (every {tick:g} s) starts its first table.")
    if open_tables:
        return Activity("running", "Running", tournament.status_reason)
    if tournament.status_reason:
        return Activity("waiting", "Waiting", tournament.status_reason)
    return Activity("running", "Running", "")


@dataclass(frozen=True)
class Progress:
    status: str
    tables_total: int
    tables_done: int  # done, failed or cancelled: closed for good
    tables_running: int
    games_done: int
    games_planned: int
    tables_failed: int = 0
    activity: Activity = field(default_factory=lambda: Activity("", ""))

    @property
    def fraction(self) -> float:
        if not self.games_planned:
            return 1.0 if self.status == Tournament.Status.FINISHED else 0.0
        return min(1.0, self.games_done / self.games_planned)

    @property
    def percent(self) -> float:
        return round(100.0 * self.fraction, 1)

    def as_dict(self) -> dict[str, Any]:
        """The one progress document: the API, the page's `progress.json` and its event
        stream all send this."""
        return {
            "status": self.status,
            "tables_total": self.tables_total,
            "tables_done": self.tables_done,
            "tables_running": self.tables_running,
            "tables_failed": self.tables_failed,
            "games_done": self.games_done,
            "games_planned": self.games_planned,
            "fraction": round(self.fraction, 4),
            "percent": self.percent,
            # What it is doing now (selectors.Activity): "running" only for what runs.
            "activity": self.activity.state,
            "activity_label": self.activity.label,
            "reason": self.activity.reason,
        }


def tournament_progress(*, tournament: Tournament) -> Progress:
    """Tables done / total and games done, now: 1 query, none for a row of
    `tournament_list` (it carries the counts).

    A running knockout's later rounds do not exist yet; they are counted from the bracket's
    shape, or the bar would reach 100 % every time a round ends.
    """
    if all(name in tournament.__dict__ for name in PROGRESS_COUNTS):
        row = {name: tournament.__dict__[name] for name in PROGRESS_COUNTS}
    else:
        # Over the tables alone: grouping a tournament row (and its organiser and pool) by
        # itself costs more than the counts. The entrant count is one uncorrelated subquery.
        row = Table.objects.filter(tournament_id=tournament.pk).aggregate(
            entrant_count=Max(_entrant_count(tournament.pk)), **_progress_counts("")
        )
    tables_total, games_planned = row["tables_total"] or 0, row["games_planned"] or 0
    running_knockout = tournament.format == Tournament.Format.KNOCKOUT and tournament.status == Tournament.Status.RUNNING
    if running_knockout and (row["entrant_count"] or 0) >= 2:
        rounds = knockout_plan(row["entrant_count"], tournament.seats_per_table, tournament.advance_per_table)
        for sizes in rounds[row["rounds_created"] or 0 :]:
            tables_total += len(sizes)
            games_planned += sum(tournament.games_per_table or tournament.duplicate_sets * size for size in sizes)
    return Progress(
        status=tournament.status,
        tables_total=tables_total,
        tables_done=row["tables_done"] or 0,
        tables_running=row["tables_running"] or 0,
        games_done=row["games_done"] or 0,
        games_planned=games_planned,
        tables_failed=row["tables_failed"] or 0,
        activity=tournament_activity(
            tournament=tournament, open_tables=(row["tables_total"] or 0) - (row["tables_done"] or 0)
        ),
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


def tournament_standings(*, tournament: Tournament, with_strength: bool = True) -> list[StandingRow]:
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
    """
    # Correlated subqueries rather than JOINs: no GROUP BY over the entrant and bot columns.
    # Only tables whose result is public count (closed, every game revealed).
    forfeited_tables = (
        TableSeat.objects.filter(seat_results_public(), entrant_id=OuterRef("pk"), forfeited=True)
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
        for row in GameSeat.objects.filter(entrant_id__in=[e.id for e in entrants])
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
            GameSeat.objects.filter(game__table__tournament_id=tournament.pk)
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


def tournament_bracket(*, tournament: Tournament) -> list[dict[str, Any]]:
    """Rounds -> tables -> seats, for drawing a bracket (2 queries). A seat's points, place,
    advanced and forfeited are None until its table's result is public (`results_public`:
    the table is closed and every game it recorded is revealed)."""
    tables = (
        Table.objects.filter(tournament=tournament)
        .annotate(results_public=table_results_public())
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
                "results_public": table.results_public,
                "seats": [
                    {
                        "seat": s.seat,
                        "entrant_id": s.entrant_id,
                        "bot_id": s.entrant.bot_id,
                        "bot_name": s.entrant.bot.name,
                        "seed_rank": s.entrant.seed_rank,
                        **table_seat_result(s, public=table.results_public),
                    }
                    for s in table.seats.all()
                ],
            }
        )
    last = max(rounds, default=None)
    return [
        {
            "round": r,
            # What each table of the round really seats (a round can mix 3- and 2-seat tables).
            "table_sizes": [len(t["seats"]) for t in rounds[r]],
            "final": r == last and len(rounds[r]) == 1,
            "tables": rounds[r],
        }
        for r in sorted(rounds)
    ]


def knockout_rounds(*, tournament: Tournament, bracket: list[dict[str, Any]], entrants: int) -> list[dict[str, Any]]:
    """Every round of a knockout with its real table sizes and games per table, then the
    rounds still to come as planned from who goes through (no query: from the bracket).

    Each: {round, table_sizes, games, final, planned}.
    """
    advance = tournament.advance_per_table
    rounds = [
        {
            "round": r["round"],
            "table_sizes": r["table_sizes"],
            "games": [t["games_planned"] for t in r["tables"]],
            "final": r["final"],
            "planned": False,
        }
        for r in bracket
    ]
    if tournament.status in (Tournament.Status.FINISHED, Tournament.Status.CANCELLED):
        return rounds
    if rounds:
        last = rounds[-1]["table_sizes"]
        going_on = 0 if len(last) == 1 else sum(knockout_advance_count(size, advance) for size in last)
    else:
        going_on = entrants
    if going_on >= 2:
        number = rounds[-1]["round"] if rounds else 0
        plan = knockout_plan(going_on, tournament.seats_per_table, advance)
        for i, sizes in enumerate(plan, start=1):
            rounds.append({
                "round": number + i,
                "table_sizes": sizes,
                "games": [tournament.games_per_table or tournament.duplicate_sets * size for size in sizes],
                "final": i == len(plan),
                "planned": True,
            })
    return rounds


def table_list(*, tournament: Tournament) -> QuerySet[Table]:
    """Tables with their seats (2 queries a page), each annotated `results_public` (closed,
    every game recorded revealed) and `sealed` (it recorded a game whose deal is not
    revealed): show a seat's result through `table_seat_result`, and the table's
    `last_error` only while it is not sealed."""
    return (
        Table.objects.filter(tournament=tournament)
        .annotate(results_public=table_results_public(), sealed=table_has_sealed(OuterRef("pk")))
        .order_by("round", "number")
        .prefetch_related(Prefetch("seats", queryset=TableSeat.objects.select_related("entrant__bot")))
    )


# --- ratings ---------------------------------------------------------------------------


def pool_list() -> QuerySet[RatingPool]:
    return RatingPool.objects.annotate(bots=Count("ratings")).order_by("preset", "seats")


def pool_get(*, preset: str, seats: int) -> RatingPool:
    return RatingPool.objects.get(preset=preset, seats=seats)


def rating_list() -> QuerySet[Rating]:
    """The ratings public rankings show: bots whose token was revoked are left out (their
    pages and rating history stay)."""
    return Rating.objects.filter(bot__revoked_at__isnull=True)


def pool_leaderboard(*, pool: RatingPool, min_games: int = 0) -> QuerySet[Rating]:
    """Ratings of a pool, best first (1 query; page it)."""
    return (
        rating_list().filter(pool=pool, games__gte=min_games)
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
        GameSeat.objects.filter(revealed("game__"), bot=bot)
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
    """How two bots fared in the revealed games they shared (1 query)."""
    shared = Game.objects.filter(revealed(), seats__bot=bot_a).filter(seats__bot=bot_b)
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
    """Revealed games, newest first, with seats and bots prefetched (2 queries per page).
    Sealed games (their deal is still to be played at another table) are left out."""
    qs = Game.objects.select_related("table__tournament", "deal").prefetch_related(
        Prefetch("seats", queryset=GameSeat.objects.select_related("bot", "version").order_by("seat"))
    )
    if tournament is not None:
        # An IN over the tournament's table ids lets the database walk games newest first
        # and stop at the page size instead of sorting every game of the tournament.
        qs = qs.filter(table_id__in=Table.objects.filter(tournament_id=tournament.pk).values("id"))
        qs = qs.exclude(id__in=sealed_games(tournament=tournament))
    else:
        qs = qs.filter(revealed())
    if table is not None:
        qs = qs.filter(table=table)
    if bot is not None:
        qs = qs.filter(seats__bot=bot)
    return qs.order_by("-id")  # ids follow recording order; the primary key index avoids a sort


def game_get(*, game_id: int) -> Game:
    """A revealed game with its seats (2 queries); DealWithheld (its result is sealed) while
    its deal is still to be played at another table of its group."""
    game = game_check(Game.objects.select_related("table__tournament", "pool", "deal").get(pk=game_id))
    prefetch_related_objects(
        [game], Prefetch("seats", queryset=GameSeat.objects.select_related("bot", "version").order_by("seat"))
    )
    return game


# --- deals (docs/fair-play.md) ------------------------------------------------------------

PROOF_SCHEMA = "tienlen.deal-proof/1"


def game_replay(*, game_id: int) -> dict[str, Any]:
    """The engine's replay JSON of a game (1 query); DealWithheld until its deal is revealed,
    ReplayError (bots_sdk.rules) if the stored replay cannot be read."""
    replay = Replay.objects.select_related("game__deal", "game__table__tournament").get(game_id=game_id)
    game_check(replay.game, what="replay")
    return replay.read()


def game_seating(*, game: Game) -> list[dict[str, Any]]:
    """Who sat where in a game, sealed or not (1 query): seat numbers and bot names only,
    which are public from the draw on; never its places, points or strikes."""
    return [
        {"seat": seat, "bot_name": name}
        for seat, name in GameSeat.objects.filter(game_id=game.pk).order_by("seat").values_list("seat", "bot__name")
    ]


def game_replay_stored(*, game: Game | int) -> Replay:
    """A revealed game's stored replay row (1 query; 2 from an id), its `game` set: for the
    pages that show the moves and timing or serve the text as it was stored. The game is
    checked before the replay is looked for, so a sealed game answers as every sealed game
    does: Game.DoesNotExist (no such game), DealWithheld (sealed; `.game` has its table and
    tournament), Replay.DoesNotExist (none stored)."""
    if not isinstance(game, Game):
        game = Game.objects.select_related("table__tournament", "deal").get(pk=game)
    game_check(game, what="replay")
    replay = Replay.objects.get(game_id=game.pk)
    replay.game = game
    return replay


def game_proof(*, game_id: int) -> dict[str, Any]:
    """Everything needed to verify a game's deal and result in one document (schema
    tienlen.deal-proof/1, docs/fair-play.md): the commitment, the salt, the revealed seed,
    the recorded result and the replay (2 queries). DealWithheld until the reveal,
    ReplayError if the stored replay cannot be read."""
    from bots_sdk.fairplay import COMMIT_SCHEME, DEAL_ALGORITHM

    game = game_check(Game.objects.select_related("table__tournament", "deal").get(pk=game_id), what="replay")
    tournament = game.table.tournament
    replay = Replay.objects.get(game_id=game.pk)
    return {
        "schema": PROOF_SCHEMA,
        "game": {
            "id": game.pk, "tournament": tournament.slug, "round": game.table.round,
            "table": game.table.number, "index": game.index, "players": game.players,
            "finishing_order": game.finishing_order, "points": game.points,
        },
        "deal": {
            "group": game.deal.group, "index": game.deal.index, "algorithm": DEAL_ALGORITHM,
            "commitment_scheme": COMMIT_SCHEME, "salt": tournament.salt,
            "commitment": game.deal.commitment, "seed": game.deal.seed,
            "revealed_at": game.deal.revealed_at.isoformat(),
        },
        "reproducible": tournament.reproducible,
        "replay": replay.read(),
    }


def deal_list(*, tournament: Tournament, group: int | None = None, revealed: bool | None = None) -> QuerySet[Deal]:
    """A tournament's deals in (group, index) order: commitments for all, seeds only on the
    revealed ones (read them through `sealing.deal_seed`)."""
    qs = Deal.objects.filter(tournament_id=tournament.pk)
    if group is not None:
        qs = qs.filter(group=group)
    if revealed is not None:
        qs = qs.filter(deals_revealed(revealed))
    return qs.order_by("group", "index")


def deal_group_tables(*, tournament: Tournament, groups: Iterable[int]) -> dict[int, list[Table]]:
    """The tables of each deal group (1 query)."""
    out: dict[int, list[Table]] = defaultdict(list)
    for table in Table.objects.filter(tournament_id=tournament.pk, deal_group__in=list(groups)).order_by("round", "number"):
        out[table.deal_group].append(table)
    return dict(out)


def deal_counts(*, tournament: Tournament) -> dict[str, int]:
    """How many deals are committed and how many revealed (1 query)."""
    row = Deal.objects.filter(tournament_id=tournament.pk).aggregate(
        committed=Count("id"), revealed=Count("id", filter=deals_revealed())
    )
    return {"committed": row["committed"] or 0, "revealed": row["revealed"] or 0}


# --- luck-adjusted standings -----------------------------------------------------------


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

    The seats come without their deal's baseline and the baselines once per deal: joined
    to every seat, the same JSON was fetched and parsed four times a game."""
    from tournaments.scoring.adjusted import GameRow, adjusted_standings

    baselines = dict(
        Deal.objects.filter(deals_revealed(), tournament=tournament, baseline__isnull=False)
        .values_list("pk", "baseline")
    ) if with_baselines else {}
    seats = (
        GameSeat.objects.filter(revealed("game__"), game__table__tournament=tournament)
        .order_by("game_id", "seat")
        .values_list("game_id", "entrant_id", "points", "game__deal_id")
    )
    games: dict[int, tuple[int, list[int], list[int]]] = {}
    for game_id, entrant_id, points, deal_id in seats:
        row = games.get(game_id)
        if row is None:
            row = games[game_id] = (deal_id, [], [])
        row[1].append(entrant_id)
        row[2].append(points)
    rows = []
    for deal_id, entrants, points in games.values():
        baseline = baselines.get(deal_id)
        rows.append(GameRow(
            deal=deal_id, entrants=entrants, points=points,
            baseline=baseline if isinstance(baseline, list) and len(baseline) == len(points) else None,
        ))
    deals_with_baseline = len({g.deal for g in rows if g.baseline is not None})
    return adjusted_standings(rows), len(rows), deals_with_baseline
