"""Spectator pages. Thin: each view reads through `tournaments.selectors` (what the API also
shows) or `web.queries` (what only pages show) and renders a template."""

from __future__ import annotations

import json
import re
import zlib
from typing import Any

from django.conf import settings
from django.contrib.staticfiles import finders
from django.core.paginator import Paginator
from django.http import (
    FileResponse,
    Http404,
    HttpRequest,
    HttpResponse,
    HttpResponseForbidden,
    JsonResponse,
)
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET

from bots_sdk.rules import ReplayError
from tournaments import sealing
from tournaments.models import Game, Gate, RatingPool, Replay, Season, Tournament
from tournaments.selectors import bots as bot_reads
from tournaments.selectors import tournaments as tournament_reads
from tournaments.selectors.adjusted import tournament_luck_adjusted
from tournaments.selectors.brackets import knockout_rounds, tournament_bracket
from tournaments.selectors.casual import casual_tables, people_record
from tournaments.selectors.cross_table import tournament_cross_table
from tournaments.selectors.deals import deal_counts, deal_group_tables, deal_list
from tournaments.selectors.entries import bot_invitations
from tournaments.selectors.games import (
    game_get,
    game_list,
    game_replay_stored,
    game_seating,
    replay_public_text,
)
from tournaments.selectors.ratings import PoolNameInvalid, bot_ratings, pool_by_name, pool_list
from tournaments.selectors.seasons import season_get, season_list, season_open
from tournaments.selectors.standings import tournament_standings
from tournaments.selectors.tables import table_list
from tournaments.selectors.tournaments import tournament_get, tournament_progress
from tournaments.selectors.versions import bot_sessions, bot_storage, bot_submissions
from tournaments.services.accounts import user_can_manage_tournament
from web import live, queries, views_entries
from web.replay_frames import replay_frames
from web.standings_chart import standings_chart

GAMES_PER_PAGE = 50


@require_GET
def favicon(request: HttpRequest) -> FileResponse:
    """/favicon.ico, which browsers ask for on every page without a <link rel="icon"> (the
    JSON API, the API docs): the site's icon instead of a 404 in every log."""
    path = finders.find("web/favicon.ico")
    if path is None:  # pragma: no cover - the file ships with the app
        raise Http404("No icon")
    response = FileResponse(open(path, "rb"), content_type="image/x-icon")  # noqa: SIM115 - FileResponse closes it
    response["Cache-Control"] = "public, max-age=86400"
    return response


@require_GET
def home(request: HttpRequest) -> HttpResponse:
    live_rows = tournament_reads.tournament_list(statuses=[Tournament.Status.RUNNING, Tournament.Status.SCHEDULED])[:10]
    recent = tournament_reads.tournament_list(statuses=[Tournament.Status.FINISHED])[:8]
    return render(
        request,
        "web/home.html",
        {
            "live": queries.tournaments_with_progress(tournaments=live_rows),
            "recent": queries.tournaments_with_progress(tournaments=recent),
            "leaderboards": queries.home_leaderboards(per_pool=5),
            "notable": queries.notable_games(limit=6),
            "casual_tables": list(casual_tables(open_only=True)[:8]),
        },
    )


STATUS_FILTERS = {
    "live": [Tournament.Status.RUNNING, Tournament.Status.SCHEDULED],
    "finished": [Tournament.Status.FINISHED],
    "draft": [Tournament.Status.DRAFT],
    "cancelled": [Tournament.Status.CANCELLED],
}


@require_GET
def tournament_list(request: HttpRequest) -> HttpResponse:
    status = request.GET.get("status", "")
    statuses = STATUS_FILTERS.get(status)
    page = Paginator(tournament_reads.tournament_list(statuses=statuses), 30).get_page(request.GET.get("page"))
    status = status if statuses else ""
    prefix = f"status={status}&" if status else ""
    rows = queries.tournaments_with_progress(tournaments=page.object_list)
    return render(
        request, "web/tournament_list.html", {"page": page, "rows": rows, "status": status, "pager_prefix": prefix}
    )


def _tournament(slug: str) -> Tournament:
    try:
        return tournament_get(slug=slug)
    except Tournament.DoesNotExist as exc:
        raise Http404("No such tournament") from exc


