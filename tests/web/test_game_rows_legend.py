"""Game lists say what a seat's points are (its place's payment plus chops and penalties),
so a last place on 0 or a winner below its place's payment does not look like an error."""

from __future__ import annotations

import pytest

from tests.web.factories import make_world

pytestmark = pytest.mark.django_db


def test_game_lists_explain_points_with_chops_and_penalties(client) -> None:
    world = make_world()
    for url in (f"/tournaments/{world.tournament.slug}/games/", f"/tournaments/{world.tournament.slug}/", "/bots/"
                f"{world.bots[0].name}/games/"):
        html = client.get(url).content.decode()
        assert "game-rows-legend" in html, url
        assert "plus chops and penalties" in html, url
