"""Entries as their bots' owners and the tournament pages see them: invitations waiting
for an answer, each bot's tournaments, what a bot may join now, who was taken out and why.
None of it is a game's result (no sealing needed): names, statuses and the organiser's
reasons. The owner's own lists are the views' to guard (the owner only)."""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Q, QuerySet
from django.utils import timezone

from tournaments.models import Bot, Entrant, Tournament
from tournaments.play.pool import pool_connected_bots
from tournaments.registration import registration_problem

#: Entrants shown apart on a tournament page: waiting for their owner, or taken out.
SHOWN_APART = (Entrant.Status.INVITED, Entrant.Status.WITHDRAWN, Entrant.Status.DISQUALIFIED)


def bot_invitations(*, owner) -> QuerySet[Entrant]:
    """The owner's bots' pending invitations, newest first (1 query)."""
    return (
        Entrant.objects.filter(bot__owner=owner, status=Entrant.Status.INVITED)
        .select_related("bot", "tournament__organiser")
        .order_by("-joined_at", "-id")
    )


def tournament_entrants_apart(*, tournament: Tournament) -> list[Entrant]:
    """Invited, withdrawn and disqualified entrants with their reasons (1 query)."""
    return list(
        tournament.entrants.filter(status__in=SHOWN_APART).select_related("bot__owner").order_by("status", "id")
    )


def open_tournaments() -> list[Tournament]:
    """Tournaments and ladders that take bot owners' entries now (1 query)."""
    now = timezone.now()
    rows = Tournament.objects.filter(
        open_registration=True,
        status__in=(Tournament.Status.DRAFT, Tournament.Status.SCHEDULED, Tournament.Status.RUNNING),
    ).filter(
        Q(registration_opens_at__isnull=True) | Q(registration_opens_at__lte=now),
        Q(registration_closes_at__isnull=True) | Q(registration_closes_at__gt=now),
    ).order_by("-created_at")[:50]
    return [t for t in rows if registration_problem(tournament=t, now=now) is None]


@dataclass
class BotStatus:
    """A bot on its owner's "My bots": connection, entries, what it may join."""

    bot: Bot
    connected: bool
    entries: list[Entrant]
    joinable: list[Tournament]


def my_bots_status(*, owner) -> list[BotStatus]:
    """Each of the owner's bots with whether a live referee has it connected now, its
    last-seen time (on the bot), its entries with their tournaments' status, and the open
    tournaments it could join (not entered yet; one bot per owner unless allowed).
    A fixed number of queries, whatever the number of bots."""
    bots = list(Bot.objects.filter(owner=owner).order_by("name"))
    connected = pool_connected_bots()
    entries: dict[int, list[Entrant]] = {b.pk: [] for b in bots}
    for e in (Entrant.objects.filter(bot__owner=owner).select_related("tournament")
              .order_by("-tournament__created_at", "-id")):
        entries[e.bot_id].append(e)
    open_now = open_tournaments()
    entered_by_tournament: dict[int, set[int]] = {}
    for bot_entries in entries.values():
        for e in bot_entries:
            if e.status not in (Entrant.Status.WITHDRAWN,):
                entered_by_tournament.setdefault(e.tournament_id, set()).add(e.bot_id)
    out = []
    for bot in bots:
        joinable = []
        if bot.revoked_at is None and not bot.house_bot:
            for t in open_now:
                mine = entered_by_tournament.get(t.pk, set())
                if bot.pk in mine or (mine and not t.allow_same_owner):
                    continue
                joinable.append(t)
        out.append(BotStatus(bot=bot, connected=str(bot.pk) in connected, entries=entries[bot.pk], joinable=joinable))
    return out


def owner_entries_and_joinable(*, tournament: Tournament, owner,
                               joining: bool) -> tuple[list[Entrant], list[Bot]]:
    """An owner's entries in a tournament still in it (not withdrawn or disqualified), and,
    when `joining` (its registration is open), their bots that may join it now: not already
    in (unless the tournament allows one owner several bots), not revoked, not house bots,
    never a bot disqualified from it (1 query, 2 when joining)."""
    mine = list(tournament.entrants.filter(bot__owner=owner).select_related("bot"))
    entered = [e for e in mine if e.status not in Entrant.OUT]
    taken = {e.bot_id for e in entered}
    if not joining or (taken and not tournament.allow_same_owner):
        return entered, []
    barred = {e.bot_id for e in mine if e.status == Entrant.Status.DISQUALIFIED}
    joinable = [b for b in Bot.objects.filter(owner=owner, revoked_at__isnull=True, house_bot="")
                if b.pk not in taken and b.pk not in barred]
    return entered, joinable
