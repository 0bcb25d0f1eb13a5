"""Organiser pages: create a tournament, start or cancel it, watch it (thin views).

Permission: staff users and users with `tournaments.organise_tournaments`; an organiser
may start or cancel only their own tournaments unless staff. The writes themselves are the
tournaments app's services (they enqueue Celery work after commit).
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from tournaments.models import Tournament
from tournaments.selectors.tournaments import tournament_entrant_bots, tournament_list
from tournaments.services import entries
from tournaments.services import tournaments as tournament_services
from tournaments.services.accounts import (
    house_bot_for,
    user_can_manage_tournament,
    user_is_organiser,
)
from web import queries
from web.forms import TournamentEditForm, TournamentForm
from web.views_account import _form_errors


def _require_organiser(request: HttpRequest) -> None:
    if not user_is_organiser(user=request.user):
        raise PermissionDenied("Only organisers can do this.")


def _own_tournament(request: HttpRequest, slug: str) -> Tournament:
    _require_organiser(request)
    tournament = get_object_or_404(Tournament, slug=slug)
    if not user_can_manage_tournament(user=request.user, tournament=tournament):
        raise PermissionDenied("This tournament belongs to another organiser.")
    return tournament


def _error_text(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        return "; ".join(exc.messages)
    return str(exc)


@login_required
def organise(request: HttpRequest) -> HttpResponse:
    _require_organiser(request)
    mine = tournament_list()
    if not request.user.is_staff:
        mine = mine.filter(organiser=request.user)
    return render(request, "web/organise.html", {"rows": queries.tournaments_with_progress(tournaments=mine[:100])})


@login_required
def tournament_new(request: HttpRequest) -> HttpResponse:
    _require_organiser(request)
    form = TournamentForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            tournament = _create_with_entrants(request, dict(form.cleaned_data))
        except ValidationError as exc:
            _form_errors(form, exc)
        except (ValueError, PermissionError) as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(request, f"Tournament “{tournament.name}” created.")
            return redirect("web:tournament_detail", slug=tournament.slug)
    return render(request, "web/tournament_new.html", {"form": form})


#: Settings an edit may clear (empty in the form: none).
CLEARABLE = ("starts_at", "registration_opens_at", "registration_closes_at", "games_per_table")


def _settings_and_bots(data: dict, *, editing: bool = False) -> tuple[dict, list]:
    """The form's settings as the services take them, and the bots it enters (house bots
    any organiser may enter: the platform's, made on first use). An empty seed is no seed
    (on an edit: the seed is kept), an empty slug one made from the name (on an edit: the
    slug is kept); games per table, when given, replace duplicate sets; registration left
    to the format's default is open for ladders."""
    bots = list(data.pop("entrants") or [])
    house_kinds = list(data.pop("house_bots", None) or [])
    if not data.get("seed"):
        data.pop("seed", None)
    if not data.get("slug"):
        data.pop("slug", None)
    if data.get("games_per_table"):
        data.pop("duplicate_sets", None)
    else:
        data.pop("games_per_table", None)
        data["duplicate_sets"] = data.get("duplicate_sets") or 1
    if editing and data.get("open_registration") is None:
        data["open_registration"] = data.get("format") == Tournament.Format.LADDER
    bots += [house_bot_for(kind=kind) for kind in house_kinds]
    fields = {k: v for k, v in data.items() if v is not None}
    if editing:
        fields.update({k: None for k in CLEARABLE if data.get(k) is None})
    return fields, bots


@transaction.atomic
def _create_with_entrants(request: HttpRequest, data: dict) -> Tournament:
    """The tournament and its entrants, all or nothing (a bad entrant saves no draft);
    another owner's bot is invited (tournaments.services.entries)."""
    fields, bots = _settings_and_bots(data)
    tournament = tournament_services.tournament_create(organiser=request.user, **fields)
    for bot in bots:
        entries.tournament_entrant_enter(tournament=tournament, bot=bot, by=request.user)
    return tournament


@login_required
def tournament_edit(request: HttpRequest, slug: str) -> HttpResponse:
    """A draft's settings and entrants in the creation form, prefilled; checked as at
    creation (the owner rule before saving), saved all or nothing."""
    tournament = _own_tournament(request, slug)
    if tournament.status != Tournament.Status.DRAFT:
        messages.error(request, f"Only a draft can be edited; this tournament is {tournament.get_status_display()}.")
        return redirect("web:tournament_detail", slug=tournament.slug)
    form = TournamentEditForm(
        request.POST or None,
        initial=TournamentForm.initial_for(tournament, tournament_entrant_bots(tournament=tournament)),
    )
    if request.method == "POST" and form.is_valid():
        try:
            _update_with_entrants(request, tournament, dict(form.cleaned_data))
        except ValidationError as exc:
            _form_errors(form, exc)
        except (ValueError, PermissionError) as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(request, f"Draft “{form.cleaned_data['name']}” saved.")
            return redirect("web:tournament_detail", slug=tournament.slug)
    return render(request, "web/tournament_new.html", {"form": form, "editing": tournament})


@transaction.atomic
def _update_with_entrants(request: HttpRequest, tournament: Tournament, data: dict) -> None:
    """The draft's new settings and entrants, all or nothing."""
    fields, bots = _settings_and_bots(data, editing=True)
    tournament_services.tournament_update(tournament=tournament, **fields)
    entries.tournament_entrants_set(tournament=tournament, bots=bots, by=request.user)


@login_required
@require_POST
def tournament_start(request: HttpRequest, slug: str) -> HttpResponse:
    tournament = _own_tournament(request, slug)
    try:
        tournament_services.tournament_start(tournament=tournament)
    except (ValidationError, ValueError) as exc:
        messages.error(request, f"Could not start: {_error_text(exc)}")
    else:
        messages.success(request, "Tournament started: tables are being played.")
    return redirect("web:tournament_detail", slug=tournament.slug)


@login_required
@require_POST
def tournament_cancel(request: HttpRequest, slug: str) -> HttpResponse:
    tournament = _own_tournament(request, slug)
    try:
        tournament_services.tournament_cancel(tournament=tournament, reason=f"cancelled by {request.user.username}")
    except (ValidationError, ValueError) as exc:
        messages.error(request, f"Could not cancel: {_error_text(exc)}")
    else:
        messages.success(request, "Tournament cancelled. Games already played are kept.")
    return redirect("web:tournament_detail", slug=tournament.slug)


@login_required
def tournament_collusion(request: HttpRequest, slug: str) -> HttpResponse:
    """The collusion report (tournaments/selectors/collusion.py): the tournament's organiser
    and staff only; over the games whose deal is revealed."""
    from tournaments.scoring.collusion import DEFAULT_ALPHA
    from tournaments.selectors.collusion import tournament_collusion as collusion_read

    tournament = _own_tournament(request, slug)
    alpha = DEFAULT_ALPHA
    error = ""
    raw = request.GET.get("alpha")
    if raw:
        try:
            alpha = float(raw)
        except ValueError:
            alpha = -1.0
        if not 0 < alpha < 1:
            error = f"alpha must be a number between 0 and 1 (exclusive), e.g. 0.01; showing {DEFAULT_ALPHA}."
            alpha = DEFAULT_ALPHA
    report = collusion_read(tournament=tournament, alpha=alpha)
    response = render(request, "web/tournament_collusion.html", {"t": tournament, "report": report, "error": error},
                      status=400 if error else 200)
    response["Cache-Control"] = "private, no-store"
    return response
