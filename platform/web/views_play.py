"""The play page: a person plays one seat against bots at a casual table (docs/web.md, "Play").

Thin: the table is played by a worker (tournaments.play.casual: the seat gateway speaks the
bot protocol to the referee); these views create tables, send their live state (as
`sealing.casual_state_for` allows: the person's own hand to the person only) over server-sent
events or JSON, and take the person's answers, which the services check against the engine's
legal plays."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from asgiref.sync import sync_to_async
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse, StreamingHttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from bots_sdk.rules import PRESETS
from tournaments import sealing
from tournaments.models import CasualTable
from tournaments.selectors import casual as casual_reads
from tournaments.services import casual as casual_services
from web import live
from web.forms import PRESET_LABELS
from web.replay_frames import payment_row, replay_frames

STREAM_SECONDS = 300  # then the browser's EventSource reconnects on its own
CHECK_SECONDS = 0.25


def _presets() -> list[tuple[str, str]]:
    return [(name, PRESET_LABELS.get(name, name)) for name in PRESETS]


def _int(value: Any, default: int) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return default


def _whole(value: Any) -> int | None:
    """A form's whole number, or None when it is not one (the service says what it needs)."""
    try:
        return int(str(value).strip())
    except (TypeError, ValueError):
        return None


def _seconds_ms(value: Any) -> int | None:
    seconds = _whole(value)
    return None if seconds is None else seconds * 1000


