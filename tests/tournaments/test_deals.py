"""Deals as secret rows (docs/fair-play.md): drawn when a table is created, committed to in
public, sent to the referee on every attempt, linked to the games that play them, and
revealed only once every table of their group has played them."""

from __future__ import annotations

import hashlib
import random

import pytest
from django.core.exceptions import ValidationError
from django.db import transaction
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.tournaments.conftest import make_result, running_round_robin
from tournaments.deals import deals_reveal
from tournaments.models import Deal, Game, Table, Tournament
from tournaments.sealing import deal_revealed, deal_seed
from tournaments.services.accounts import bot_create
from tournaments.services.ladder import ladder_tick
from tournaments.services.recording import table_game_record, table_games_record
from tournaments.services.tables import table_complete, table_plan
from tournaments.services.tournaments import (
    tournament_cancel,
    tournament_create,
    tournament_entrant_add,
    tournament_schedule,
    tournament_start,
)

pytestmark = pytest.mark.django_db

HEX32 = set("0123456789abcdef")


def commit(salt: str, seed: str) -> str:
    """The documented commitment, written out independently of the code under test."""
    return hashlib.sha256(f"tienlen-deal-commit-v1\n{salt}\n{seed}".encode()).hexdigest()


def house_bots(staff, n: int, policies=("random", "greedy", "heuristic")):
    return [bot_create(owner=staff, name=f"house{i}", house_bot=policies[i % len(policies)])[0]
            for i in range(n)]


@pytest.fixture
def staff(django_user_model):
    return django_user_model.objects.create_user("staff-member", is_staff=True)


def start(tournament) -> None:
    Tournament.objects.filter(pk=tournament.pk).update(status="scheduled")
    tournament_schedule(tournament_id=tournament.pk)
    tournament.refresh_from_db()


# --- drawn and committed when tables are created ---------------------------------------


def test_every_table_commits_to_fresh_secret_deals_when_it_is_created(organiser, bots) -> None:
    tournament = running_round_robin(organiser, bots, seats_per_table=4, duplicate_sets=1, deal_format="independent")
    tables = list(tournament.tables.order_by("round", "number"))
    assert len({t.deal_group for t in tables}) == len(tables)  # every table its own group
    deals = list(Deal.objects.filter(tournament=tournament))
    assert len(deals) == sum(t.games_planned for t in tables)  # independent: one per game
    seeds = [d.seed for d in deals]
    assert len(set(seeds)) == len(seeds)
    assert all(len(s) == 32 and set(s) <= HEX32 for s in seeds)  # 128 bits from `secrets`
    assert not any(tournament.salt in s or s in tournament.salt for s in seeds)
    assert all(d.commitment == commit(tournament.salt, d.seed) for d in deals)
    assert not any(deal_revealed(d) for d in deals)
    assert len(tournament.salt) == 32 and not tournament.reproducible
    assert tournament.fair_play_notices == []
    # Another tournament with the same settings gets other salt and deals.
    other = running_round_robin(organiser, bots, name="Other", seats_per_table=4, duplicate_sets=1)
    assert other.salt != tournament.salt
    assert not set(Deal.objects.filter(tournament=other).values_list("seed", flat=True)) & set(seeds)


def test_str_and_repr_of_a_deal_never_show_its_seed(organiser, bots) -> None:
    tournament = running_round_robin(organiser, bots[:4], seats_per_table=4)
    deal = Deal.objects.filter(tournament=tournament).first()
    assert deal.seed not in str(deal) and deal.seed not in repr(deal)
    assert deal_seed(deal) is None


def test_an_organiser_seed_makes_deals_reproducible_and_labelled(organiser, bots) -> None:
    a = running_round_robin(organiser, bots[:4], name="A", seats_per_table=4, seed="my private seed")
    b = running_round_robin(organiser, bots[:4], name="B", seats_per_table=4, seed="my private seed")
    seeds = lambda t: list(Deal.objects.filter(tournament=t).order_by("group", "index").values_list("seed", flat=True))  # noqa: E731
    assert seeds(a) == seeds(b)
    assert a.reproducible and a.organiser_seed == "my private seed"
    assert a.fair_play_notices == ["reproducible: deals known to the organiser"]
    # HMAC-SHA256(organiser seed, "deal/<group>/<index>"), as documented.
    import hmac

    first = Deal.objects.filter(tournament=a).order_by("group", "index").first()
    assert first.seed == hmac.new(b"my private seed", f"deal/{first.group}/{first.index}".encode(),
                                  hashlib.sha256).hexdigest()
    assert a.salt != b.salt and seeds(a)[0] not in seeds(running_round_robin(organiser, bots[:4], name="C", seats_per_table=4))


