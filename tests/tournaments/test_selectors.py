"""Reads for pages and the API: right answers in a pinned number of queries."""

from __future__ import annotations

import random

import pytest

from tests.tournaments.conftest import make_result, running_round_robin
from tournaments.models import GameSeat, RatingPool, Table, TableSeat, Tournament
from tournaments.selectors.bots import bot_page, head_to_head
from tournaments.selectors.brackets import tournament_bracket
from tournaments.selectors.cross_table import tournament_cross_table
from tournaments.selectors.games import game_list, game_replay
from tournaments.selectors.ratings import bot_rating_history, pool_leaderboard
from tournaments.selectors.standings import tournament_standings
from tournaments.selectors.tournaments import tournament_list, tournament_progress
from tournaments.services.recording import table_game_record
from tournaments.services.tables import table_complete
from tournaments.services.tournaments import (
    tournament_create,
    tournament_entrant_add,
    tournament_schedule,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def played(organiser, bots):
    """An 8-bot round robin at tables of 4 with every game recorded."""
    tournament = running_round_robin(organiser, bots, seats_per_table=4)
    rng = random.Random(1)
    strength = {b.pk: i for i, b in enumerate(bots)}  # bot7 strongest
    for table in tournament.tables.order_by("number"):  # the same draws for the same table
        participants = [s.entrant.bot_id for s in table.seats.select_related("entrant").order_by("seat")]
        for i in range(table.games_planned):
            rotation = i % 4
            seat_participants = [(s + rotation) % 4 for s in range(4)]
            seats = list(range(4))
            noisy = {s: strength[participants[seat_participants[s]]] + rng.random() * 3 for s in seats}
            order = sorted(seats, key=lambda s: -noisy[s])
            table_game_record(table_id=table.pk, result=make_result(i, order, seat_participants))
        table_complete(table_id=table.pk)
    tournament.refresh_from_db()
    return tournament


def test_round_robin_finishes_and_reports_progress(played, django_assert_num_queries) -> None:
    assert played.status == "finished"
    with django_assert_num_queries(1):
        progress = tournament_progress(tournament=played)
    assert progress.tables_done == progress.tables_total == 14
    assert progress.games_done == progress.games_planned == 14 * 4
    assert progress.percent == 100.0


def test_progress_of_a_list_row_needs_no_query(played, django_assert_num_queries) -> None:
    with django_assert_num_queries(1):
        row = tournament_list().get(pk=played.pk)
    with django_assert_num_queries(0):
        progress = tournament_progress(tournament=row)
    assert progress == tournament_progress(tournament=played)
    assert progress.as_dict()["percent"] == 100.0 and progress.fraction == 1.0


def test_progress_counts_failed_and_cancelled_tables_as_done(played, django_assert_num_queries) -> None:
    first, second, third, *_ = played.tables.order_by("number")
    Table.objects.filter(pk=first.pk).update(status=Table.Status.FAILED, games_recorded=1)
    Table.objects.filter(pk=second.pk).update(status=Table.Status.CANCELLED, games_recorded=0)
    Table.objects.filter(pk=third.pk).update(status=Table.Status.RUNNING, games_recorded=2)
    Tournament.objects.filter(pk=played.pk).update(status=Tournament.Status.RUNNING)
    with django_assert_num_queries(1):
        progress = tournament_progress(tournament=played)
    assert (progress.tables_total, progress.tables_done, progress.tables_running, progress.tables_failed) == (14, 13, 1, 1)
    # Closed tables plan the games they recorded (they will play no more); the running one all 4.
    assert (progress.games_done, progress.games_planned) == (11 * 4 + 1 + 0 + 2, 11 * 4 + 1 + 0 + 4)
    # Once the last table closes, the bar is full even though two tables ended early.
    Table.objects.filter(pk=third.pk).update(status=Table.Status.DONE, games_recorded=4)
    Tournament.objects.filter(pk=played.pk).update(status=Tournament.Status.FINISHED)
    progress = tournament_progress(tournament=played)
    assert progress.status == "finished" and progress.percent == 100.0 and progress.tables_done == 14


def test_progress_of_a_running_knockout_counts_rounds_not_created_yet(organiser, bots, django_assert_num_queries) -> None:
    from django.db import transaction

    tournament = tournament_create(organiser=organiser, name="KO", format="knockout",
                                            seats_per_table=4, advance_per_table=2, games_per_table=3)
    for bot in bots:
        tournament_entrant_add(tournament=tournament, bot=bot)
    with transaction.atomic():
        Tournament.objects.filter(pk=tournament.pk).update(status="scheduled")
    tournament_schedule(tournament_id=tournament.pk)
    tournament.refresh_from_db()
    round1 = list(tournament.tables.order_by("number"))
    for table in round1:
        for i in range(table.games_planned):
            table_game_record(table_id=table.pk, result=make_result(i, [0, 1, 2, 3]))
    # Both first-round tables played out; the final exists only once both are closed.
    table_complete(table_id=round1[0].pk)
    Table.objects.filter(pk=round1[1].pk).update(status=Table.Status.DONE)
    assert not tournament.tables.filter(round=2).exists()
    with django_assert_num_queries(1):
        progress = tournament_progress(tournament=tournament)
    assert (progress.tables_done, progress.tables_total) == (2, 3)
    assert (progress.games_done, progress.games_planned) == (6, 9)
    assert progress.percent == 66.7
    with django_assert_num_queries(1):
        row = tournament_list().get(pk=tournament.pk)
    with django_assert_num_queries(0):
        assert tournament_progress(tournament=row) == progress


def test_standings_rank_the_strongest_first_with_intervals(played, bots, django_assert_num_queries) -> None:
    with django_assert_num_queries(3):  # entrants, sums per entrant, every game's order
        rows = tournament_standings(tournament=played)
    assert [r.bot_name for r in rows[:2]] == ["bot7", "bot6"]
    assert rows[-1].bot_name == "bot0"
    assert all(r.games == 28 for r in rows)  # each bot: 7 tables x 4 games
    assert sum(r.points for r in rows) == 0
    top = rows[0]
    assert top.place_mean < 2.0
    # a bot that won every game has an interval of 0; the others' results vary
    assert all(r.points_ci > 0 for r in rows if r.place_mean > 1.0)
    assert top.strength_low < top.strength < top.strength_high
    assert rows[0].strength > rows[-1].strength
    # 28 games per bot of nearly deterministic orders: intervals of a few hundred Elo (not
    # the ±1,100-1,700 an earlier fit gave whatever the data), and the best and worst bots clearly apart.
    assert all(50 < (r.strength_high - r.strength_low) / 2 < 500 for r in rows)
    assert rows[0].strength_low > rows[-1].strength_high
    assert top.rating > 1500 > rows[-1].rating
    assert top.owner == "owner7" and rows[-1].owner == "owner"


def test_standings_without_strength_are_the_same_rows_in_two_queries(played, django_assert_num_queries) -> None:
    full = tournament_standings(tournament=played)
    with django_assert_num_queries(2):  # entrants (with forfeits and ratings), sums per entrant
        fast = tournament_standings(tournament=played, with_strength=False)
    assert all(r.strength is None for r in fast)
    strength_fields = {"strength", "strength_low", "strength_high"}
    for a, b in zip(full, fast, strict=True):
        assert {k: v for k, v in vars(a).items() if k not in strength_fields} == {
            k: v for k, v in vars(b).items() if k not in strength_fields
        }


def test_standings_count_strikes_and_forfeited_tables(played, django_assert_num_queries) -> None:
    table = played.tables.order_by("number").first()
    seat = table.seats.select_related("entrant").get(seat=0)
    TableSeat.objects.filter(pk=seat.pk).update(forfeited=True)
    GameSeat.objects.filter(game__table=table, entrant=seat.entrant).update(strikes=2, forfeited=True)
    row = next(r for r in tournament_standings(tournament=played, with_strength=False)
               if r.entrant_id == seat.entrant_id)
    assert row.forfeits == 1  # one table, however many games the stand-in played there
    assert row.strikes == 2 * table.games_planned


def _cross_table_reference(tournament) -> dict[int, dict[int, dict[str, float]]]:
    """The cross-table by the definition, one pair of seats at a time."""
    by_game: dict[int, list[tuple[int, int, int]]] = {}
    for game_id, entrant, place, points in GameSeat.objects.filter(game__table__tournament=tournament).values_list(
        "game_id", "entrant_id", "place", "points"
    ):
        by_game.setdefault(game_id, []).append((entrant, place, points))
    ids = list(tournament.entrants.values_list("id", flat=True))
    cells = {a: {b: {"games": 0, "score": 0.0, "points": 0, "above": 0, "below": 0} for b in ids if b != a} for a in ids}
    for seats in by_game.values():
        for a, pa, xa in seats:
            for b, pb, xb in seats:
                if a != b:
                    cell = cells[a][b]
                    cell["games"] += 1
                    cell["score"] += 1.0 if pa < pb else 0.5 if pa == pb else 0.0
                    cell["points"] += xa - xb
                    cell["above"] += pa < pb
                    cell["below"] += pa > pb
    return cells


def test_cross_table_matches_its_definition_with_shared_places(played) -> None:
    # A shared last place (frozen players) in one game: that tie counts half.
    games = list(played.tables.order_by("number").first().games.order_by("index"))[:1]
    GameSeat.objects.filter(game__in=games, place__gte=3).update(place=3)
    cross = tournament_cross_table(tournament=played)
    assert cross.cells == _cross_table_reference(played)
    assert any(cell["score"] % 1 for row in cross.cells.values() for cell in row.values())


def test_cross_table_of_a_tournament_without_games(organiser, bots) -> None:
    tournament = running_round_robin(organiser, bots, seats_per_table=4)
    cross = tournament_cross_table(tournament=tournament)
    assert len(cross.entrants) == 8
    assert all(cell == {"games": 0, "score": 0.0, "points": 0, "above": 0, "below": 0}
               for row in cross.cells.values() for cell in row.values())


def test_cross_table_is_pairwise_and_symmetric(played, django_assert_num_queries) -> None:
    with django_assert_num_queries(2):
        cross = tournament_cross_table(tournament=played)
    ids = [e["entrant_id"] for e in cross.entrants]
    for a in ids:
        for b in ids:
            if a != b:
                ab, ba = cross.cells[a][b], cross.cells[b][a]
                assert ab["games"] == ba["games"] == 12  # every pair shares 3 tables x 4 games
                assert ab["score"] + ba["score"] == ab["games"]
                assert ab["points"] == -ba["points"]
                assert ab["above"] == ba["below"] and ab["above"] + ab["below"] <= ab["games"]


def test_bracket_lists_rounds_tables_and_seats(played, django_assert_num_queries) -> None:
    with django_assert_num_queries(2):
        bracket = tournament_bracket(tournament=played)
    # Every table carries its round of the schedule: 7 rounds of 2 disjoint tables.
    assert [b["round"] for b in bracket] == list(range(1, 8))
    assert all(len(b["tables"]) == 2 for b in bracket)
    assert all(len(t["seats"]) == 4 for b in bracket for t in b["tables"])
    for b in bracket:
        seated = [s["bot_id"] for t in b["tables"] for s in t["seats"]]
        assert len(seated) == len(set(seated)) == 8


def test_tournament_list_and_leaderboard_query_counts(played, django_assert_num_queries) -> None:
    with django_assert_num_queries(1):
        rows = list(tournament_list())
    assert rows[0].entrant_count == 8 and rows[0].tables_done == 14
    pool = RatingPool.objects.get(preset="south", seats=4)
    with django_assert_num_queries(1):
        board = list(pool_leaderboard(pool=pool))
    assert [r.bot.name for r in board][:1] == ["bot7"]
    assert board[0].bot.owner.username == "owner7"


def test_bot_page_head_to_head_and_games(played, bots, django_assert_num_queries) -> None:
    bot = bots[7]
    with django_assert_num_queries(4):
        page = bot_page(bot=bot)
        assert page.ratings[0].pool.seats == 4
        assert page.tournaments[0].tournament.slug == played.slug
        assert page.recent_games[0].game.table.tournament.slug == played.slug
    with django_assert_num_queries(1):
        h2h = head_to_head(bot_a=bots[7], bot_b=bots[0])
    assert h2h.games == 12 and h2h.a_above > h2h.b_above
    with django_assert_num_queries(2):
        games = list(game_list(tournament=played)[:20])
        names = [s.bot.name for g in games for s in g.seats.all()]
    assert len(names) == 80
    with django_assert_num_queries(1):
        replay = game_replay(game_id=games[0].pk)
    assert replay["result"]["points"] == games[0].points
    pool = RatingPool.objects.get(preset="south", seats=4)
    history = list(bot_rating_history(bot=bot, pool=pool))
    assert len(history) == 28
    assert history[-1].rating_after == page.ratings[0].rating
