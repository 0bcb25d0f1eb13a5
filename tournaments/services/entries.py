"""Who enters a tournament, and with whose consent (docs/organiser-guide.md, "Entrants").

- An organiser enters their own bots and house bots directly; another user's bot gets an
  **invitation** (an entrant `invited`) that the bot's owner accepts or declines. An
  invited bot plays nothing: Start refuses while any invitation is pending, naming the
  bots (a ladder's invited bots are simply not seated until accepted).
- **Open registration**: in a tournament marked open, bot owners enter their own bots
  themselves (`entry_join`) within its registration window: a round robin or knockout
  until it starts, a ladder also while it runs. The owner rule is checked at join: one
  bot per owner unless the organiser allows one owner's bots at a table.
- **Withdraw** (the bot's owner) and **disqualify** (the organiser, with a reason shown on
  the tournament page). Before the start a withdrawn bot's entry is deleted and a
  disqualified one stays, listed with its reason, and is not seated. Once it runs, the
  games already played stay (standings, ratings) and:
  a ladder seats it no more; a round robin cancels its tables that have not started (the
  one it plays now finishes); a knockout ranks it last at its current table (as a forfeit),
  so it advances no further.
"""

from __future__ import annotations

from collections.abc import Sequence

from django.core.exceptions import ValidationError
from django.db import transaction

from tournaments.models import Bot, Entrant, Table, Tournament
from tournaments.play.lifecycle import CLOSED, tables_cancel_pending
from tournaments.rating_order import ratings_advance
from tournaments.registration import registration_problem
from tournaments.services.accounts import user_can_manage_tournament
from tournaments.services.recording import deals_reveal_played
from tournaments.services.tournaments import (
    tournament_entrant_add,
    tournament_entrant_remove,
    tournament_finish,
)
from tournaments.services.verification import bot_entry_check

#: An entrant that is out: it is not seated again (and stays listed, with its reason).
OUT = Entrant.OUT  # withdrawn or disqualified


def needs_consent(*, bot: Bot, user) -> bool:
    """Entering this bot needs its owner's consent: it is neither the user's nor a house
    bot, and its owner has not said that every organiser may enter it (`accepts_invitations`)."""
    return not bot.house_bot and bot.owner_id != user.pk and not bot.accepts_invitations


def tournament_entrant_enter(*, tournament: Tournament, bot: Bot, by) -> Entrant:
    """The organiser enters a bot: their own or a house bot at once, another user's as an
    invitation its owner answers. Every entry check of `tournament_entrant_add` first."""
    entrant = tournament_entrant_add(tournament=tournament, bot=bot)
    if needs_consent(bot=bot, user=by):
        entrant.status = Entrant.Status.INVITED
        entrant.invited_by = by
        entrant.save(update_fields=["status", "invited_by"])
    return entrant


def tournament_entrants_set(*, tournament: Tournament, bots: Sequence[Bot], by) -> None:
    """Make the draft's entrants exactly `bots` (the web's edit form): those no longer
    listed leave, new ones are entered (invited when they are another user's)."""
    wanted = {bot.pk: bot for bot in bots}
    with transaction.atomic():
        for entrant in tournament.entrants.select_related("bot"):
            if entrant.bot_id not in wanted:
                tournament_entrant_remove(tournament=tournament, bot=entrant.bot)
        present = set(tournament.entrants.values_list("bot_id", flat=True))
        for pk, bot in wanted.items():
            if pk not in present:
                tournament_entrant_enter(tournament=tournament, bot=bot, by=by)


def _own_entry(*, tournament: Tournament, bot: Bot, user) -> Entrant:
    if bot.owner_id != user.pk:
        raise PermissionError("Only the bot's owner can do this.")
    entrant = Entrant.objects.filter(tournament=tournament, bot=bot).first()
    if entrant is None:
        raise ValidationError({"bot": f"{bot.name} is not entered in {tournament.name}."})
    return entrant


def invitation_respond(*, tournament: Tournament, bot: Bot, user, accept: bool) -> Entrant | None:
    """The bot's owner accepts (the entrant becomes active) or declines (the entry is
    deleted) an invitation. Returns the entrant, None once declined."""
    with transaction.atomic():
        Tournament.objects.select_for_update().filter(pk=tournament.pk).first()
        entrant = _own_entry(tournament=tournament, bot=bot, user=user)
        if entrant.status != Entrant.Status.INVITED:
            raise ValidationError({"bot": f"{bot.name} has no pending invitation here (it is {entrant.status})."})
        if not accept:
            entrant.delete()
            return None
        tournament.refresh_from_db()
        _entries_still_taken(tournament)
        if tournament.verified_entry:
            bot_entry_check(bot=bot)
        entrant.status = Entrant.Status.ACTIVE
        entrant.save(update_fields=["status"])
        return entrant


def _entries_still_taken(tournament: Tournament) -> None:
    if tournament.status in (Tournament.Status.FINISHED, Tournament.Status.CANCELLED):
        raise ValidationError({"status": f"The tournament is {tournament.status}."})
    if tournament.format != Tournament.Format.LADDER and tournament.status == Tournament.Status.RUNNING:
        raise ValidationError({"status": "The tournament has started: its field is fixed."})