def test_knockout_rounds_commit_to_their_deals_when_the_round_is_created(organiser, bots) -> None:
    tournament = tournament_create(organiser=organiser, name="KO", format="knockout",
                                            seats_per_table=4, advance_per_table=2,
                                            deal_format="independent")
    for bot in bots:
        tournament_entrant_add(tournament=tournament, bot=bot)
    start(tournament)
    round1 = list(tournament.tables.filter(round=1))
    assert Deal.objects.filter(tournament=tournament).count() == 8  # 2 tables x 4 games
    for table in round1:
        for i in range(table.games_planned):
            table_game_record(table_id=table.pk, result=make_result(i, [0, 1, 2, 3]))
    steps = [table_complete(table_id=t.pk) for t in round1]
    final = Table.objects.get(pk=steps[-1].tables_to_play[0])
    assert final.deal_group not in {t.deal_group for t in round1}
    final_deals = Deal.objects.filter(tournament=tournament, group=final.deal_group)
    assert final_deals.count() == 4 and not final_deals.filter(revealed_at__isnull=False).exists()
    assert Deal.objects.filter(tournament=tournament, revealed_at__isnull=False).count() == 8


def test_ladder_tables_get_their_own_secret_deals(organiser, bots) -> None:
    ladder = tournament_create(organiser=organiser, name="Ladder", format="ladder",
                                        seats_per_table=2, ladder_tables_per_tick=2,
                                        deal_format="independent")
    for bot in bots[:4]:
        tournament_entrant_add(tournament=ladder, bot=bot)
    tournament_start(tournament=ladder)
    tournament_schedule(tournament_id=ladder.pk)
    connected = {str(b.pk): "1.0" for b in bots[:4]}
    ids = ladder_tick(tournament=ladder, connected=connected, rng=random.Random(1))
    tables = list(Table.objects.filter(pk__in=ids))
    assert len(tables) == 2 and len({t.deal_group for t in tables}) == 2
    for table in tables:
        deals = Deal.objects.filter(tournament=ladder, group=table.deal_group)
        assert deals.count() == table.games_planned


# --- deal formats -------------------------------------------------------------------------


@pytest.mark.parametrize(("fmt", "fields", "message"), [
    ("ladder", {"deal_format": "rotation"}, "never for ladders"),
    ("round_robin", {"deal_format": "rotation", "games_per_table": 6}, "games_per_table is for independent deals"),
    ("round_robin", {"deal_format": "shuffled"}, "Unknown deal format 'shuffled'"),
    ("round_robin", {"seed": "x" * 65}, "at most 64 characters"),
])
def test_bad_deal_settings_are_refused_naming_the_field(organiser, fmt, fields, message) -> None:
    with pytest.raises(ValidationError) as info:
        tournament_create(organiser=organiser, name="Bad", format=fmt, **fields)
    field = "seed" if "seed" in fields else "deal_format"
    assert message in " ".join(info.value.message_dict[field])
    assert not Tournament.objects.exists()


def test_rotation_is_for_house_bots_only(organiser, bots, staff) -> None:
    tournament = tournament_create(organiser=organiser, name="Trusted", format="round_robin",
                                            seats_per_table=4, deal_format="rotation")
    assert tournament.fair_play_notices == ["trusted entrants only: deals repeat to the same bots"]
    with pytest.raises(ValidationError, match="only house bots can play it"):
        tournament_entrant_add(tournament=tournament, bot=bots[0])
    for bot in house_bots(staff, 4):
        tournament_entrant_add(tournament=tournament, bot=bot)
    # An entrant that slipped in another way (the admin) is caught at the start.
    from tournaments.models import Entrant

    Entrant.objects.create(tournament=tournament, bot=bots[1])
    with pytest.raises(ValidationError, match="only house bots can play it"):
        tournament_start(tournament=tournament)


