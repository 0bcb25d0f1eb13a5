"""Move notes: a bot's owner publishes its notes of a finished tournament.

Until then a bot's notes are its owner's only (tournaments/sealing.py, `replay_for`); once
published, every replay of the bot's games in that tournament shows them to everyone.
Only after the tournament has finished: notes published while it still plays would tell
the other entrants how the bot thinks before their next games against it.
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.utils import timezone

from tournaments.models import Bot, Entrant, Tournament
from tournaments.sealing import bot_private_visible


def entrant_notes_publish(*, user: Any, tournament: Tournament, bot: Bot) -> Entrant:
    """Publish `bot`'s move notes in `tournament` (its owner only; once it has finished).
    Publishing twice keeps the first time; there is no taking them back."""
    if not bot_private_visible(user=user, bot=bot):
        raise PermissionError("Only the bot's owner can publish its notes.")
    if tournament.status != Tournament.Status.FINISHED:
        raise ValidationError({"tournament": "Notes can be published once the tournament has finished."})
    entrant = Entrant.objects.filter(tournament=tournament, bot=bot).first()
    if entrant is None:
        raise ValidationError({"bot": f"{bot.name} did not play in this tournament."})
    if entrant.notes_published_at is None:
        entrant.notes_published_at = timezone.now()
        entrant.save(update_fields=["notes_published_at"])
    return entrant
