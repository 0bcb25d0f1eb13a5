"""Whether a tournament takes bot owners' own entries now (open registration): one
function that the join service (tournaments.services.entries) and the pages that offer a
Join button (tournaments.selectors.entries) both ask."""

from __future__ import annotations

from datetime import datetime

from django.utils import timezone

from tournaments.models import Tournament


def registration_problem(*, tournament: Tournament, now: datetime | None = None) -> str | None:
    """Why bot owners cannot join this tournament now (None: they can)."""
    now = now or timezone.now()
    if not tournament.open_registration:
        return "Entry is by invitation of the organiser only: this tournament is not open for registration."
    if tournament.status in (Tournament.Status.FINISHED, Tournament.Status.CANCELLED):
        return f"Registration is closed: the tournament is {tournament.get_status_display().lower()}."
    if tournament.format != Tournament.Format.LADDER and tournament.status == Tournament.Status.RUNNING:
        return "Registration is closed: the tournament has started."
    if tournament.registration_opens_at and now < tournament.registration_opens_at:
        return f"Registration opens at {tournament.registration_opens_at:%Y-%m-%d %H:%M} UTC."
    if tournament.registration_closes_at and now >= tournament.registration_closes_at:
        return f"Registration closed at {tournament.registration_closes_at:%Y-%m-%d %H:%M} UTC."
    return None
