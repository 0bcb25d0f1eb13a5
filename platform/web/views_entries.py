"""Entries from the web (thin views over tournaments.services.entries): a bot owner joins
an open tournament, withdraws a bot, answers an invitation; an organiser disqualifies.
Every one is a POST that says what happened (a message) and returns to where it was asked;
a bot or tournament that is not there is a 404, someone else's bot or tournament a 403."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_POST

from tournaments.models import Bot, Entrant, Tournament
from tournaments.registration import registration_problem
from tournaments.services import entries
from tournaments.services.accounts import user_can_manage_tournament


def _back(request: HttpRequest, tournament: Tournament) -> HttpResponse:
    """Back to the page the button was on (a local address only), else the tournament."""
    target = request.POST.get("next", "")
    if target and url_has_allowed_host_and_scheme(target, allowed_hosts={request.get_host()},
                                                   require_https=request.is_secure()):
        return redirect(target)
    return redirect("web:tournament_detail", slug=tournament.slug)


def _error(exc: Exception) -> str:
    return "; ".join(exc.messages) if isinstance(exc, ValidationError) else str(exc)


def _mine(request: HttpRequest, name: str) -> Bot:
    bot = get_object_or_404(Bot, name=name)
    if bot.owner_id != request.user.pk:
        raise PermissionDenied("Only the bot's owner can do this.")
    return bot


@login_required
@require_POST
def tournament_join(request: HttpRequest, slug: str) -> HttpResponse:
    tournament = get_object_or_404(Tournament, slug=slug)
    bot = _mine(request, request.POST.get("bot", ""))
    try:
        entrant = entries.entry_join(tournament=tournament, bot=bot, user=request.user)
    except (ValidationError, PermissionError) as exc:
        messages.error(request, f"{bot.name} could not join: {_error(exc)}")
    else:
        messages.success(request, f"{bot.name} is entered in “{tournament.name}” ({entrant.get_status_display().lower()}).")
    return _back(request, tournament)


@login_required
@require_POST
def tournament_withdraw(request: HttpRequest, slug: str) -> HttpResponse:
    tournament = get_object_or_404(Tournament, slug=slug)
    bot = _mine(request, request.POST.get("bot", ""))
    try:
        entries.entry_withdraw(tournament=tournament, bot=bot, user=request.user)
    except (ValidationError, PermissionError) as exc:
        messages.error(request, f"Could not withdraw {bot.name}: {_error(exc)}")
    else:
        messages.success(request, f"{bot.name} is withdrawn from “{tournament.name}”.")
    return _back(request, tournament)


def _answer(request: HttpRequest, name: str, slug: str, *, accept: bool) -> HttpResponse:
    bot = _mine(request, name)
    tournament = get_object_or_404(Tournament, slug=slug)
    get_object_or_404(Entrant, tournament=tournament, bot=bot)
    try:
        entries.invitation_respond(tournament=tournament, bot=bot, user=request.user, accept=accept)
    except (ValidationError, PermissionError) as exc:
        messages.error(request, f"Could not answer: {_error(exc)}")
    else:
        messages.success(request, f"{bot.name} {'accepted' if accept else 'declined'} the invitation to “{tournament.name}”.")
    return _back(request, tournament)


@login_required
@require_POST
def invitation_accept(request: HttpRequest, name: str, slug: str) -> HttpResponse:
    return _answer(request, name, slug, accept=True)


@login_required
@require_POST
def invitation_decline(request: HttpRequest, name: str, slug: str) -> HttpResponse:
    return _answer(request, name, slug, accept=False)


@login_required
@require_POST
def entrant_disqualify(request: HttpRequest, slug: str) -> HttpResponse:
    tournament = get_object_or_404(Tournament, slug=slug)
    if not user_can_manage_tournament(user=request.user, tournament=tournament):
        raise PermissionDenied("This tournament belongs to another organiser.")
    bot = get_object_or_404(Bot, name=request.POST.get("bot", ""))
    try:
        entries.entrant_disqualify(tournament=tournament, bot=bot, user=request.user,
                                   reason=request.POST.get("reason", ""))
    except (ValidationError, PermissionError) as exc:
        messages.error(request, f"Could not disqualify {bot.name}: {_error(exc)}")
    else:
        messages.success(request, f"{bot.name} is disqualified.")
    return _back(request, tournament)


def entry_context(request: HttpRequest, tournament: Tournament) -> dict:
    """What the tournament page shows about entries: the invited, withdrawn and
    disqualified entrants with their reasons; for a signed-in bot owner, the bots they may
    join with (Join) and their entered bots (Withdraw). Anonymous: one query."""
    from tournaments.selectors.entries import owner_entries_and_joinable, tournament_entrants_apart

    ctx: dict = {"apart": tournament_entrants_apart(tournament=tournament), "registration": None,
                 "can_join": [], "my_entries": []}
    if tournament.open_registration:
        ctx["registration"] = registration_problem(tournament=tournament) or "open"
    if not request.user.is_authenticated:
        return ctx
    ctx["my_entries"], ctx["can_join"] = owner_entries_and_joinable(
        tournament=tournament, owner=request.user, joining=ctx["registration"] == "open")
    return ctx