def test_rotation_plays_one_deal_in_every_seat_and_reveals_it_after_the_last_rotation(organiser, staff) -> None:
    tournament = tournament_create(organiser=organiser, name="Trusted", format="round_robin",
                                            seats_per_table=4, deal_format="rotation", duplicate_sets=2)
    for bot in house_bots(staff, 4):
        tournament_entrant_add(tournament=tournament, bot=bot)
    start(tournament)
    table = tournament.tables.get()
    deals = list(Deal.objects.filter(tournament=tournament).order_by("index"))
    assert len(deals) == 2  # one per duplicate set
    plan = table_plan(table_id=table.pk)
    assert (plan.games, plan.duplicate_sets) == (0, 2)
    assert plan.deal_seeds == [deals[0].seed] * 4 + [deals[1].seed] * 4
    for i in range(3):
        table_game_record(table_id=table.pk, result=make_result(i, [0, 1, 2, 3], seed=deals[0].seed))
        assert not deal_revealed(Deal.objects.get(pk=deals[0].pk))  # rotations still to play know it
    table_game_record(table_id=table.pk, result=make_result(3, [0, 1, 2, 3], seed=deals[0].seed))
    assert deal_revealed(Deal.objects.get(pk=deals[0].pk)) and not deal_revealed(Deal.objects.get(pk=deals[1].pk))
    assert set(Game.objects.filter(table=table).values_list("deal_id", flat=True)) == {deals[0].pk}
    # A resumed rotation table gets the seeds of the games it still has to play.
    plan = table_plan(table_id=table.pk)
    assert plan.first_game_index == 4 and plan.deal_seeds == [deals[1].seed] * 4


# --- the seeds the worker sends ---------------------------------------------------------------


def test_the_plan_sends_the_committed_seeds_of_the_games_still_to_play(organiser, bots) -> None:
    tournament = running_round_robin(organiser, bots[:4], seats_per_table=4, duplicate_sets=1,
                                     deal_format="independent")
    table = tournament.tables.get()
    seeds = list(Deal.objects.filter(tournament=tournament, group=table.deal_group).order_by("index")
                 .values_list("seed", flat=True))
    plan = table_plan(table_id=table.pk)
    assert (plan.games, plan.duplicate_sets, plan.first_game_index) == (4, 0, 0)
    assert plan.deal_seeds == seeds and not plan.starting_games
    assert plan.house_seed not in seeds and len(plan.house_seed) == 32
    assert all(s not in repr(plan) for s in seeds)  # a logged plan shows no deal seed
    assert plan.referee_table_id == f"t{tournament.pk}-r1-n1"  # no seed in the id bots see
    for i in range(2):
        table_game_record(table_id=table.pk, result=make_result(i, [0, 1, 2, 3], seed=seeds[i]))
    again = table_plan(table_id=table.pk)
    assert again.first_game_index == 2 and again.deal_seeds == seeds[2:]
    assert again.house_seed != plan.house_seed  # fresh per attempt (not reproducible)


def test_a_game_dealt_from_another_seed_is_refused_without_showing_a_seed(organiser, bots) -> None:
    tournament = running_round_robin(organiser, bots[:4], seats_per_table=4, duplicate_sets=1)
    table = tournament.tables.get()
    seeds = list(Deal.objects.filter(tournament=tournament).order_by("index").values_list("seed", flat=True))
    good = make_result(0, [0, 1, 2, 3], seed=seeds[0])
    bad = make_result(1, [0, 1, 2, 3], seed="somebody-elses-deal")
    with pytest.raises(ValueError) as info:
        table_games_record(table_id=table.pk, results=[good, bad])
    assert str(info.value) == "game 1: it was not dealt from the deal committed for it"
    assert list(Game.objects.filter(table=table).values_list("index", flat=True)) == [0]  # the good one stays
    assert Game.objects.get(table=table).deal.seed == seeds[0]


# --- the reveal rule --------------------------------------------------------------------------


