"""Field duplicates, the default deal format: one deal at several tables, each bot once.

Plans send every table of a deal group the same seeds as starting games; no bot is ever
dealt into a deal twice, however tables run; luck-adjusted standings count a game only
once its deal has been played at every table, with raw and adjusted intervals (API and
page); and, end to end, a memorising bot (tests/tournaments/memorising_bot.py) learns
nothing over a whole tournament while it plays several tables at once."""

from __future__ import annotations

import asyncio
import threading
from collections import Counter, defaultdict

import pytest
from django.contrib.auth.models import User
from rest_framework.test import APIClient

from tests.needs import need_postgresql
from tests.tournaments.conftest import make_result, running_round_robin
from tests.tournaments.memorising_bot import Memory, memorising_bot
from tournaments.models import Deal, Game, GameSeat, Table, Tournament
from tournaments.selectors.adjusted import tournament_luck_adjusted
from tournaments.services.accounts import bot_create
from tournaments.services.ladder import ladder_tick
from tournaments.services.recording import deal_baselines_compute, table_game_record
from tournaments.services.tables import table_plan
from tournaments.services.tournaments import (
    tournament_create,
    tournament_entrant_add,
    tournament_schedule,
    tournament_start,
)


def group_tables(tournament) -> dict[int, list[Table]]:
    groups = defaultdict(list)
    for t in tournament.tables.order_by("round", "number"):
        groups[t.deal_group].append(t)
    return groups


@pytest.mark.django_db
def test_field_is_the_default_and_a_group_plays_the_same_deals_as_starting_games(organiser, house_bots) -> None:
    # House bots are isolated (tournaments.isolation): the tables of a round share deals.
    bots = house_bots
    tournament = running_round_robin(organiser, bots, seats_per_table=4, duplicate_sets=1)
    assert tournament.deal_format == Tournament.DealFormat.FIELD
    groups = group_tables(tournament)
    assert len(groups) == 7 and all(len(t) == 2 for t in groups.values())  # 7 rounds of 2 tables
    for tables in groups.values():
        plans = [table_plan(table_id=t.pk) for t in tables]
        assert plans[0].deal_seeds == plans[1].deal_seeds and len(plans[0].deal_seeds) == 4
        assert all(p.starting_games and p.resume_leader is None for p in plans)
        seated = [{s.entrant_id for s in t.seats.all()} for t in tables]
        assert not seated[0] & seated[1]  # disjoint: each bot once per deal
    # Over the whole design: every bot is dealt into every deal at most once.
    per_bot = Counter()
    for t in tournament.tables.all():
        for s in t.seats.all():
            for i in range(t.games_planned):
                per_bot[(s.entrant_id, t.deal_group, i)] += 1
    assert max(per_bot.values()) == 1
    assert Deal.objects.filter(tournament=tournament).count() == 7 * 4  # one per group and game


@pytest.mark.django_db
def test_field_knockout_rounds_and_ladder_ticks_share_deals_between_disjoint_tables(organiser, house_bots) -> None:
    bots = house_bots
    knockout = tournament_create(organiser=organiser, name="KO", format="knockout", seats_per_table=4)
    for bot in bots:
        tournament_entrant_add(tournament=knockout, bot=bot)
    tournament_start(tournament=knockout)
    tournament_schedule(tournament_id=knockout.pk)
    assert len({t.deal_group for t in knockout.tables.all()}) == 1  # one round: one group
    ladder = tournament_create(organiser=organiser, name="L", format="ladder", seats_per_table=2, ladder_tables_per_tick=2)
    for bot in bots[:4]:
        tournament_entrant_add(tournament=ladder, bot=bot)
    tournament_start(tournament=ladder)
    tournament_schedule(tournament_id=ladder.pk)
    ids = ladder_tick(tournament=ladder, connected={})
    assert len(ids) == 2 and len({t.deal_group for t in Table.objects.filter(pk__in=ids)}) == 1


@pytest.mark.django_db
def test_remote_bots_never_share_a_deal_across_tables_in_any_format(organiser, bots) -> None:
    """Remote bots of eight different accounts: any two may be one person pooling what
    they see, so every table is a deal group of its own — independent secret
    deals — in round robins, knockout rounds and ladder ticks."""
    rr = running_round_robin(organiser, bots, seats_per_table=4, duplicate_sets=1)
    assert rr.deal_format == Tournament.DealFormat.FIELD
    assert len({t.deal_group for t in rr.tables.all()}) == rr.tables.count() == 14
    knockout = tournament_create(organiser=organiser, name="KO", format="knockout", seats_per_table=4)
    for bot in bots:
        tournament_entrant_add(tournament=knockout, bot=bot)
    tournament_start(tournament=knockout)
    tournament_schedule(tournament_id=knockout.pk)
    assert len({t.deal_group for t in knockout.tables.all()}) == knockout.tables.count() == 2
    ladder = tournament_create(organiser=organiser, name="L", format="ladder", seats_per_table=2, ladder_tables_per_tick=2)
    for bot in bots[:4]:
        tournament_entrant_add(tournament=ladder, bot=bot)
    tournament_start(tournament=ladder)
    tournament_schedule(tournament_id=ladder.pk)
    ids = ladder_tick(tournament=ladder, connected={str(b.pk): "1" for b in bots[:4]})
    assert len(ids) == 2 and len({t.deal_group for t in Table.objects.filter(pk__in=ids)}) == 2


