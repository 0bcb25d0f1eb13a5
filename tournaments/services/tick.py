"""The beat's periodic tick (`tasks.tournaments_tick`): the work due now, found and done
here so that the task only enqueues it.

Starts nothing itself: it closes the ladders' seasons that have ended
(tournaments.services.seasons), feeds every running ladder (new tables seated among the bots with
a free slot on some live referee) and says which tournaments are due to start, which tables
were forgotten (their first task lost) and which tournaments have revealed deals whose
luck baselines were never computed (their task lost with a worker)."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime

from django.db import DatabaseError

from tournaments.models import Deal, Tournament
from tournaments.play import routing
from tournaments.play.lifecycle import tables_forgotten
from tournaments.sealing import deals_revealed
from tournaments.services.casual import casual_tables_abandon
from tournaments.services.ladder import ladder_tick
from tournaments.services.seasons import seasons_roll

log = logging.getLogger(__name__)

#: Tournaments whose lost baselines one tick re-enqueues at most.
BASELINES_BEHIND_PER_TICK = 20


@dataclass
class TickWork:
    """What the tick's task enqueues."""

    tournaments_due: list[int] = field(default_factory=list)  # scheduled to start by now
    ladder_tables: list[int] = field(default_factory=list)  # created by this tick
    tables_forgotten: list[int] = field(default_factory=list)  # pending, never attempted
    baselines_behind: list[int] = field(default_factory=list)  # tournaments with deals to analyse
    casual_abandoned: list[int] = field(default_factory=list)  # casual tables whose worker is gone


def tick_run(*, now: datetime) -> TickWork:
    """Feed the running ladders and find the work due at `now`."""
    work = TickWork()
    work.tournaments_due = list(
        Tournament.objects.filter(status=Tournament.Status.SCHEDULED, starts_at__lte=now).values_list("id", flat=True)
    )
    work.tables_forgotten = tables_forgotten(now=now)
    work.casual_abandoned = casual_tables_abandon(now=now)
    # Revealed deals with games and no baseline yet: their task was lost.
    work.baselines_behind = list(
        Deal.objects.filter(deals_revealed(), baseline__isnull=True, games__isnull=False)
        .order_by("tournament_id").values_list("tournament_id", flat=True).distinct()[:BASELINES_BEHIND_PER_TICK]
    )
    # The ladders last: the tables a ladder's tick seats are committed at once, and only the
    # task enqueues them, after this returns. Fed first, a database error later in the tick
    # (PostgreSQL restarting) or the worker killed meanwhile lost them: pending, never
    # attempted, until the forgotten-table check 10 minutes later (how a CI soak's table
    # could be left pending after its drain; benchmarks/README.md, "Soak").
    ladders = list(Tournament.objects.filter(status=Tournament.Status.RUNNING, format=Tournament.Format.LADDER))
    if ladders:
        connected = routing.pool_bots_available()  # bots with a free slot across the pool
        for ladder in ladders:
            try:
                # A season that ended is frozen, and the next opened, before any table is seated.
                season = seasons_roll(tournament=ladder, now=now)
                work.ladder_tables += ladder_tick(
                    tournament=ladder, connected=connected, season=season.number if season else None
                )
            except DatabaseError:
                if not work.ladder_tables:
                    raise
                # The tables of the ladders fed so far are committed: enqueue them; the next
                # tick feeds the rest.
                log.exception("feeding the ladder %s failed", ladder.pk)
                break
    return work
