"""A ladder's seasons (tournaments.services.seasons): the open one and the archived ones.

An archived season's standings were frozen at its end from the standings selector (so
through tournaments.sealing: revealed games only) and are read here as stored; the open
season's live standings are the standings selector's with its number."""

from __future__ import annotations

from django.db.models import QuerySet

from tournaments.models import Season, Tournament


def season_list(*, tournament: Tournament) -> QuerySet[Season]:
    """The ladder's seasons, newest first (1 query)."""
    return Season.objects.filter(tournament_id=tournament.pk).order_by("-number")


def season_open(*, tournament: Tournament) -> Season | None:
    return Season.objects.filter(tournament_id=tournament.pk, ended_at__isnull=True).first()


def season_get(*, tournament: Tournament, number: int) -> Season:
    """One season by number; Season.DoesNotExist if the ladder has none of that number."""
    return Season.objects.get(tournament_id=tournament.pk, number=number)