@pytest.mark.django_db
def test_one_owners_bots_never_share_a_deal_group(organiser) -> None:
    users = [User.objects.create_user(f"u{i}") for i in range(6)]
    owners = [0, 0, 1, 1, 2, 3, 4, 5]
    bots = [bot_create(owner=users[o], name=f"b{i}")[0] for i, o in enumerate(owners)]
    tournament = running_round_robin(organiser, bots, seats_per_table=4)
    for tables in group_tables(tournament).values():
        members = [s.entrant.bot.owner_id for t in tables for s in t.seats.select_related("entrant__bot")]
        assert len(members) == len(set(members))
        seated = [p for t in tables for p in t.seats.values_list("entrant_id", flat=True)]
        assert len(seated) == len(set(seated))


def record_table(table: Table, first: int = 0) -> None:
    for i in range(first, table.games_planned):
        table_game_record(table_id=table.pk, result=make_result(i, [0, 1, 2, 3]))


@pytest.mark.django_db
def test_luck_adjusted_standings_count_a_game_once_its_deal_is_played_everywhere(organiser, house_bots) -> None:
    tournament = running_round_robin(organiser, house_bots, seats_per_table=4, duplicate_sets=1)
    first, second = next(iter(group_tables(tournament).values()))
    record_table(first)
    client = APIClient()
    url = f"/api/v1/tournaments/{tournament.slug}/standings/luck-adjusted/"
    body = client.get(url).json()
    assert (body["games_scored"], body["games_withheld"], body["rows"]) == (0, 4, [])
    record_table(second)
    deal_baselines_compute(tournament_id=tournament.pk)
    body = client.get(url).json()
    assert (body["games_scored"], body["games_withheld"], body["deals_with_baseline"]) == (8, 0, 4)
    rows = {r["bot_name"]: r for r in body["rows"]}
    assert len(rows) == 8 and all(r["games"] == 4 and r["compared"] == 4 for r in rows.values())
    # Both tables finished 0, 1, 2, 3 by seat on the same deals: each seat scored what its
    # counterpart scored, so what is left is the distance from the house-bot baseline —
    # all of it, once the counterpart's own strength (the same) is allowed for; the
    # uncorrected score split it with the counterpart (half of it).
    deals = {d.index: d.baseline for d in Deal.objects.filter(tournament=tournament, group=first.deal_group)}
    assert all(len(b) == 4 for b in deals.values())
    seat0 = first.seats.get(seat=0).entrant.bot.name
    expected = sum(2 - deals[i][0] for i in range(4)) / 4
    assert rows[seat0]["adjusted_mean"] == pytest.approx(expected, abs=1e-3)
    assert expected != pytest.approx(sum(2 - (2 + deals[i][0]) / 2 for i in range(4)) / 4, abs=1e-3)
    assert rows[seat0]["points_mean"] == 2.0 and rows[seat0]["adjusted_ci"] is not None
    # The tournament page shows both columns.
    html = __import__("django.test", fromlist=["Client"]).Client().get(f"/tournaments/{tournament.slug}/").content.decode()
    assert 'id="luck-adjusted"' in html and "Adjusted per game" in html


@pytest.mark.django_db
def test_luck_adjusted_standings_are_cached_until_a_reveal_or_a_baseline_changes_them(
    organiser, house_bots, django_assert_num_queries
) -> None:
    """The scoring reads every counted seat (most of a big tournament page's time): a second
    look is served from the cache, and a baseline arriving shows at once."""
    tournament = running_round_robin(organiser, house_bots, seats_per_table=4, duplicate_sets=1)
    first, second = next(iter(group_tables(tournament).values()))
    record_table(first)
    record_table(second)
    before = tournament_luck_adjusted(tournament=tournament)
    assert before.games_scored == 8 and before.deals_with_baseline == 0
    # Both tables finished alike: with only counterparts, every adjusted score is 0.
    assert all(r.adjusted_mean == 0 for r in before.rows)
    with django_assert_num_queries(2):  # the cache key and the names; no seat is read
        again = tournament_luck_adjusted(tournament=tournament)
    assert again == before
    bot = first.seats.get(seat=0).entrant.bot
    bot.name = "renamed-bot"
    bot.save(update_fields=["name"])
    assert "renamed-bot" in {r.bot_name for r in tournament_luck_adjusted(tournament=tournament).rows}
    deal_baselines_compute(tournament_id=tournament.pk)
    after = tournament_luck_adjusted(tournament=tournament)
    assert after.deals_with_baseline == 4 and any(r.adjusted_mean != 0 for r in after.rows)


