"""Reads for pages and the API: right answers in a pinned number of queries."""

from __future__ import annotations

import random

import pytest

from tests.tournaments.conftest import make_result, running_round_robin
from tournaments import selectors, services
from tournaments.models import RatingPool

pytestmark = pytest.mark.django_db


@pytest.fixture
def played(organiser, bots):
    """An 8-bot round robin at tables of 4 with every game recorded."""
    tournament = running_round_robin(organiser, bots, seats_per_table=4)
    rng = random.Random(1)
    strength = {b.pk: i for i, b in enumerate(bots)}  # bot7 strongest
    for table in tournament.tables.all():
        participants = [s.entrant.bot_id for s in table.seats.select_related("entrant").order_by("seat")]
        for i in range(table.games_planned):
            rotation = i % 4
            seat_participants = [(s + rotation) % 4 for s in range(4)]
            seats = list(range(4))
            noisy = {s: strength[participants[seat_participants[s]]] + rng.random() * 3 for s in seats}
            order = sorted(seats, key=lambda s: -noisy[s])
            services.table_game_record(table_id=table.pk, result=make_result(i, order, seat_participants))
        services.table_complete(table_id=table.pk)
    tournament.refresh_from_db()
    return tournament


def test_round_robin_finishes_and_reports_progress(played, django_assert_num_queries) -> None:
    assert played.status == "finished"
    with django_assert_num_queries(1):
        progress = selectors.tournament_progress(tournament=played)
    assert progress.tables_done == progress.tables_total == 14
    assert progress.games_done == progress.games_planned == 14 * 4
    assert progress.percent == 100.0


def test_standings_rank_the_strongest_first_with_intervals(played, bots, django_assert_num_queries) -> None:
    with django_assert_num_queries(4):
        rows = selectors.tournament_standings(tournament=played)
    assert [r.bot_name for r in rows[:2]] == ["bot7", "bot6"]
    assert rows[-1].bot_name == "bot0"
    assert all(r.games == 28 for r in rows)  # each bot: 7 tables x 4 games
    assert sum(r.points for r in rows) == 0
    top = rows[0]
    assert top.points_ci > 0 and top.place_mean < 2.0
    assert top.strength_low < top.strength < top.strength_high
    assert rows[0].strength > rows[-1].strength
    assert top.rating > 1500 > rows[-1].rating


def test_cross_table_is_pairwise_and_symmetric(played, django_assert_num_queries) -> None:
    with django_assert_num_queries(2):
        cross = selectors.tournament_cross_table(tournament=played)
    ids = [e["entrant_id"] for e in cross.entrants]
    for a in ids:
        for b in ids:
            if a != b:
                ab, ba = cross.cells[a][b], cross.cells[b][a]
                assert ab["games"] == ba["games"] == 12  # every pair shares 3 tables x 4 games
                assert ab["score"] + ba["score"] == ab["games"]
                assert ab["points"] == -ba["points"]


def test_bracket_lists_rounds_tables_and_seats(played, django_assert_num_queries) -> None:
    with django_assert_num_queries(2):
        bracket = selectors.tournament_bracket(tournament=played)
    assert len(bracket) == 1 and len(bracket[0]["tables"]) == 14
    assert all(len(t["seats"]) == 4 for t in bracket[0]["tables"])


def test_tournament_list_and_leaderboard_query_counts(played, django_assert_num_queries) -> None:
    with django_assert_num_queries(1):
        rows = list(selectors.tournament_list())
    assert rows[0].entrant_count == 8 and rows[0].tables_done == 14
    pool = RatingPool.objects.get(preset="south", seats=4)
    with django_assert_num_queries(1):
        board = list(selectors.pool_leaderboard(pool=pool))
    assert [r.bot.name for r in board][:1] == ["bot7"]
    assert board[0].bot.owner.username in ("owner", "other")


def test_bot_page_head_to_head_and_games(played, bots, django_assert_num_queries) -> None:
    bot = bots[7]
    with django_assert_num_queries(4):
        page = selectors.bot_page(bot=bot)
        assert page.ratings[0].pool.seats == 4
        assert page.tournaments[0].tournament.slug == played.slug
        assert page.recent_games[0].game.table.tournament.slug == played.slug
    with django_assert_num_queries(1):
        h2h = selectors.head_to_head(bot_a=bots[7], bot_b=bots[0])
    assert h2h.games == 12 and h2h.a_above > h2h.b_above
    with django_assert_num_queries(2):
        games = list(selectors.game_list(tournament=played)[:20])
        names = [s.bot.name for g in games for s in g.seats.all()]
    assert len(names) == 80
    with django_assert_num_queries(1):
        replay = selectors.game_replay(game_id=games[0].pk)
    assert replay["result"]["points"] == games[0].points
    pool = RatingPool.objects.get(preset="south", seats=4)
    history = list(selectors.bot_rating_history(bot=bot, pool=pool))
    assert len(history) == 28
    assert history[-1].rating_after == page.ratings[0].rating
