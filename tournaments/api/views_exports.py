"""A tournament's downloads in the API: standings, cross-table and games as CSV, its replays
as one zip archive (tournaments/exports.py). Public, as the pages they export; sealed games
are left out by the selectors the exports read."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

from asgiref.sync import sync_to_async
from django.core.handlers.asgi import ASGIRequest
from django.http import HttpResponse, StreamingHttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework.negotiation import BaseContentNegotiation

from tournaments import exports
from tournaments.api.views import ServiceAPIView


class AnyAccept(BaseContentNegotiation):
    """A download is one format whatever the client accepts (a browser's text/html, curl's
    */*, `Accept: text/csv`): never a 406. DRF's renderer only renders errors here."""

    def select_parser(self, request, parsers):
        return parsers[0]

    def select_renderer(self, request, renderers, format_suffix=None):
        return renderers[0], renderers[0].media_type


_END = object()


async def _pieces_async(pieces: Iterator) -> AsyncIterator:
    """The pieces, each made in the thread the view ran in (its database connection):
    Django under ASGI would otherwise read a plain iterator to its end into memory before
    sending the first byte."""
    step = sync_to_async(next, thread_sensitive=True)
    while (piece := await step(pieces, _END)) is not _END:
        yield piece


def _streamed(request, pieces: Iterator, content_type: str) -> StreamingHttpResponse:
    """A response sent as it is made, under WSGI and under ASGI alike."""
    if isinstance(request._request, ASGIRequest):
        return StreamingHttpResponse(_pieces_async(iter(pieces)), content_type=content_type)
    return StreamingHttpResponse(pieces, content_type=content_type)


def _attachment(response: HttpResponse | StreamingHttpResponse, filename: str):
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


def _csv(request, lines: Iterator[str], filename: str, *, stream: bool = False):
    content_type = "text/csv; charset=utf-8"
    if stream:
        return _attachment(_streamed(request, lines, content_type), filename)
    return _attachment(HttpResponse("".join(lines), content_type=content_type), filename)


_CSV = {(200, "text/csv"): OpenApiResponse(OpenApiTypes.STR, description="CSV, a header line first.")}


class ExportView(ServiceAPIView):
    content_negotiation_class = AnyAccept


class TournamentStandingsCsvView(ExportView):
    @extend_schema(responses=_CSV, summary="Standings as CSV (revealed games only, as the page)")
    def get(self, request, slug: str):
        tournament = self.tournament(slug)
        rows = exports.standings_rows(tournament=tournament)
        return _csv(request, exports.csv_lines(exports.STANDINGS_HEADER, rows), f"tienlen-{slug}-standings.csv")


class TournamentCrossTableCsvView(ExportView):
    @extend_schema(responses=_CSV, summary="Cross-table as CSV: one row per pair and direction (revealed games only)")
    def get(self, request, slug: str):
        tournament = self.tournament(slug)
        rows = exports.cross_table_rows(tournament=tournament)
        return _csv(request, exports.csv_lines(exports.CROSS_TABLE_HEADER, rows), f"tienlen-{slug}-cross-table.csv")


class TournamentGamesCsvView(ExportView):
    @extend_schema(responses=_CSV, summary="Games as CSV: one row per seat of every revealed game, newest first")
    def get(self, request, slug: str):
        tournament = self.tournament(slug)
        rows = exports.games_rows(tournament=tournament)
        return _csv(request, exports.csv_lines(exports.GAMES_HEADER, rows), f"tienlen-{slug}-games.csv", stream=True)


class TournamentReplaysZipView(ExportView):
    @extend_schema(
        responses={(200, "application/zip"): OpenApiResponse(
            OpenApiTypes.BINARY,
            description="replays/tienlen-game-<id>.json for every revealed game (as /games/<id>/replay.json "
            "serves it) and manifest.json (schema tienlen.replay-archive/1: the replays with their round, "
            "table and game, the unreadable ones, and how many games are withheld until their deals are "
            "revealed).")},
        summary="The tournament's revealed replays as one zip archive (streamed)",
    )
    def get(self, request, slug: str):
        tournament = self.tournament(slug)
        response = _streamed(request, exports.replay_archive(tournament=tournament), "application/zip")
        return _attachment(response, exports.replay_archive_name(tournament))