# --- end to end: a real worker, a real referee, memorising SDK bots ----------------------

ORGANIZER_TOKEN = "organizer-secret-for-fair-formats"


class MemorisingClient:
    """An SDK bot connected with its platform token; its instances share `memory`."""

    def __init__(self, target: str, token: str, memory: Memory, max_tables: int) -> None:
        from bots_sdk.client import BotClient

        self.client = BotClient(memorising_bot(memory), target=target, token=token, max_tables=max_tables)
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_until_complete, args=(self.client.run(),), daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.loop.call_soon_threadsafe(self.client.stop, True)
        self.thread.join(20)


@pytest.mark.django_db(transaction=True)
def test_a_memorising_bot_learns_nothing_in_a_whole_default_tournament(settings) -> None:
    from referee_service.server import RefereeThread
    from tests.celery_helpers import isolated_celery_worker
    from tests.tournaments.test_worker import wait_for
    from tournaments.token_store import DjangoTokenStore

    need_postgresql("a worker plays three tables at once while the referee checks tokens")
    staff = User.objects.create_user("house", is_staff=True)
    organiser = User.objects.create_user("organiser", is_staff=True)
    author = User.objects.create_user("author")
    house = [bot_create(owner=staff, name=f"house-{p}-{i}", house_bot=p)[0]
             for i, p in enumerate(["greedy", "heuristic", "random", "greedy", "heuristic", "random"])]
    # Two bots of one owner pooling one memory (what colluding bots would do), each
    # playing up to 3 tables at once.
    memory = Memory()
    mine = [bot_create(owner=author, name=f"memo-{i}") for i in range(2)]
    tournament = tournament_create(
        organiser=organiser, name="Fair cup", format="round_robin", seats_per_table=4,
        duplicate_sets=1, move_time_ms=500, time_bank_ms=5000, connect_deadline_s=60,
    )
    assert tournament.deal_format == Tournament.DealFormat.FIELD
    for bot in [*house, *(b for b, _ in mine)]:
        tournament_entrant_add(tournament=tournament, bot=bot)
    referee = RefereeThread(DjangoTokenStore(), organizer_token=ORGANIZER_TOKEN).start()
    settings.REFEREE_TARGET = referee.target
    settings.REFEREE_ORGANIZER_TOKEN = ORGANIZER_TOKEN
    try:
        with isolated_celery_worker(concurrency=3), \
                MemorisingClient(referee.target, mine[0][1], memory, 3), \
                MemorisingClient(referee.target, mine[1][1], memory, 3):
            tournament_start(tournament=tournament)
            wait_for(lambda: Tournament.objects.get(pk=tournament.pk).status == "finished", 300, "the finish")
            wait_for(lambda: not Deal.objects.filter(tournament=tournament, baseline__isnull=True).exists(),
                     120, "the luck baselines")
    finally:
        referee.stop()
    assert Game.objects.filter(table__tournament=tournament).count() == 56
    # Each memoriser played 7 tables x 4 games and remembered them all: it never saw a deal
    # again, so it predicted no card at all (the old rotation: 13-39 cards per game).
    assert memory.games_started == 56 and len(memory.games) == 56
    assert memory.predicted_cards == 0, memory.predictions[:3]
    # No bot played a deal twice; one owner's bots never shared a deal group.
    seats = GameSeat.objects.filter(game__table__tournament=tournament)
    per_bot_deal = Counter(seats.values_list("bot_id", "game__deal_id"))
    assert max(per_bot_deal.values()) == 1
    # (A single owner may share a table, but never two tables of one group.)
    memo_ids = {b.pk for b, _ in mine}
    groups = defaultdict(set)
    for table_id, group in seats.filter(bot_id__in=memo_ids).values_list("game__table_id", "game__table__deal_group"):
        groups[group].add(table_id)
    assert groups and all(len(tables) == 1 for tables in groups.values())
    # Several tables at once: some two tables of one memoriser overlapped in time.
    overlapped = False
    for bot in memo_ids:
        spans = sorted(Table.objects.filter(tournament=tournament, seats__entrant__bot_id=bot)
                       .values_list("started_at", "finished_at"))
        overlapped |= any(b[0] < a[1] for a, b in zip(spans, spans[1:], strict=False))
    assert overlapped
    # Every deal was played at both tables of its group, revealed, and has a baseline.
    assert not Deal.objects.filter(tournament=tournament, revealed_at__isnull=True).exists()
    adjusted = tournament_luck_adjusted(tournament=tournament)
    deals = Deal.objects.filter(tournament=tournament).count()
    assert adjusted.games_scored == 56 and adjusted.games_withheld == 0 and adjusted.deals_with_baseline == deals
    assert all(r.compared == r.games == 28 for r in adjusted.rows)
