"""Knockout results: the final has one winner, its losers are out, each round
shows its real table sizes, and standings rank by the round reached before points."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User

from tests.tournaments.conftest import make_result
from tournaments.models import Entrant, Table, Tournament
from tournaments.selectors.brackets import knockout_rounds, tournament_bracket
from tournaments.selectors.standings import tournament_standings
from tournaments.services.accounts import bot_create
from tournaments.services.recording import table_game_record
from tournaments.services.tables import table_complete
from tournaments.services.tournaments import (
    tournament_create,
    tournament_entrant_add,
    tournament_schedule,
)

pytestmark = pytest.mark.django_db


def play(table: Table, ranking: list[str]) -> None:
    """Record every planned game of the table with the bots finishing in `ranking` order."""
    names = [s.entrant.bot.name for s in table.seats.select_related("entrant__bot").order_by("seat")]
    n = len(names)
    for i in range(table.games_planned):
        seat_participants = [(s + i) % n for s in range(n)]
        order = sorted(range(n), key=lambda s: ranking.index(names[seat_participants[s]]))
        table_game_record(table_id=table.pk, result=make_result(i, order, seat_participants))


@pytest.fixture
def five_bot_knockout(organiser, owner):
    """Five bots at tables of 4: round 1 is a table of 3 and a table of 2, then a final of 3."""
    others = [owner] + [User.objects.create_user(f"u{i}") for i in range(4)]
    bots = [bot_create(owner=others[i], name=f"k{i}")[0] for i in range(5)]
    tournament = tournament_create(organiser=organiser, name="KO five", format="knockout",
                                            seats_per_table=4, advance_per_table=2)
    for bot in bots:
        tournament_entrant_add(tournament=tournament, bot=bot)
    Tournament.objects.filter(pk=tournament.pk).update(status="scheduled")
    tournament_schedule(tournament_id=tournament.pk)
    tournament.refresh_from_db()
    return tournament


def run_to_the_end(tournament: Tournament) -> Table:
    # Round 1: k4 > k3 > ... at every table (k0 and k1 go out); the final: k4, k2, k3.
    for table in tournament.tables.filter(round=1):
        play(table, ["k4", "k3", "k2", "k1", "k0"])
    steps = [table_complete(table_id=t.pk) for t in tournament.tables.filter(round=1)]
    final = Table.objects.get(pk=steps[-1].tables_to_play[0])
    play(final, ["k4", "k2", "k3"])
    assert table_complete(table_id=final.pk).tournament_finished
    tournament.refresh_from_db()
    return final


def test_round_one_shows_its_real_table_sizes(five_bot_knockout) -> None:
    t = five_bot_knockout
    bracket = tournament_bracket(tournament=t)
    assert [r["table_sizes"] for r in bracket] == [[3, 2]]
    assert not bracket[0]["final"]
    rounds = knockout_rounds(tournament=t, bracket=bracket, entrants=5)
    # The table of 3 sends 2 through, the table of 2 sends 1: a final of 3, planned.
    assert [(r["round"], r["table_sizes"], r["games"], r["final"], r["planned"]) for r in rounds] == [
        (1, [3, 2], [3, 2], False, False),
        (2, [3], [3], True, True),
    ]


def test_the_final_has_one_winner_and_its_losers_are_out(five_bot_knockout, client) -> None:
    t = five_bot_knockout
    final = run_to_the_end(t)
    seats = {s.entrant.bot.name: s for s in final.seats.select_related("entrant__bot")}
    assert {n: s.advanced for n, s in seats.items()} == {"k4": True, "k2": False, "k3": False}
    status = dict(Entrant.objects.filter(tournament=t).values_list("bot__name", "status"))
    assert status == {"k4": "active", "k3": "eliminated", "k2": "eliminated", "k1": "eliminated", "k0": "eliminated"}
    # The API names the winner on the tournament and on the bracket.
    assert client.get(f"/api/v1/tournaments/{t.slug}/").json()["winner"] == "k4"
    assert [row["winner"] for row in client.get("/api/v1/tournaments/").json()["results"]] == ["k4"]
    bracket = client.get(f"/api/v1/tournaments/{t.slug}/bracket/").json()
    assert bracket["winner"] == "k4"
    assert [(r["round"], r["table_sizes"], r["final"]) for r in bracket["rounds"]] == [(1, [3, 2], False), (2, [3], True)]
    advanced = [s["bot_name"] for s in bracket["rounds"][1]["tables"][0]["seats"] if s["advanced"]]
    assert advanced == ["k4"]


def test_a_running_or_round_robin_tournament_has_no_winner(five_bot_knockout, client, organiser, bots) -> None:
    t = five_bot_knockout
    assert client.get(f"/api/v1/tournaments/{t.slug}/").json()["winner"] is None
    assert client.get(f"/api/v1/tournaments/{t.slug}/bracket/").json()["winner"] is None
    from tests.tournaments.conftest import running_round_robin

    rr = running_round_robin(organiser, bots, seats_per_table=4, name="RR")
    assert client.get(f"/api/v1/tournaments/{rr.slug}/").json()["winner"] is None


def test_knockout_standings_rank_by_round_reached_before_points(five_bot_knockout, client, django_assert_num_queries) -> None:
    t = five_bot_knockout
    run_to_the_end(t)
    with django_assert_num_queries(2):
        rows = tournament_standings(tournament=t, with_strength=False)
    # k3 reached the final but lost all its games there: fewer points than k1, who went out
    # in round 1. By points it would rank below k1; by the round reached it ranks above.
    points = {r.bot_name: r.points for r in rows}
    assert points["k3"] < points["k1"]
    # Round 1 (serpentine seeding): k0, k3, k4 at a table of 3, k1 and k2 at a table of 2.
    # Round 1's losers rank by their place at their table: k1 was 2nd of 2, k0 3rd of 3.
    assert [r.bot_name for r in rows] == ["k4", "k2", "k3", "k1", "k0"]
    assert points == {"k4": 12, "k2": 4, "k3": -6, "k1": -4, "k0": -6}
    assert [r.round_reached for r in rows] == [2, 2, 2, 1, 1]
    assert [r.rank for r in rows] == [1, 2, 3, 4, 5]
    api = client.get(f"/api/v1/tournaments/{t.slug}/standings/").json()
    assert [(row["bot_name"], row["round_reached"]) for row in api] == [(r.bot_name, r.round_reached) for r in rows]


def test_a_running_knockout_ranks_those_still_in_above_those_out(five_bot_knockout) -> None:
    t = five_bot_knockout
    first = t.tables.get(round=1, number=1)
    play(first, ["k4", "k3", "k2", "k1", "k0"])
    table_complete(table_id=first.pk)
    rows = tournament_standings(tournament=t, with_strength=False)
    out = {r.bot_name for r in rows if r.status == "eliminated"}
    assert out == set()  # nobody is out before the whole round is over
    second = t.tables.get(round=1, number=2)
    play(second, ["k2", "k1"])
    table_complete(table_id=second.pk)
    rows = tournament_standings(tournament=t, with_strength=False)
    names = [r.bot_name for r in rows]
    assert set(names[:3]) == {"k4", "k3", "k2"} and set(names[3:]) == {"k0", "k1"}


def test_a_bot_disqualified_mid_knockout_is_ranked_last_at_its_table_and_goes_no_further(
    five_bot_knockout, organiser
) -> None:
    from tournaments.services.entries import entrant_disqualify

    tournament = five_bot_knockout
    k4 = tournament.entrants.get(bot__name="k4")
    entrant_disqualify(tournament=tournament, bot=k4.bot, user=organiser, reason="shared its hand")
    # k4 wins every game of its table, and still does not advance: it forfeits the table.
    for table in tournament.tables.filter(round=1):
        play(table, ["k4", "k3", "k2", "k1", "k0"])
    steps = [table_complete(table_id=t.pk) for t in tournament.tables.filter(round=1)]
    seat = Table.objects.get(tournament=tournament, round=1, seats__entrant=k4).seats.get(entrant=k4)
    assert seat.forfeited and not seat.advanced
    final = Table.objects.get(pk=steps[-1].tables_to_play[0])
    finalists = set(final.seats.values_list("entrant__bot__name", flat=True))
    assert "k4" not in finalists and len(finalists) >= 2
    k4.refresh_from_db()
    assert (k4.status, k4.status_reason) == (Entrant.Status.DISQUALIFIED, "shared its hand")
    # Its games there stay in the standings, and it is listed as disqualified.
    row = next(s for s in tournament_standings(tournament=tournament) if s.bot_name == "k4")
    assert row.games > 0 and row.status == Entrant.Status.DISQUALIFIED
