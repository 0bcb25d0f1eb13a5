"""Live tournament progress as server-sent events, for deployments served over ASGI.

Under ASGI (uvicorn) one open page costs one idle coroutine and a cheap aggregate query per
second instead of a request every two seconds. Under WSGI a streamed response is buffered
until it ends, so pages served over WSGI never get the stream's URL and keep polling
`progress.json` (the same JSON as the API's progress: tournaments.selectors.tournaments.Progress.as_dict).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator

from asgiref.sync import sync_to_async
from django.http import Http404, HttpRequest, StreamingHttpResponse

from tournaments.models import Tournament
from tournaments.selectors.tournaments import tournament_progress, tournament_rows

STREAM_SECONDS = 300  # then the browser's EventSource reconnects on its own
CHECK_SECONDS = 1.0
OVER = (Tournament.Status.FINISHED, Tournament.Status.CANCELLED)


def _progress(slug: str) -> dict | None:
    tournament = tournament_rows().filter(slug=slug).first()
    if tournament is None:
        return None
    return tournament_progress(tournament=tournament).as_dict()


async def _events(slug: str, first: dict) -> AsyncIterator[str]:
    last = None
    data = first
    loop = asyncio.get_running_loop()
    deadline = loop.time() + STREAM_SECONDS
    yield "retry: 3000\n\n"
    while True:
        if data is None:
            yield "event: gone\ndata: {}\n\n"
            return
        if data != last:
            yield f"data: {json.dumps(data)}\n\n"
            last = data
        if data["status"] in OVER or loop.time() > deadline:
            yield "event: end\ndata: {}\n\n"
            return
        await asyncio.sleep(CHECK_SECONDS)
        data = await sync_to_async(_progress)(slug)


async def tournament_progress_stream(request: HttpRequest, slug: str) -> StreamingHttpResponse:
    first = await sync_to_async(_progress)(slug)
    if first is None:
        raise Http404("No such tournament")
    response = StreamingHttpResponse(_events(slug, first), content_type="text/event-stream")
    response["Cache-Control"] = "no-store"
    response["X-Accel-Buffering"] = "no"  # nginx: pass events through as they come
    return response


def is_asgi(request: HttpRequest) -> bool:
    from django.core.handlers.asgi import ASGIRequest

    return isinstance(request, ASGIRequest)