def test_a_deal_is_revealed_once_its_game_is_recorded(organiser, bots) -> None:
    tournament = running_round_robin(organiser, bots[:4], seats_per_table=4, duplicate_sets=1)
    table = tournament.tables.get()
    table_game_record(table_id=table.pk, result=make_result(0, [0, 1, 2, 3]))
    revealed = dict(Deal.objects.filter(tournament=tournament).values_list("index", "revealed_at"))
    assert revealed[0] is not None and [revealed[i] for i in (1, 2, 3)] == [None] * 3


def shared_group(tournament) -> tuple[Table, Table]:
    """Two tables made to share one deal group, as field duplicates will (who sits there
    does not matter to the reveal rule)."""
    a, b = list(tournament.tables.order_by("number"))[:2]
    Table.objects.filter(pk=b.pk).update(deal_group=a.deal_group)
    b.refresh_from_db()
    return a, b


def test_a_shared_deal_stays_secret_until_every_table_of_its_group_played_it(organiser, bots) -> None:
    tournament = running_round_robin(organiser, bots, seats_per_table=4, duplicate_sets=1)
    a, b = shared_group(tournament)
    deal = lambda i: Deal.objects.get(tournament=tournament, group=a.deal_group, index=i)  # noqa: E731
    table_game_record(table_id=a.pk, result=make_result(0, [0, 1, 2, 3]))
    table_game_record(table_id=a.pk, result=make_result(1, [0, 1, 2, 3]))
    assert not deal_revealed(deal(0))  # table b has yet to play it
    table_game_record(table_id=b.pk, result=make_result(0, [3, 2, 1, 0]))
    assert deal_revealed(deal(0)) and not deal_revealed(deal(1))
    assert Game.objects.get(table=a, index=0).deal_id == Game.objects.get(table=b, index=0).deal_id
    # A closed table plays no more: the others decide alone.
    table_complete(table_id=b.pk, status=Table.Status.FAILED, error="referee rejected it")
    assert deal_revealed(deal(1)) and not deal_revealed(deal(2))
    table_complete(table_id=a.pk)
    assert all(deal_revealed(deal(i)) for i in range(4))


def test_cancelling_reveals_every_deal_nobody_will_play(organiser, bots) -> None:
    tournament = running_round_robin(organiser, bots[:5], seats_per_table=4, duplicate_sets=1)
    assert not Deal.objects.filter(tournament=tournament, revealed_at__isnull=False).exists()
    tournament_cancel(tournament=tournament, reason="server move")
    assert not Deal.objects.filter(tournament=tournament, revealed_at__isnull=True).exists()


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=st.lists(st.tuples(st.sampled_from("ab"), st.sampled_from(["record", "close"])), max_size=10))
def test_reveal_rule_property(organiser, bots, steps) -> None:
    """Whatever order two tables of one group record and close in, deal i is revealed
    exactly when each of them recorded game i or is closed."""
    with transaction.atomic():
        tournament = running_round_robin(organiser, bots, name=f"P{random.random()}", seats_per_table=4,
                                         duplicate_sets=1)
        tables = dict(zip("ab", shared_group(tournament), strict=True))
        recorded = {"a": 0, "b": 0}
        closed = {"a": False, "b": False}
        for who, action in steps:
            if closed[who]:
                continue
            if action == "record" and recorded[who] < 4:
                table_game_record(table_id=tables[who].pk, result=make_result(recorded[who], [0, 1, 2, 3]))
                recorded[who] += 1
            elif action == "close":
                table_complete(table_id=tables[who].pk)
                closed[who] = True
        revealed = set(Deal.objects.filter(tournament=tournament, group=tables["a"].deal_group,
                                           revealed_at__isnull=False).values_list("index", flat=True))
        done = lambda w, i: closed[w] or recorded[w] > i  # noqa: E731
        assert revealed == {i for i in range(4) if done("a", i) and done("b", i)}
        transaction.set_rollback(True)


def test_reveal_is_idempotent_and_never_touches_other_tournaments(organiser, bots) -> None:
    one = running_round_robin(organiser, bots[:4], name="One", seats_per_table=4)
    two = running_round_robin(organiser, bots[:4], name="Two", seats_per_table=4)
    tournament_cancel(tournament=one)
    assert deals_reveal(tournament=one) == 0
    assert not Deal.objects.filter(tournament=two, revealed_at__isnull=False).exists()