@require_GET
def tournament_detail(request: HttpRequest, slug: str) -> HttpResponse:
    tournament = _tournament(slug)
    # A ladder with seasons shows its open season's standings, and its archived seasons.
    season = season_open(tournament=tournament) if tournament.season_days else None
    # Plackett-Luce strengths take seconds at 10,000 games and the page does not show them.
    standings = tournament_standings(
        tournament=tournament, with_strength=False, season=season.number if season else None
    )
    ctx = {
        "season": season,
        "past_seasons": (
            [s for s in season_list(tournament=tournament) if s.ended_at is not None]
            if tournament.season_days or season else []
        ),
        "t": tournament,
        "progress": tournament_progress(tournament=tournament),
        "standings": standings,
        "standings_chart": standings_chart(standings),
        "adjusted": tournament_luck_adjusted(tournament=tournament) if standings else None,
        "cross": None,
        "bracket": None,
        "tables": None,
        "recent_games": list(game_list(tournament=tournament)[:10]),
        "incidents": list(queries.tournament_incidents(tournament=tournament, limit=20)),
        "deal_counts": deal_counts(tournament=tournament),
        "can_organise": _can_organise(request, tournament),
        "poll_ms": getattr(settings, "WEB_PROGRESS_POLL_MS", 2000),
        "sse": live.is_asgi(request),  # WSGI buffers streams: those pages poll instead
        **views_entries.entry_context(request, tournament),
    }
    if tournament.format == Tournament.Format.KNOCKOUT:
        ctx["bracket"] = tournament_bracket(tournament=tournament)
        rounds = knockout_rounds(tournament=tournament, bracket=ctx["bracket"], entrants=len(standings))
        ctx["ko_rounds"] = queries.knockout_round_labels(rounds=rounds)
        # A game rates in the pool of its own table size (docs/organiser-guide.md, Ratings):
        # a knockout's short tables rate in a smaller pool, named beside the tournament's.
        if tournament.rated and tournament.pool is not None:
            sizes = {n for r in [*ctx["bracket"], *rounds] for n in r.get("table_sizes", [])}
            ctx["short_pools"] = [
                (n, f"{tournament.preset}-{n}") for n in sorted(sizes) if n != tournament.seats_per_table
            ]
    else:
        tables = table_list(tournament=tournament)
        ctx["tables"] = Paginator(tables, 40).get_page(request.GET.get("tables"))
    if tournament.format == Tournament.Format.ROUND_ROBIN and 1 < len(standings) <= 32:
        cross = tournament_cross_table(tournament=tournament)
        ctx["cross"] = queries.cross_table_rows(cross=cross, standings=standings)
    return render(request, "web/tournament_detail.html", ctx)


def _can_organise(request: HttpRequest, tournament: Tournament) -> bool:
    """The same rule as the start/cancel views: an organiser, on their own tournament
    (staff: on any), so the buttons never lead to a 403."""
    return user_can_manage_tournament(user=request.user, tournament=tournament)


@require_GET
def tournament_season(request: HttpRequest, slug: str, number: int) -> HttpResponse:
    """One archived season of a ladder: its standings as frozen at its end."""
    tournament = _tournament(slug)
    try:
        season = season_get(tournament=tournament, number=number)
    except Season.DoesNotExist as exc:
        raise Http404("No such season") from exc
    if season.ended_at is None:
        return redirect("web:tournament_detail", slug=tournament.slug)
    others = list(season_list(tournament=tournament))
    return render(request, "web/tournament_season.html", {"t": tournament, "season": season, "seasons": others})


@require_GET
def tournament_progress_json(request: HttpRequest, slug: str) -> JsonResponse:
    """Polled by the tournament page every few seconds (works under WSGI and ASGI): the
    API's progress document."""
    tournament = get_object_or_404(Tournament, slug=slug)
    response = JsonResponse(tournament_progress(tournament=tournament).as_dict())
    response["Cache-Control"] = "no-store"
    return _with_notices(response, tournament)


def _with_notices(response: HttpResponse, tournament: Tournament) -> HttpResponse:
    """A document that is not a page (JSON, a download) says what the pages say about the
    tournament's deals in the API's header."""
    if tournament.fair_play_notices:
        response["Tienlen-Fair-Play"] = "; ".join(tournament.fair_play_notices)
    return response


@require_GET
def tournament_games(request: HttpRequest, slug: str) -> HttpResponse:
    tournament = _tournament(slug)
    page = Paginator(game_list(tournament=tournament), GAMES_PER_PAGE).get_page(request.GET.get("page"))
    sealed = sealing.sealed_game_count(tournament=tournament)
    return render(request, "web/tournament_games.html", {"t": tournament, "page": page, "sealed": sealed})


