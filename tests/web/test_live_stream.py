"""Server-sent progress events under ASGI: the stream itself, and a real browser page
served by uvicorn following a tournament without polling."""

from __future__ import annotations

import json
import os

import pytest

from tests.web.factories import (
    load_replay,
    make_knockout_between_rounds,
    make_world,
    make_world_with_closed_tables,
)
from tournaments.models import Table, Tournament

os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")


@pytest.fixture
async def close_worker_connections():
    """`sync_to_async` runs the views' queries on a worker thread whose database connections
    no request closes; close them, or PostgreSQL refuses to drop the test database."""
    yield
    from asgiref.sync import sync_to_async
    from django.db import connections

    await sync_to_async(connections.close_all)()


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("close_worker_connections")
async def test_stream_sends_progress_then_ends_when_finished(async_client):
    from asgiref.sync import sync_to_async

    w = await sync_to_async(make_world)(replay=load_replay("game_2p_handmade.json"))
    response = await async_client.get(f"/tournaments/{w.tournament.slug}/live/")
    assert response.status_code == 200
    assert response["Content-Type"] == "text/event-stream"
    body = "".join([chunk.decode() async for chunk in response.streaming_content])
    events = [e for e in body.split("\n\n") if e]
    assert events[0] == "retry: 3000"
    data = json.loads(events[1].removeprefix("data: "))
    assert data["status"] == "finished" and data["games_done"] == 4 and data["percent"] == 100.0
    assert events[-1].startswith("event: end")


async def _first_data(response) -> dict:
    """The first progress document of a stream that may run for minutes, then hang up."""
    stream = response.streaming_content
    try:
        async for chunk in stream:
            text = chunk.decode()
            if text.startswith("data: "):
                return json.loads(text.removeprefix("data: "))
    finally:
        await stream.aclose()
    raise AssertionError("the stream ended without a progress event")


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("close_worker_connections")
@pytest.mark.parametrize("build", [make_knockout_between_rounds, make_world_with_closed_tables],
                         ids=["knockout-between-rounds", "failed-and-cancelled-tables"])
async def test_stream_sends_the_apis_progress(async_client, build):
    from asgiref.sync import sync_to_async

    w = await sync_to_async(build)()
    api = (await async_client.get(f"/api/v1/tournaments/{w.tournament.slug}/progress/")).json()
    assert api["status"] == "running" and api["percent"] < 100
    response = await async_client.get(f"/tournaments/{w.tournament.slug}/live/")
    assert response.status_code == 200
    assert await _first_data(response) == api


@pytest.mark.django_db
def test_wsgi_pages_poll_instead_of_streaming(client):
    w = make_world(replay=load_replay("game_2p_handmade.json"), status=Tournament.Status.RUNNING)
    html = client.get(f"/tournaments/{w.tournament.slug}/").content.decode()
    assert "data-progress-url" in html and "data-stream-url" not in html
    assert client.get("/tournaments/nope/live/").status_code == 404


@pytest.mark.browser
def test_browser_follows_a_tournament_over_sse(asgi_server, page, settings):
    settings.ALLOWED_HOSTS = ["127.0.0.1", "localhost"]
    w = make_world(replay=load_replay("game_2p_handmade.json"), tables=2, games_per_table=4,
                   games_done_per_table=1, status=Tournament.Status.RUNNING, slug="sse-cup")
    page.goto(f"{asgi_server}/tournaments/sse-cup/")
    page.wait_for_selector("#progress-panel[data-live=sse]")
    assert page.get_attribute("[role=progressbar]", "aria-valuenow") == "25"
    Table.objects.filter(tournament=w.tournament).update(games_recorded=3)
    page.wait_for_function("() => document.querySelector('[role=progressbar]').getAttribute('aria-valuenow') === '75'")
    Table.objects.filter(tournament=w.tournament).update(games_recorded=4, status=Table.Status.DONE)
    Tournament.objects.filter(pk=w.tournament.pk).update(status=Tournament.Status.FINISHED)
    page.wait_for_function("() => document.getElementById('progress-panel').dataset.status === 'finished'")
    assert page.text_content("#t-status") == "Finished"
    assert page.get_attribute("#progress-panel", "data-live") == "sse"  # never fell back to polling
