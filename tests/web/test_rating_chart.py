"""The bot page's rating chart: an x-axis of rated games (ticks at the start, middle and
end, counted before thinning) and a y-range of at least 100 Elo, so a bot moving ±7 Elo
draws a nearly flat line instead of a chart-filling swing."""

from __future__ import annotations

import re

import pytest

from tests.web.factories import make_world
from tournaments.models import RatingChange
from web.queries import CHART_MIN_SPAN, svg_chart

pytestmark = pytest.mark.django_db


def test_a_small_swing_is_drawn_on_a_sensible_range() -> None:
    chart = svg_chart([1500.0, 1507.0, 1493.0, 1500.0])
    assert chart["hi"] - chart["lo"] >= CHART_MIN_SPAN
    assert chart["lo"] < 1493 and chart["hi"] > 1507
    ys = [float(y) for y in re.findall(r",([\d.]+)", chart["path"])]
    assert max(ys) - min(ys) < (chart["y_bottom"] - chart["y_top"]) * 0.2  # nearly flat
    assert [t["label"] for t in chart["x_ticks"]] == [0, 1, 3]
    wide = svg_chart([1400.0, 1650.0])
    assert (wide["lo"], wide["hi"]) == (1400, 1650)  # a real range is kept as it is
    thinned = svg_chart([1500.0, 1510.0, 1520.0], games=4000)
    assert [t["label"] for t in thinned["x_ticks"]] == [0, 2000, 4000]


def test_the_bot_page_chart_has_an_axis_of_games(client) -> None:
    make_world()
    change = RatingChange.objects.select_related("bot").first()
    assert change is not None
    html = client.get(f"/bots/{change.bot.name}/").content.decode()
    chart = html[html.index('<div class="chart">'):]
    chart = chart[: chart.index("</svg>")]
    assert "rated games" in chart and 'class="x-tick"' in chart
    games = RatingChange.objects.filter(bot=change.bot, pool=change.pool).count()
    assert f">{games}</text>" in chart
