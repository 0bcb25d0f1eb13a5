"""A tournament's downloads: standings, cross-table and games as CSV, the replays as one zip.

What a user notices: each CSV holds what the pages and the paged API show (no sealed game),
opens safely in a spreadsheet (a bot named like a formula is not run), the archive holds
each revealed replay exactly as its own download serves it and counts the rest as
withheld, and a big tournament's archive is sent as it is made (in small pieces, reading
the replays batch by batch) instead of being built in memory first.
"""

from __future__ import annotations

import csv
import io
import json
import zipfile

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from tests.web.factories import make_world
from tournaments import exports
from tournaments.models import Bot, Deal, Game

pytestmark = pytest.mark.django_db

API = "/api/v1/tournaments"


def body(response) -> bytes:
    return b"".join(response.streaming_content) if response.streaming else response.content


def rows(response) -> list[dict[str, str]]:
    assert response.status_code == 200 and response["Content-Type"] == "text/csv; charset=utf-8"
    assert response["Content-Disposition"].startswith('attachment; filename="tienlen-')
    return list(csv.DictReader(io.StringIO(body(response).decode("utf-8"))))


def seal(game: Game) -> None:
    """Its deal is still to be played at another table (as if)."""
    Deal.objects.filter(pk=game.deal_id).update(revealed_at=None)


def test_the_csvs_hold_what_the_api_shows_and_no_sealed_game() -> None:
    w = make_world(bots=4, tables=2, games_per_table=3)
    slug = w.tournament.slug
    hidden = w.games[-1]
    seal(hidden)
    client = Client()
    standings = client.get(f"{API}/{slug}/standings/").json()
    got = rows(client.get(f"{API}/{slug}/standings.csv"))
    assert [(r["rank"], r["bot"], r["games"], r["points"], r["firsts"], r["forfeits"]) for r in got] == [
        (str(s["rank"]), s["bot_name"], str(s["games"]), str(s["points"]), str(s["firsts"]), str(s["forfeits"]))
        for s in standings]
    assert sum(int(r["games"]) for r in got) == 4 * 5  # five revealed games of four seats

    games = rows(client.get(f"{API}/{slug}/games.csv"))
    listed = client.get(f"{API}/{slug}/games/?page_size=100").json()["results"]
    assert [int(r["game"]) for r in games] == [g["id"] for g in listed for _ in g["seats"]]
    assert str(hidden.pk) not in {r["game"] for r in games}
    first = next(g for g in listed if g["id"] == int(games[0]["game"]))
    assert {(r["seat"], r["bot"], r["place"], r["points"]) for r in games if r["game"] == games[0]["game"]} == {
        (str(s["seat"]), s["bot"], str(s["place"]), str(s["points"])) for s in first["seats"]}

    cross = client.get(f"{API}/{slug}/cross-table/").json()
    got = rows(client.get(f"{API}/{slug}/cross-table.csv"))
    names = {str(e["entrant_id"]): e["bot_name"] for e in cross["entrants"]}
    expected = {(names[a], names[b], str(c["games"]), str(c["above"]), str(c["below"]), str(c["points"]))
                for a, row in cross["cells"].items() for b, c in row.items() if c["games"]}
    assert {(r["bot"], r["opponent"], r["games"], r["above"], r["below"], r["points_difference"]) for r in got} == expected


def test_a_name_that_a_spreadsheet_would_run_is_escaped() -> None:
    w = make_world(bots=4, tables=1, games_per_table=1)
    # Names the sign-up and bot forms refuse are stored anyway (an old row, the admin):
    # the export does not rely on them.
    Bot.objects.filter(pk=w.bots[0].pk).update(name='=HYPERLINK("http://x","click")')
    Bot.objects.filter(pk=w.bots[1].pk).update(name="@SUM(1+1)")
    get_user_model().objects.filter(pk=w.bots[0].owner_id).update(username="+cmd|' /C calc'!A0")
    text = body(Client().get(f"{API}/{w.tournament.slug}/standings.csv")).decode()
    assert "'=HYPERLINK" in text and "'@SUM(1+1)" in text and "'+cmd|" in text
    assert "\n=" not in text and ",=" not in text and ",@" not in text and ",+" not in text
    assert [exports.csv_cell(v) for v in ("-2+3", "\tx", -2, 1.5, None, True, "plain")] == [
        "'-2+3", "'\tx", -2, 1.5, "", "yes", "plain"]
    games = body(Client().get(f"{API}/{w.tournament.slug}/games.csv")).decode()
    assert ",-" not in games.replace(",-1,", ",").replace(",-2,", ",")  # negative points stay numbers
    assert ",-1," in games or ",-2," in games


def test_the_archive_holds_each_revealed_replay_as_its_download_serves_it() -> None:
    w = make_world(bots=4, tables=2, games_per_table=2)
    hidden = w.games[0]
    seal(hidden)
    client = Client()
    response = client.get(f"{API}/{w.tournament.slug}/replays.zip", HTTP_ACCEPT="text/html")
    assert response.status_code == 200 and response["Content-Type"] == "application/zip"
    assert response["Content-Disposition"] == f'attachment; filename="tienlen-{w.tournament.slug}-replays.zip"'
    archive = zipfile.ZipFile(io.BytesIO(body(response)))
    assert archive.testzip() is None
    revealed = [g for g in w.games if g.pk != hidden.pk]
    assert sorted(archive.namelist()) == sorted(
        ["manifest.json", *(f"replays/tienlen-game-{g.pk}.json" for g in revealed)])
    for game in revealed:
        served = client.get(f"/games/{game.pk}/replay.json")
        assert archive.read(f"replays/tienlen-game-{game.pk}.json") == served.content
    manifest = json.loads(archive.read("manifest.json"))
    assert manifest["schema"] == "tienlen.replay-archive/1" and manifest["games_withheld"] == 1
    assert [r["game"] for r in manifest["replays"]] == [g.pk for g in revealed]
    assert "withheld until this deal has been played at every table" in manifest["withheld"]
    assert client.get(f"{API}/no-such/replays.zip").status_code == 404
    assert client.get(f"{API}/no-such/standings.csv").status_code == 404