@require_GET
def leaderboards(request: HttpRequest) -> HttpResponse:
    return render(request, "web/leaderboards.html", {"pools": list(pool_list())})


def _pool(slug: str) -> RatingPool:
    try:
        return pool_by_name(name=slug)
    except (PoolNameInvalid, RatingPool.DoesNotExist) as exc:
        raise Http404("No such rating pool") from exc


@require_GET
def leaderboard(request: HttpRequest, pool: str) -> HttpResponse:
    rating_pool = _pool(pool)
    rows = queries.leaderboard_rows(pool=rating_pool)
    return render(
        request,
        "web/leaderboard.html",
        {"pool": rating_pool, "rows": rows, "recent_days": queries.RECENT_CHANGE_DAYS},
    )


@require_GET
def bot_list(request: HttpRequest) -> HttpResponse:
    page = Paginator(bot_reads.bot_list(), 60).get_page(request.GET.get("page"))
    return render(request, "web/bot_list.html", {"page": page})


@require_GET
def bot_detail(request: HttpRequest, name: str) -> HttpResponse:
    bot = get_object_or_404(bot_reads.bot_list(), name=name)
    history = queries.rating_history(bot=bot)
    for s in history:
        s["chart"] = queries.svg_chart(s["points"], games=s["games"])
    hosted_versions = bot_submissions(viewer=request.user, bot=bot)
    if hosted_versions is not None:
        hosted_versions = list(hosted_versions)
    is_owner = sealing.bot_private_visible(user=request.user, bot=bot)
    # Its pending invitations: its owner's to answer, nobody else's to see.
    invitations = list(bot_invitations(owner=request.user).filter(bot=bot)) if is_owner else []
    return render(
        request,
        "web/bot_detail.html",
        {
            "bot": bot,
            "versions": list(bot.versions.order_by("-first_seen_at")),
            "ratings": list(bot_ratings(bot=bot)),
            "history": history,
            "results": queries.bot_tournament_results(bot=bot),
            "h2h": queries.bot_head_to_head(bot=bot),
            "recent_games": list(game_list(bot=bot)[:15]),
            "is_owner": is_owner,
            "invitations": invitations,
            # its hosted code's versions and sessions' logs: None unless the viewer owns it
            "hosted_versions": hosted_versions,
            "hosted_active": next((v for v in hosted_versions or () if v.pk == bot.active_submission_id), None),
            "hosted_sessions": bot_sessions(viewer=request.user, bot=bot, limit=20),
            # casual tables: its record against people (never in its ratings), and whether
            # the viewer may sit down against it (its owner always; others if it consents)
            "people": people_record(bot=bot),
            "can_play": request.user.is_authenticated and sealing.casual_bot_allowed(bot=bot, user=request.user),
            "hosted_storage": bot_storage(viewer=request.user, bot=bot),
            "gate_choices": Gate.choices,
        },
    )


@require_GET
def bot_games(request: HttpRequest, name: str) -> HttpResponse:
    bot = get_object_or_404(bot_reads.bot_list(), name=name)
    page = Paginator(game_list(bot=bot), GAMES_PER_PAGE).get_page(request.GET.get("page"))
    return render(request, "web/bot_games.html", {"bot": bot, "page": page})


def _proof_url(request: HttpRequest, game: Game) -> str:
    return request.build_absolute_uri(reverse("api:game-proof", args=[game.pk]))


def _withheld_page(request: HttpRequest, withheld: sealing.DealWithheld) -> HttpResponse:
    """A game whose deal is still being played elsewhere: who sat where, its commitment,
    and why its result and replay are sealed (403: no place, point, strike or hand)."""
    game = withheld.game
    return render(
        request, "web/game_withheld.html",
        {"game": game, "t": game.table.tournament, "seats": game_seating(game=game),
         "withheld": sealing.DEAL_WITHHELD, "proof_url": _proof_url(request, game)},
        status=403,
    )