def play_home(request: HttpRequest) -> HttpResponse:
    """GET: the form (signed in) and the casual tables playing and just played. POST: a
    new table, then its page."""
    error, status = "", 200
    user = request.user
    chosen = [_int(b, 0) for b in request.GET.getlist("bot")]
    if request.method == "POST":
        if not user.is_authenticated:
            return redirect(f"{reverse('web:login')}?next={reverse('web:play')}")
        bot_ids = [_int(v, 0) for v in request.POST.getlist("opponent") if v]
        try:
            table = casual_services.casual_table_create(
                user=user, preset=request.POST.get("preset", ""), bot_ids=bot_ids,
                games=_whole(request.POST.get("games")),
                move_time_ms=_seconds_ms(request.POST.get("move_time_s")),
                time_bank_ms=_seconds_ms(request.POST.get("time_bank_s")),
                seat=_int(request.POST.get("seat"), 1) - 1)
        except casual_services.CasualError as exc:
            error, status = str(exc), exc.status
            chosen = bot_ids
        else:
            return redirect("web:play_table", table_id=table.pk)
    elif request.method != "GET":
        return HttpResponse(status=405)
    opponents = list(casual_reads.casual_opponents(user=user)) if user.is_authenticated else []
    low_m, high_m = casual_services.MOVE_TIME_MS_RANGE
    low_b, high_b = casual_services.TIME_BANK_MS_RANGE
    return render(request, "web/play.html", {
        "presets": _presets(), "opponents": opponents, "slots": ([*chosen, 0, 0, 0])[:3], "error": error,
        "open_tables": list(casual_reads.casual_tables(open_only=True)[:20]),
        "recent_tables": list(casual_reads.casual_tables().filter(status=CasualTable.Status.DONE)[:10]),
        "move_range": (low_m // 1000, high_m // 1000), "bank_range": (low_b // 1000, high_b // 1000),
        "games_range": casual_services.GAMES_RANGE,
        "bot_clock": (casual_services.BOT_MOVE_TIME_MS / 1000, casual_services.BOT_TIME_BANK_MS / 1000),
        "form": request.POST if request.method == "POST" else {},
    }, status=status if error else 200)


@require_GET
def play_table(request: HttpRequest, table_id: int) -> HttpResponse:
    """A casual table's page: the person's seat for its owner, the live public table for
    anyone else (no hand until each game ends; then the game's replay)."""
    table = casual_reads.casual_table(table_id=table_id)
    if table is None:
        raise Http404("No such table")
    mine = sealing.casual_seat_visible(user=request.user, table=table)
    urls = {
        "state": reverse("web:play_state", args=[table.pk]),
        "stream": reverse("web:play_stream", args=[table.pk]) if live.is_asgi(request) else "",
        "move": reverse("web:play_move", args=[table.pk]) if mine else "",
        "leave": reverse("web:play_leave", args=[table.pk]) if mine else "",
    }
    return render(request, "web/play_table.html", {
        "table": table, "mine": mine, "seats": list(table.seats.all()), "urls": urls,
    })


def _state(table_id: int, user: Any) -> dict[str, Any] | None:
    """The table's state as `user` may see it, each payment with its reason in words."""
    state = casual_reads.casual_state(table_id=table_id, user=user)
    if state is None:
        return None
    names = state["names"]
    for result in state["results"]:
        seat_names = [names[p] if p < len(names) else f"Seat {p}" for p in result["seat_participants"]]
        result["names"] = seat_names
        result["payments"] = [payment_row(p, seat_names) for p in result["payments"]]
    return state


@require_GET
def play_state(request: HttpRequest, table_id: int) -> JsonResponse:
    state = _state(table_id, request.user)
    if state is None:
        raise Http404("No such table")
    response = JsonResponse(state)
    response["Cache-Control"] = "no-store"
    return response


async def _events(table_id: int, user: Any) -> Any:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + STREAM_SECONDS
    last = None
    yield "retry: 1000\n\n"
    while True:
        state = await sync_to_async(_state)(table_id, user)
        if state is None:
            yield "event: gone\ndata: {}\n\n"
            return
        # A new event when what this viewer may see changed (a watcher's state has no
        # write counter: its events never say when the person is asked).
        key = json.dumps(state, sort_keys=True)
        if key != last:
            yield f"data: {json.dumps(state)}\n\n"
            last = key
        if state["status"] in (CasualTable.Status.DONE, CasualTable.Status.FAILED) or loop.time() > deadline:
            yield "event: end\ndata: {}\n\n"
            return
        await asyncio.sleep(CHECK_SECONDS)


async def play_stream(request: HttpRequest, table_id: int) -> StreamingHttpResponse:
    """The table's state as server-sent events (ASGI): a new event on every change."""
    user = await request.auser()  # type: ignore[attr-defined]
    table = await sync_to_async(casual_reads.casual_table)(table_id=table_id)
    if table is None:
        raise Http404("No such table")
    response = StreamingHttpResponse(_events(table_id, user), content_type="text/event-stream")
    response["Cache-Control"] = "no-store"
    response["X-Accel-Buffering"] = "no"
    return response


def _json_body(request: HttpRequest) -> dict[str, Any]:
    try:
        body = json.loads(request.body or b"{}")
    except ValueError:
        raise casual_services.CasualError("the request is not JSON") from None
    if not isinstance(body, dict):
        raise casual_services.CasualError("the request must be a JSON object")
    return body


@require_POST
def play_move(request: HttpRequest, table_id: int) -> JsonResponse:
    """The person's answer: {"move_id": n, "cards": ["3♠", ...]} or {"move_id": n, "pass": true}.
    CSRF-checked (the middleware) and for the table's owner only; refused with the reason
    unless it is one of the engine's legal plays for the move asked now."""
    if not request.user.is_authenticated:
        return JsonResponse({"error": "sign in to play"}, status=403)
    try:
        body = _json_body(request)
        casual_services.casual_answer(user=request.user, table_id=table_id, move_id=body.get("move_id"),
                                      cards=body.get("cards") or [], pass_=body.get("pass") is True)
    except casual_services.CasualError as exc:
        return JsonResponse({"error": str(exc)}, status=exc.status)
    return JsonResponse({"ok": True})


@require_POST
def play_leave(request: HttpRequest, table_id: int) -> HttpResponse:
    if not request.user.is_authenticated:
        return JsonResponse({"error": "sign in to play"}, status=403)
    try:
        casual_services.casual_leave(user=request.user, table_id=table_id)
    except casual_services.CasualError as exc:
        return JsonResponse({"error": str(exc)}, status=exc.status)
    return redirect("web:play_table", table_id=table_id)


@require_GET
def play_game(request: HttpRequest, table_id: int, index: int) -> HttpResponse:
    """A finished casual game's replay (public: a casual deal helps no bot in competition)."""
    game = casual_reads.casual_game(table_id=table_id, index=index)
    if game is None:
        raise Http404("No such game (it may still be playing)")
    table = casual_reads.casual_table(table_id=table_id)
    assert table is not None
    seats = {s.index: s.name for s in table.seats.all()}
    replay = casual_reads.casual_replay(game=game, user=request.user)
    names = [seats.get(p, f"Seat {i}") for i, p in enumerate(game.seat_participants)]
    frames = replay_frames(replay, names=names, timing=None)
    return render(request, "web/play_game.html", {"table": table, "game": game, "frames": frames,
                                                  "names": names, "payments": frames["payments"]})


@require_GET
def play_game_replay(request: HttpRequest, table_id: int, index: int) -> JsonResponse:
    game = casual_reads.casual_game(table_id=table_id, index=index)
    if game is None:
        raise Http404("No such game (it may still be playing)")
    return JsonResponse(casual_reads.casual_replay(game=game, user=request.user))


@login_required
@require_POST
def bot_casual_consent(request: HttpRequest, name: str) -> HttpResponse:
    """The owner's switch: may other people seat this bot at their casual tables?"""
    from tournaments.selectors.bots import bot_find

    bot = bot_find(name=name)
    if bot is None or bot.owner_id != request.user.pk:
        raise Http404("No such bot of yours")
    casual_services.casual_bot_consent(user=request.user, bot=bot,
                                       accept=request.POST.get("accept") == "1")
    return redirect("web:bot_detail", name=bot.name)
