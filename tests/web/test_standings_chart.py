"""The standings picture: each bot's points per game with its 95% interval, drawn
on the server as SVG on the tournament page, from the same rows the API serves."""

from __future__ import annotations

import math
import re
from types import SimpleNamespace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.tournaments.conftest import make_result, running_round_robin
from tests.web.factories import make_user
from tournaments.selectors.standings import tournament_standings
from tournaments.services.accounts import bot_create
from tournaments.services.recording import table_game_record
from web.standings_chart import standings_chart


def row(name: str, mean: float, ci: float, games: int = 10):
    return SimpleNamespace(bot_name=name, points_mean=mean, points_ci=ci, games=games)


def test_no_games_no_chart():
    assert standings_chart([]) is None
    assert standings_chart([row("a", 0.0, math.inf, games=0)]) is None


def test_bars_follow_the_standings_and_scale_with_the_means():
    c = standings_chart([row("top", 2.0, 0.5), row("mid", 0.0, 1.0), row("low", -1.5, 0.25)])
    assert [b["bot"] for b in c["bars"]] == ["top", "mid", "low"]
    xs = [b["x"] for b in c["bars"]]
    assert xs[0] > xs[1] > xs[2]
    assert c["bars"][1]["x"] == c["zero"]  # a mean of 0 sits on the zero line
    top = c["bars"][0]
    assert top["x_high"] - top["x"] == pytest.approx(top["x"] - top["x_low"], abs=0.2)
    assert top["value"] == "+2.00 ± 0.50"
    assert c["bars"][2]["side"] == "neg"


def test_a_bot_with_one_game_has_a_dot_and_no_bar():
    c = standings_chart([row("many", 1.0, 0.5), row("once", 3.0, math.inf, games=1)])
    once = c["bars"][1]
    assert once["x_low"] is None and once["x_high"] is None
    assert once["value"] == "+3.00 (1 game)"
    assert c["x0"] <= once["x"] <= c["x1"]


@given(
    st.lists(
        st.tuples(
            st.floats(min_value=-30, max_value=30, allow_nan=False),
            st.floats(min_value=0, max_value=40, allow_nan=False) | st.just(math.inf),
        ),
        min_size=1,
        max_size=16,
    )
)
def test_everything_is_drawn_inside_the_plot_and_each_dot_inside_its_bar(rows):
    c = standings_chart([row(f"b{i}", m, ci, games=1 if math.isinf(ci) else 5) for i, (m, ci) in enumerate(rows)])
    assert c["x0"] <= c["zero"] <= c["x1"]
    for bar in c["bars"]:
        assert c["x0"] - 0.1 <= bar["x"] <= c["x1"] + 0.1
        assert c["top"] <= bar["y"] <= c["bottom"]
        if bar["x_low"] is not None:
            assert c["x0"] - 0.1 <= bar["x_low"] <= bar["x"] <= bar["x_high"] <= c["x1"] + 0.1
    assert [t["x"] for t in c["ticks"]] == sorted(t["x"] for t in c["ticks"])


@pytest.mark.django_db
def test_the_page_draws_what_the_api_serves(client):
    organiser = make_user("org", staff=True)
    bots = [bot_create(owner=make_user(f"owner{i}"), name=f"bot{i}")[0] for i in range(4)]
    tournament = running_round_robin(organiser, bots, seats_per_table=4, games_per_table=6)
    table = tournament.tables.first()
    for i in range(6):
        table_game_record(
            table_id=table.pk, result=make_result(i, [0, 1, 2, 3], [(s + i % 2) % 4 for s in range(4)])
        )
    api = client.get(f"/api/v1/tournaments/{tournament.slug}/standings/").json()
    html = client.get(f"/tournaments/{tournament.slug}/").content.decode()
    svg = html[html.index('id="standings-chart"'):html.index("</figure>")]
    drawn = re.findall(r'<g class="bar [a-z]+" data-bot="([^"]+)">', svg)
    assert drawn == [r["bot_name"] for r in api]  # every bot, in standings order
    for r in api:
        assert r["points_low"] == pytest.approx(r["points_mean"] - r["points_ci"])
        assert r["points_high"] == pytest.approx(r["points_mean"] + r["points_ci"])
        assert f'{r["points_mean"]:+.2f} ± {r["points_ci"]:.2f}' in svg
    standings = tournament_standings(tournament=tournament, with_strength=False)
    assert len(standings) == len(api)
