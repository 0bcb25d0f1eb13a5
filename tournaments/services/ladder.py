"""The ladder: each tick seats connected, idle entrants with close ratings at new tables,
or says why it started none."""

from __future__ import annotations

import random

from django.db import transaction
from django.utils import timezone

from tournaments.models import (
    START_RATING,
    Entrant,
    Table,
    TableSeat,
    Tournament,
)
from tournaments.play.lifecycle import (
    CLOSED,
)
from tournaments.scheduling.ladder import Candidate, ladder_pick_tables
from tournaments.scheduling.owners import (
    owner_rule_applies,
)
from tournaments.services.accounts import bot_version_touch
from tournaments.services.ratings import ratings_by_bot
from tournaments.services.tournaments import tables_create
from tournaments.services.verification import bots_unverified


def ladder_tick(
    *, tournament: Tournament, connected: dict[str, str] | None, rng: random.Random | None = None,
    season: int | None = None,
) -> list[int]:
    """Start new ladder tables among connected, idle entrants with close ratings.

    `connected` maps referee bot ids to reported versions (None: the referee is unknown,
    so only house bots can be scheduled). The anchor of each table is drawn among the bots
    that waited longest: those with the fewest seats at the ladder's last
    `LADDER_RECENT_ROTATIONS` rotations of tables (a rotation: enough tables to seat every
    active entrant once). A tick that starts no table says why in `status_reason` (shown on
    the ladder's page and in the API); a tick that starts one clears it. Every tick notes
    its time in `ticked_at`, so a ladder that nothing ticks can say so. `season`: the
    ladder's open season (tournaments.services.seasons), written on the new tables.
    """
    rng = rng or random.Random()
    with transaction.atomic():
        tournament = Tournament.objects.select_for_update().get(pk=tournament.pk)
        if tournament.status != Tournament.Status.RUNNING or tournament.format != Tournament.Format.LADDER:
            return []
        seats = tournament.seats_per_table
        busy = set(
            TableSeat.objects.filter(table__tournament=tournament)
            .exclude(table__status__in=CLOSED)
            .values_list("entrant__bot_id", flat=True)
        )
        active = list(tournament.entrants.filter(status=Entrant.Status.ACTIVE).select_related("bot"))
        if tournament.verified_entry:
            # An owner whose approval was revoked (or whose address changed) since joining
            # is seated no more until verified again.
            refused = {b.pk for b in bots_unverified(bots=[e.bot for e in active])}
            active = [e for e in active if e.bot_id not in refused]
        entrants = [
            e for e in active
            if e.bot_id not in busy and e.bot.revoked_at is None
            and (e.bot.house_bot or _hosted_ready(e.bot) or (connected is not None and str(e.bot_id) in connected))
        ]
        for e in entrants:
            if connected and str(e.bot_id) in connected:
                bot_version_touch(bot_id=e.bot_id, version=connected[str(e.bot_id)])
        ratings = ratings_by_bot(pool=tournament.pool, bot_ids=[e.bot_id for e in entrants])
        recent = _ladder_recent_seats(tournament, active_entrants=len(active))
        candidates = [
            Candidate(
                e.bot_id, e.bot.owner_id, ratings.get(e.bot_id, START_RATING), recent.get(e.bot_id, 0),
                house=bool(e.bot.house_bot),
            )
            for e in entrants
        ]
        # The owner rule's exemption is decided over all the ladder's entrants, not only
        # the free ones: one owner's bots alone have nobody to collude against.
        all_owners = [None if e.bot.house_bot else e.bot.owner_id for e in active]
        same_owner_ok = tournament.allow_same_owner or not owner_rule_applies(all_owners)
        picks = ladder_pick_tables(
            candidates,
            seats=seats,
            tables=tournament.ladder_tables_per_tick,
            rng=rng,
            allow_same_owner=same_owner_ok,
        )
        by_bot = {e.bot_id: e for e in entrants}
        last = tournament.tables.order_by("-number").values_list("number", flat=True).first() or 0
        tables = [[by_bot[b] for b in bot_ids] for bot_ids in picks]
        created = tables_create(tournament=tournament, round_no=1, tables=tables, first_number=last + 1)
        if season is not None and created:
            Table.objects.filter(pk__in=created).update(season=season)
        reason = "" if picks else _ladder_idle_reason(
            seats=seats, active=active, candidates=candidates, busy=busy, connected=connected,
            same_owner_ok=same_owner_ok,
        )
        # Every tick notes itself (one UPDATE per ladder per tick): a ladder no tick looks
        # at says so on its page (tournaments.selectors.tournaments.tournament_activity) instead of "Running".
        Tournament.objects.filter(pk=tournament.pk).update(status_reason=reason[:500], ticked_at=timezone.now())
        return created


LADDER_RECENT_ROTATIONS = 2


def _ladder_recent_seats(tournament: Tournament, *, active_entrants: int) -> dict[int, int]:
    """Seats each bot took at the ladder's most recent tables (1 query): the last
    LADDER_RECENT_ROTATIONS x ceil(entrants / seats) tables, newest by number."""
    window = LADDER_RECENT_ROTATIONS * max(1, -(-active_entrants // tournament.seats_per_table))
    last_tables = Table.objects.filter(tournament_id=tournament.pk).order_by("-number").values("id")[:window]
    counts: dict[int, int] = {}
    for bot_id in TableSeat.objects.filter(table_id__in=last_tables).values_list("entrant__bot_id", flat=True):
        counts[bot_id] = counts.get(bot_id, 0) + 1
    return counts


def _ladder_idle_reason(
    *, seats: int, active: list[Entrant], candidates: list[Candidate], busy: set[int],
    connected: dict[str, str] | None, same_owner_ok: bool,
) -> str:
    """Why a ladder tick started no table, in words for its page and API."""
    if len(active) < seats:
        return f"No table: the ladder has {len(active)} active entrant(s); a table needs {seats}."
    if len(candidates) < seats:
        playing = sum(1 for e in active if e.bot_id in busy)
        absent = len(active) - playing - len(candidates)
        text = (
            f"Waiting for bots: {len(candidates)} of {len(active)} active entrants are connected and free "
            f"({playing} playing, {absent} not connected); a table needs {seats}."
        )
        if connected is None:
            text += " The referee's list of connected bots is unavailable, so only house bots can be seated."
        return text
    if not same_owner_ok:
        owners = {("house", c.bot_id) if c.house else ("owner", c.owner_id) for c in candidates}
        return (
            f"No table possible: bots of one owner never share a table (allow_same_owner is off), and the "
            f"{len(candidates)} connected free bots have {len(owners)} different owners; a table needs {seats}."
        )
    return "No table was started at the last tick."


def _hosted_ready(bot) -> bool:
    """A hosted bot with a ready version is always available: a runner starts it for the
    table it is seated at (tournaments.services.hosting.hosted_sessions_ensure)."""
    return bot.hosting == "hosted" and bot.active_submission_id is not None and not bot.hosting_stopped