def _replay_and_timing(game: Game, user: Any) -> tuple[dict, dict | None, str | None]:
    """The game's replay (engine's reader) as `user` may see it (`sealing.replay_for`: the
    notes of their own bots' seats only), its timing log, and why the replay cannot be
    read (None when it can: the page then shows the result without the move-by-move view)."""
    try:
        replay = game_replay_stored(game=game)
    except Replay.DoesNotExist as exc:
        raise Http404("This game has no stored replay") from exc
    timing = None
    decoded = getattr(replay, "decoded_timing", None)
    if decoded is not None:
        try:
            text = decoded()
            timing = json.loads(text) if text else None
        except (ValueError, OSError, zlib.error):
            timing = None  # a damaged timing log only loses the per-move times
    try:
        data, problem = sealing.replay_for(replay.read(), user=user, game=game), None
    except ReplayError as exc:
        data, problem = {}, str(exc)  # the page says so instead of failing
    return data, (timing if isinstance(timing, dict) else None), problem


@require_GET
def game_detail(request: HttpRequest, game_id: int) -> HttpResponse:
    try:
        game = game_get(game_id=game_id)
    except Game.DoesNotExist as exc:
        raise Http404("No such game") from exc
    except sealing.DealWithheld as withheld:
        return _withheld_page(request, withheld)
    seats = list(game.seats.all())
    replay, timing, problem = _replay_and_timing(game, request.user)
    names = {s.seat: s.bot.name for s in seats}
    frames = replay_frames(
        replay,
        names=[names.get(i, f"Seat {i}") for i in range(replay.get("players", len(seats)))],
        timing=timing,
    )
    if problem:
        frames["warning"] = f"{problem}. The recorded result is shown; the moves are not."
    owned = sealing.owned_seats(user=request.user, game=game)
    if owned and not problem:  # the owner's "fork from here" line (docs/web.md)
        frames["fork"] = {"seats": sorted(owned), "url": request.build_absolute_uri(reverse("web:game_detail", args=[game.pk]))}
    per_seat = (game.timing or {}).get("per_seat") if isinstance(game.timing, dict) else None
    timing_rows = (
        [{"seat": s, "bot": names.get(s, f"Seat {s}"), **row} for s, row in enumerate(per_seat)]
        if isinstance(per_seat, list)
        else []
    )
    seat_param = request.GET.get("seat")
    # Only a plain seat number is read; anything else (e.g. "²", which isdigit() accepts and
    # int() refuses) shows the table view, as no parameter does.
    seat_view = int(seat_param) if seat_param and re.fullmatch(r"[0-9]", seat_param) and int(seat_param) < frames["players"] else None
    return render(
        request,
        "web/game_detail.html",
        {
            "game": game,
            "t": game.table.tournament,
            "seats": seats,
            "frames": frames,
            "seat_view": seat_view,
            "payments": frames["payments"],
            "timing_rows": timing_rows,
            "proof_url": _proof_url(request, game),
        },
    )


@require_GET
def game_replay_json(request: HttpRequest, game_id: int) -> HttpResponse:
    try:
        replay = game_replay_stored(game=game_id)
    except Game.DoesNotExist as exc:
        raise Http404("No such game") from exc
    except sealing.DealWithheld as withheld:
        game = withheld.game
        return _with_notices(HttpResponseForbidden(
            f"The replay of game {game.pk} is {sealing.DEAL_WITHHELD}.\n", content_type="text/plain"
        ), game.table.tournament)
    except Replay.DoesNotExist as exc:
        raise Http404("This game has no stored replay") from exc
    game = replay.game
    try:
        text = replay_public_text(replay=replay)
    except ReplayError as exc:
        return _with_notices(HttpResponse(
            f"{exc}.\n", status=410, content_type="text/plain"
        ), game.table.tournament)
    response = HttpResponse(text, content_type="application/json")
    response["Content-Disposition"] = f'attachment; filename="tienlen-game-{game.id}.json"'
    return _with_notices(response, game.table.tournament)


DEALS_PER_PAGE = 200


@require_GET
def tournament_deals(request: HttpRequest, slug: str) -> HttpResponse:
    """The deal commitments (published before play) and the seeds revealed so far."""
    tournament = _tournament(slug)
    page = Paginator(deal_list(tournament=tournament), DEALS_PER_PAGE).get_page(request.GET.get("page"))
    tables = deal_group_tables(tournament=tournament, groups={d.group for d in page.object_list})
    return render(
        request, "web/tournament_deals.html",
        {"t": tournament, "page": page, "rows": [(d, tables.get(d.group, []), sealing.deal_seed(d)) for d in page.object_list],
         "counts": deal_counts(tournament=tournament)},
    )


@require_GET
def fair_play(request: HttpRequest) -> HttpResponse:
    """What is committed, when it is revealed, and how to check it (docs/fair-play.md)."""
    return render(request, "web/fair_play.html")
