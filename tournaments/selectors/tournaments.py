"""Tournaments: lists, one by slug, what each does now (its activity badge) and its progress.

Progress counts games played, never their results, so it needs no sealing: the public may
know how many games a sealed deal has had. Which table statuses are closed or active is the
lifecycle's (tournaments.play.lifecycle).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from django.conf import settings
from django.db.models import (
    Case,
    CharField,
    Count,
    F,
    Max,
    OuterRef,
    Q,
    QuerySet,
    Subquery,
    Sum,
    Value,
    When,
)
from django.db.models.functions import Coalesce
from django.utils import timezone

from tournaments.models import Bot, Entrant, Table, TableSeat, Tournament
from tournaments.play.lifecycle import ACTIVE, CLOSED
from tournaments.scheduling.knockout import knockout_plan

CLOSED_STATUSES = tuple(sorted(CLOSED))
RUNNING_STATUSES = tuple(sorted(ACTIVE))
PROGRESS_COUNTS = (
    "entrant_count", "tables_total", "tables_done", "tables_running", "tables_failed",
    "games_done", "games_planned", "rounds_created", "tables_awaiting",
)


def _progress_counts(tables: str) -> dict[str, Any]:
    """A tournament's progress aggregated over its tables, reached through `tables`
    ("tables__" from Tournament, "" from Table).

    A closed table (done, failed or cancelled) plans only the games it recorded: it will
    play no more, so the bar of a tournament whose every table is closed reads 100 %, and
    the games bar agrees with the tables the "tables done" count calls done.
    """
    table = f"{tables}id" if tables else "id"
    closed = Q(**{f"{tables}status__in": CLOSED_STATUSES})
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
        # Open tables whose referee waits for bots not connected (Table.awaited): their names
        # cost a query only when there are some.
        "tables_awaiting": Count(
            table,
            filter=Q(**{f"{tables}status__in": RUNNING_STATUSES, f"{tables}waiting_since__isnull": False})
            & ~Q(**{f"{tables}waiting_for": []}),
        ),
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
    # The bots its open tables wait for (not connected to their referee), by name.
    waiting_for: tuple[str, ...] = ()

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
            "waiting_for": list(self.waiting_for),
        }


def tournament_progress(*, tournament: Tournament) -> Progress:
    """Tables done / total and games done, now: 1 query, none for a row of
    `tournament_list` (it carries the counts).

    A running knockout's later rounds do not exist yet; they are counted from the bracket's
    shape, or the bar would reach 100 % every time a round ends.
    """
    from_list = all(name in tournament.__dict__ for name in PROGRESS_COUNTS)
    if from_list:
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
    awaiting = row.get("tables_awaiting") or 0
    waiting_for: tuple[str, ...] = ()
    activity = tournament_activity(
        tournament=tournament, open_tables=(row["tables_total"] or 0) - (row["tables_done"] or 0)
    )
    if awaiting:
        waiting_for = _tables_waiting_for(tournament)
        if waiting_for and activity.state == "running":
            names = ", ".join(waiting_for)
            activity = Activity(
                "waiting", f"Waiting for {names}",
                f"Waiting for {names}: not connected to the referee, which waits for "
                f"{'them' if len(waiting_for) > 1 else 'it'} up to the connect deadline "
                f"({tournament.connect_deadline_s} s from the table's first attempt); then an absent bot "
                "forfeits the table.",
            )
    return Progress(
        status=tournament.status,
        tables_total=tables_total,
        tables_done=row["tables_done"] or 0,
        tables_running=row["tables_running"] or 0,
        games_done=row["games_done"] or 0,
        games_planned=games_planned,
        tables_failed=row["tables_failed"] or 0,
        activity=activity,
        waiting_for=waiting_for,
    )


def _tables_waiting_for(tournament: Tournament) -> tuple[str, ...]:
    """The bots the tournament's open tables wait for, by name (1 query): those an
    attempt found absent, while the referee has not started the table (Table.awaited)."""
    names: set[str] = set()
    rows = Table.objects.filter(
        tournament_id=tournament.pk, status__in=RUNNING_STATUSES, waiting_since__isnull=False
    ).exclude(waiting_for=[]).values_list("waiting_for", flat=True)
    for listed in rows:
        names.update(str(n) for n in listed or [])
    return tuple(sorted(names))


def tournament_rows() -> QuerySet[Tournament]:
    """Tournaments as stored, without annotations: for a lookup before a write or a
    permission check (`get_object_or_404(tournament_rows(), slug=...)`)."""
    return Tournament.objects.all()


def tournament_slug_taken(*, slug: str) -> bool:
    return Tournament.objects.filter(slug=slug).exists()


#: What `Tournament.fair_play_notices` reads.
NOTICE_FIELDS = ("organiser_seed", "deal_format", "allow_same_owner")


def tournament_notices(*, slug: str | None = None, game_id: int | None = None) -> Tournament | None:
    """The tournament (by slug, or of a game) with just what its fair-play notices need
    (1 small query), for a response that did not read its tournament otherwise."""
    rows = Tournament.objects.only(*NOTICE_FIELDS)
    if game_id is not None:
        return rows.filter(tables__games__id=game_id).first()
    return rows.filter(slug=slug).first()


def tournament_entrant_bots(*, tournament: Tournament) -> list[Bot]:
    """The bots entered in a tournament, in entry order, with their owners (1 query): what
    a draft's edit form starts from."""
    return [
        e.bot for e in tournament.entrants.select_related("bot__owner").order_by("id")
    ]
