"""The owner rule in real tournaments: one owner's bots never share a table, a field the
rule cannot seat is refused at start with the reason, and the documented exemptions
(house bots, a single owner, allow_same_owner) hold."""

from __future__ import annotations

import random
from collections import Counter

import pytest
from django.contrib.auth.models import User
from django.core.exceptions import ValidationError

from tournaments.models import Table, Tournament
from tournaments.services.accounts import bot_create
from tournaments.services.ladder import ladder_tick
from tournaments.services.tournaments import (
    tournament_create,
    tournament_entrant_add,
    tournament_schedule,
    tournament_start,
)

pytestmark = pytest.mark.django_db


def owned_bots(pattern: list[int | None], staff: User | None = None) -> list:
    """One bot per entry: owners by number (shared users), None for a house bot."""
    users: dict[int, User] = {}
    made = []
    for i, o in enumerate(pattern):
        if o is None:
            bot, _ = bot_create(owner=staff, name=f"house{i}", house_bot="random")
        else:
            user = users.get(o) or User.objects.create_user(f"user{o}")
            users[o] = user
            bot, _ = bot_create(owner=user, name=f"b{i}-u{o}")
        made.append(bot)
    return made


def scheduled(organiser, bots, fmt="round_robin", **fields) -> Tournament:
    fields.setdefault("name", "Cup")
    tournament = tournament_create(organiser=organiser, format=fmt, **fields)
    for bot in bots:
        tournament_entrant_add(tournament=tournament, bot=bot)
    tournament_start(tournament=tournament)
    tournament_schedule(tournament_id=tournament.pk)
    tournament.refresh_from_db()
    return tournament


def table_owners(tournament: Tournament) -> list[list[int]]:
    return [
        [s.entrant.bot.owner_id for s in t.seats.select_related("entrant__bot") if not s.entrant.bot.house_bot]
        for t in tournament.tables.all()
    ]


def test_a_round_robin_never_seats_two_bots_of_one_owner_together(organiser) -> None:
    bots = owned_bots([1, 1, 2, 2, 3, 3, 4, 4])
    tournament = scheduled(organiser, bots, seats_per_table=4)
    tables = table_owners(tournament)
    assert tables and all(len(t) == len(set(t)) for t in tables)
    # Every allowed pair still meets, as evenly as possible.
    meets = Counter(
        frozenset((a.entrant.bot_id, b.entrant.bot_id))
        for t in tournament.tables.all()
        for a in t.seats.select_related("entrant") for b in t.seats.select_related("entrant")
        if a.entrant.bot_id < b.entrant.bot_id
    )
    assert len(meets) == 28 - 4 and max(meets.values()) - min(meets.values()) <= 1


def test_a_field_the_owner_rule_cannot_seat_is_refused_at_start_with_the_reason(organiser) -> None:
    bots = owned_bots([1, 1, 1, 1, 1, 2, 3, 4])
    tournament = tournament_create(organiser=organiser, name="Cup", format="round_robin")
    for bot in bots:
        tournament_entrant_add(tournament=tournament, bot=bot)
    with pytest.raises(ValidationError) as err:
        tournament_start(tournament=tournament)
    assert "one owner has 5 of the 8 entrants" in str(err.value.message_dict["entrants"])
    tournament.refresh_from_db()
    assert tournament.status == Tournament.Status.DRAFT  # nothing was scheduled


def test_exemptions_single_owner_house_bots_and_allow_same_owner(organiser) -> None:
    staff = User.objects.create_user("staff", is_staff=True)
    # One owner and house bots: nobody to collude against.
    alone = scheduled(organiser, owned_bots([1, 1, 1, 1, None, None, None, None], staff), seats_per_table=4)
    assert len(alone.tables.all()) == 14 and any(len(t) > len(set(t)) for t in table_owners(alone))
    # Two owners, but explicitly allowed: the full design.
    allowed = scheduled(
        organiser, owned_bots([7, 7, 7, 7, 8, 8, 8, 8]), seats_per_table=4, allow_same_owner=True, name="Allowed"
    )
    assert allowed.tables.count() == 14


def test_a_knockout_moves_one_owners_bots_to_different_tables(organiser) -> None:
    bots = owned_bots([1, 2, 3, 4, 5, 6, 7, 1])  # serpentine would seat b0 and b7 together
    tournament = scheduled(organiser, bots, fmt="knockout", seats_per_table=4, advance_per_table=2)
    tables = table_owners(tournament)
    assert len(tables) == 2 and all(len(t) == len(set(t)) for t in tables)


def test_a_ladder_seats_house_bots_with_anyone_and_a_single_owner_ladder_plays(organiser) -> None:
    staff = User.objects.create_user("staff", is_staff=True)
    bots = owned_bots([1, 1, None, None], staff)
    ladder = tournament_create(organiser=organiser, name="L", format="ladder", seats_per_table=2, ladder_tables_per_tick=2)
    for bot in bots:
        tournament_entrant_add(tournament=ladder, bot=bot)
    tournament_start(tournament=ladder)
    tournament_schedule(tournament_id=ladder.pk)
    connected = {str(b.pk): "1" for b in bots}
    ids = ladder_tick(tournament=ladder, connected=connected, rng=random.Random(3))
    assert len(ids) == 2  # the two owner-1 bots each play a house bot
    for table in Table.objects.filter(pk__in=ids):
        owners = [s.entrant.bot.owner_id for s in table.seats.select_related("entrant__bot") if not s.entrant.bot.house_bot]
        assert len(owners) == len(set(owners))
    # A ladder of one owner's bots only: exempt, tables are made.
    mine = owned_bots([5, 5])
    solo = tournament_create(organiser=organiser, name="Solo", format="ladder", seats_per_table=2)
    for bot in mine:
        tournament_entrant_add(tournament=solo, bot=bot)
    tournament_start(tournament=solo)
    tournament_schedule(tournament_id=solo.pk)
    assert len(ladder_tick(tournament=solo, connected={str(b.pk): "1" for b in mine})) == 1