def join_problem(*, tournament: Tournament, bot: Bot) -> str | None:
    """Why this bot cannot join now (None: it can): the window, then the bot itself and
    the owner rule as it applies at join: one bot per owner unless the tournament allows
    one owner's bots at a table. The entry checks (verified entry, seat rotation) follow
    in `tournament_entrant_add`."""
    problem = registration_problem(tournament=tournament)
    if problem:
        return problem
    if bot.house_bot:
        return "House bots are entered by organisers."
    if bot.revoked_at is not None:
        return "This bot is retired."
    existing = {e.bot_id: e for e in tournament.entrants.filter(bot__owner_id=bot.owner_id)}
    mine = existing.get(bot.pk)
    if mine is not None and mine.status == Entrant.Status.DISQUALIFIED:
        return f"{bot.name} was disqualified from this tournament."
    if mine is not None and mine.status not in OUT:
        return f"{bot.name} is already entered."
    others = [e for e in existing.values() if e.bot_id != bot.pk and e.status not in OUT]
    if others and not tournament.allow_same_owner:
        return (
            "Bots of one owner never share a table: you have entered another bot here already, and "
            "an open tournament takes one bot per owner unless its organiser allows one owner's bots at a table."
        )
    return None


def entry_join(*, tournament: Tournament, bot: Bot, user) -> Entrant:
    """A bot owner enters their own bot in an open tournament (or ladder), or takes up an
    invitation of it (an invited bot that joins has accepted)."""
    if bot.owner_id != user.pk:
        raise PermissionError("Only the bot's owner can enter it.")
    with transaction.atomic():
        locked = Tournament.objects.select_for_update().get(pk=tournament.pk)
        entrant = Entrant.objects.filter(tournament=locked, bot=bot).first()
        if entrant is not None and entrant.status == Entrant.Status.INVITED:
            return invitation_respond(tournament=locked, bot=bot, user=user, accept=True)  # type: ignore[return-value]
        problem = join_problem(tournament=locked, bot=bot)
        if problem:
            raise ValidationError({"tournament": problem})
        if entrant is not None:  # withdrawn from a ladder earlier: back in
            if locked.verified_entry:
                bot_entry_check(bot=bot)
            entrant.status = Entrant.Status.ACTIVE
            entrant.status_reason = ""
            entrant.save(update_fields=["status", "status_reason"])
            return entrant
        return tournament_entrant_add(tournament=locked, bot=bot)


def entry_withdraw(*, tournament: Tournament, bot: Bot, user) -> None:
    """The bot's owner takes it out (an invitation pending is declined)."""
    entrant = _own_entry(tournament=tournament, bot=bot, user=user)
    if entrant.status == Entrant.Status.INVITED:
        invitation_respond(tournament=tournament, bot=bot, user=user, accept=False)
        return
    _take_out(tournament=tournament, entrant=entrant, status=Entrant.Status.WITHDRAWN, reason="withdrawn by its owner")


def entrant_disqualify(*, tournament: Tournament, bot: Bot, user, reason: str) -> Entrant:
    """The organiser disqualifies a bot, with a reason shown on the tournament page."""
    if not user_can_manage_tournament(user=user, tournament=tournament):
        raise PermissionError("Only this tournament's organiser can disqualify its entrants.")
    reason = (reason or "").strip()
    if not reason:
        raise ValidationError({"reason": "Say why: the reason is shown on the tournament page."})
    entrant = Entrant.objects.filter(tournament=tournament, bot=bot).first()
    if entrant is None:
        raise ValidationError({"bot": f"{bot.name} is not entered in {tournament.name}."})
    if entrant.status == Entrant.Status.DISQUALIFIED:
        raise ValidationError({"bot": f"{bot.name} is disqualified already."})
    return _take_out(tournament=tournament, entrant=entrant, status=Entrant.Status.DISQUALIFIED, reason=reason)


def _take_out(*, tournament: Tournament, entrant: Entrant, status: str, reason: str) -> Entrant:
    """The rule of the module's docstring, under the tournament's lock."""
    steps_finish = False
    with transaction.atomic():
        locked = Tournament.objects.select_for_update().get(pk=tournament.pk)
        if locked.status in (Tournament.Status.FINISHED, Tournament.Status.CANCELLED):
            raise ValidationError({"status": f"The tournament is {locked.status}: its entrants are final."})
        not_started = locked.status in (Tournament.Status.DRAFT, Tournament.Status.SCHEDULED)
        if not_started and status == Entrant.Status.WITHDRAWN and locked.format != Tournament.Format.LADDER:
            entrant.delete()
            return entrant
        entrant.status = status
        entrant.status_reason = reason[:300]
        entrant.save(update_fields=["status", "status_reason"])
        if locked.status == Tournament.Status.RUNNING and locked.format == Tournament.Format.ROUND_ROBIN:
            pending = list(
                locked.tables.filter(status=Table.Status.PENDING, seats__entrant=entrant).values_list("id", "deal_group")
            )
            cancelled = tables_cancel_pending(table_ids=[pk for pk, _ in pending])
            if cancelled:
                deals_reveal_played(tournament=locked, groups=sorted({g for _, g in pending}))
                ratings_advance(tournament=locked)
                if not locked.tables.exclude(status__in=CLOSED).exists():
                    steps_finish = True
        if steps_finish:
            tournament_finish(tournament_id=locked.pk)
    return entrant

