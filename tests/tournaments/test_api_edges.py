"""Ids and parameters that do not fit the database get a clear 4xx, not a 500; the sweep
over every URL is tests/web/test_url_edges.py, these are the cases first reported and
the answers a client sees."""

from __future__ import annotations

import pytest

from tests.web.factories import load_replay, make_world

pytestmark = pytest.mark.django_db

TOO_BIG = "99999999999999999999"


@pytest.fixture
def world():
    return make_world(replay=load_replay("game_4p.json"), tables=2, games_per_table=2)


def test_an_id_too_big_for_the_database_is_a_404(client, world) -> None:
    for url in (f"/api/v1/games/{TOO_BIG}/replay/", f"/api/v1/games/{TOO_BIG}/", f"/games/{TOO_BIG}/",
                f"/games/{TOO_BIG}/replay.json", "/api/v1/games/9223372036854775808/"):
        assert client.get(url).status_code == 404, url
    # The largest id that fits is looked up (and is simply not there).
    assert client.get("/api/v1/games/9223372036854775807/").json() == {"detail": "No such game."}


def test_a_name_the_database_cannot_hold_is_a_404(client, world) -> None:
    for url in ("/api/v1/bots/a%00b/", "/bots/a%00b/", "/api/v1/pools/south%00-4/leaderboard/",
                f"/api/v1/bots/{world.bots[0].name}/vs/x%00/", "/leaderboards/south-99999999999/"):
        assert client.get(url).status_code == 404, url


def test_paging_beyond_the_database_is_a_400_naming_the_parameter(client, world) -> None:
    response = client.get(f"/api/v1/bots/?offset={TOO_BIG}")
    assert response.status_code == 400 and response.json() == {"offset": ["Must be at most 2147483647."]}
    response = client.get(f"/api/v1/bots/?limit={TOO_BIG}")
    assert response.status_code == 200 and len(response.json()["results"]) == 4  # cut to the maximum


def test_list_filters_say_what_is_wrong(client, world) -> None:
    assert client.get("/api/v1/tournaments/?status=%00").json() == {
        "status": ["Unknown status; choose from draft, scheduled, running, finished, cancelled."]
    }
    assert client.get("/api/v1/pools/south-4/leaderboard/?min_games=%C2%B2").json() == {
        "min_games": ["Must be a whole number from 0 to 999999999."]
    }
    assert client.get(f"/api/v1/pools/south-4/leaderboard/?min_games={TOO_BIG}").status_code == 400


def test_the_documented_format_filter_filters(client, world) -> None:
    # DRF read ?format= as the renderer to use: ?format=knockout answered 404.
    assert [t["slug"] for t in client.get("/api/v1/tournaments/?format=round_robin").json()["results"]] == ["spring-open"]
    assert client.get("/api/v1/tournaments/?format=knockout").json()["results"] == []
    response = client.get("/api/v1/tournaments/?format=bogus")
    assert response.status_code == 400 and "choose from round_robin, knockout, ladder" in response.json()["format"][0]


def test_a_replay_page_ignores_a_seat_it_cannot_read(client, world) -> None:
    game = world.games[0]
    plain = client.get(f"/games/{game.pk}/")
    for seat in ("%C2%B2", "%00", TOO_BIG, "-1", "7"):
        response = client.get(f"/games/{game.pk}/?seat={seat}")
        assert response.status_code == 200, seat
        assert response.context["seat_view"] is None
    assert client.get(f"/games/{game.pk}/?seat=2").context["seat_view"] == 2
    assert plain.context["seat_view"] is None