def test_a_damaged_replay_is_listed_not_fatal() -> None:
    from tournaments.models import Replay

    w = make_world(bots=4, tables=1, games_per_table=2)
    Replay.objects.filter(game=w.games[0]).update(data=b"not zlib")
    archive = zipfile.ZipFile(io.BytesIO(body(Client().get(f"{API}/{w.tournament.slug}/replays.zip"))))
    manifest = json.loads(archive.read("manifest.json"))
    assert [u["game"] for u in manifest["unreadable"]] == [w.games[0].pk]
    assert "damaged" in manifest["unreadable"][0]["error"]
    assert f"replays/tienlen-game-{w.games[1].pk}.json" in archive.namelist()


def test_a_big_archive_is_sent_in_pieces_as_it_is_read(django_assert_max_num_queries, monkeypatch) -> None:
    monkeypatch.setattr(exports, "BATCH", 50)
    w = make_world(bots=4, tables=20, games_per_table=30, with_ratings=False)  # 600 games
    response = Client().get(f"{API}/{w.tournament.slug}/replays.zip")
    pieces = iter(response.streaming_content)
    # The first piece leaves after one batch of replays is read, not all twelve.
    with django_assert_max_num_queries(3):
        first = next(pieces)
    sizes = [len(first)] + [len(p) for p in pieces]
    replay_size = len(Client().get(f"/games/{w.games[0].pk}/replay.json").content)
    assert len(sizes) > 600 and max(sizes) < 2 * replay_size + 200_000
    # (Every piece is at most one replay, or the manifest and the zip's directory.)


def test_a_big_games_csv_is_streamed_in_batches(django_assert_num_queries, monkeypatch) -> None:
    monkeypatch.setattr(exports, "BATCH", 100)
    w = make_world(bots=4, tables=10, games_per_table=25, with_ratings=False)  # 250 games
    response = Client().get(f"{API}/{w.tournament.slug}/games.csv")
    assert response.streaming
    # Three batches of 100, 100 and 50 games, two queries each (games, their seats).
    with django_assert_num_queries(6):
        lines = b"".join(response.streaming_content).decode().splitlines()
    assert len(lines) == 1 + 250 * 4


@pytest.mark.parametrize("export", ["standings.csv", "cross-table.csv", "games.csv"])
def test_the_csv_exports_take_a_fixed_number_of_queries(export, django_assert_num_queries) -> None:
    # The tournament, then the standings (entrants, seats summed in the database), the
    # cross-table (entrants, seats) or one batch of games (games, their seats): 3, however
    # many entrants and games.
    for w in (make_world(bots=4, tables=1, games_per_table=1, slug="small"),
              make_world(bots=8, tables=6, games_per_table=5, slug="big")):
        with django_assert_num_queries(3):
            body(Client().get(f"{API}/{w.tournament.slug}/{export}"))


def test_a_download_never_answers_406(client) -> None:
    w = make_world(bots=4, tables=1, games_per_table=1)
    for accept in ("text/csv", "application/zip", "image/png", "*/*"):
        assert client.get(f"{API}/{w.tournament.slug}/standings.csv", HTTP_ACCEPT=accept).status_code == 200
        assert client.get(f"{API}/{w.tournament.slug}/replays.zip", HTTP_ACCEPT=accept).status_code == 200


def test_the_tournament_page_links_to_every_download() -> None:
    w = make_world(bots=4, tables=1, games_per_table=1)
    html = Client().get(f"/tournaments/{w.tournament.slug}/").content.decode()
    for export in ("standings.csv", "cross-table.csv", "games.csv", "replays.zip"):
        assert f'href="{API}/{w.tournament.slug}/{export}"' in html, export


def test_under_asgi_the_downloads_are_streamed_too(monkeypatch) -> None:
    # Django under ASGI reads a plain iterator to its end before sending anything: the
    # export views hand it an asynchronous one, piece by piece.
    from asgiref.sync import async_to_sync
    from django.test import AsyncClient

    monkeypatch.setattr(exports, "BATCH", 2)
    w = make_world(bots=4, tables=2, games_per_table=3)

    async def fetch(path: str) -> tuple[bool, list[bytes]]:
        response = await AsyncClient().get(path)
        assert response.status_code == 200
        return response.is_async, [piece async for piece in response.streaming_content]

    streamed, pieces = async_to_sync(fetch)(f"{API}/{w.tournament.slug}/replays.zip")
    assert streamed and len(pieces) == 6 + 1
    names = zipfile.ZipFile(io.BytesIO(b"".join(pieces))).namelist()
    assert len(names) == 6 + 1 and "manifest.json" in names
    streamed, pieces = async_to_sync(fetch)(f"{API}/{w.tournament.slug}/games.csv")
    assert streamed and b"".join(pieces).decode().count("\r\n") == 1 + 6 * 4
