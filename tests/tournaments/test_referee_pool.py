"""The referee pool in the platform's database: the registry referees write, judged on the
database's clock (a real referee process joining and leaving: tests/e2e/test_pool_process.py)."""

from __future__ import annotations

import time
from datetime import timedelta

import pytest
from django.db.models.functions import Now
from django.utils import timezone

from referee_service.pool import BotSlots, PoolMember, RefereeReport
from tournaments.models import Referee
from tournaments.play.pool import (
    DjangoRefereePool,
    pool_connected_bots,
    referee_heartbeat,
    referees_live,
)


def report(referee_id: str, address: str = "10.0.0.1:50051", **bots: BotSlots) -> RefereeReport:
    return RefereeReport(referee_id=referee_id, address=address, capacity=64, active_tables=2,
                         bots=dict(bots), started_at=time.time())


@pytest.mark.django_db
def test_heartbeats_keep_a_row_per_referee_and_the_pool_is_who_reported_lately():
    registry = DjangoRefereePool()
    members = registry.heartbeat(report("r1", bot7=BotSlots(free=3, version="2.0", active=1)))
    assert members == [PoolMember("r1", "10.0.0.1:50051")]
    registry.heartbeat(report("r2", "10.0.0.2:50051", bot7=BotSlots(1, "2.0"), bot8=BotSlots(0, "1")))
    again = registry.heartbeat(report("r1", "10.0.0.9:50051"))  # an update, not a second row
    assert again == [PoolMember("r1", "10.0.0.9:50051"), PoolMember("r2", "10.0.0.2:50051")]
    assert Referee.objects.count() == 2
    row = Referee.objects.get(referee_id="r2")
    assert (row.capacity, row.active_tables) == (64, 2)
    assert row.bots == {"bot7": {"free": 1, "active": 0, "version": "2.0"},
                        "bot8": {"free": 0, "active": 0, "version": "1"}}

    # r2 falls silent: 6 s ago on the database's clock is past the 5 s timeout
    Referee.objects.filter(referee_id="r2").update(last_heartbeat=Now() - timedelta(seconds=6))
    assert [r.referee_id for r in referees_live()] == ["r1"]
    assert [r.referee_id for r in referees_live(timeout_s=10)] == ["r1", "r2"]
    registry.leave("r1")
    assert referees_live() == []


@pytest.mark.django_db
def test_liveness_uses_the_database_clock_not_the_referees():
    # A referee whose own clock is an hour behind still reports "now" (the database's).
    skewed = RefereeReport(referee_id="late", address="h:1", capacity=1, active_tables=0,
                           bots={}, started_at=time.time() - 3600)
    referee_heartbeat(report=skewed)
    assert [r.referee_id for r in referees_live()] == ["late"]
    row = Referee.objects.get()
    assert abs((row.last_heartbeat - timezone.now()).total_seconds()) < 60


@pytest.mark.django_db
def test_the_pool_view_of_bots_sums_free_slots_over_live_referees():
    referee_heartbeat(report=report("r1", bot1=BotSlots(2, "v2"), bot2=BotSlots(0, "v1")))
    referee_heartbeat(report=report("r2", bot1=BotSlots(1, "v2")))
    referee_heartbeat(report=report("dead", bot3=BotSlots(4, "v9")))
    Referee.objects.filter(referee_id="dead").update(last_heartbeat=Now() - timedelta(minutes=1))
    bots = pool_connected_bots()
    assert set(bots) == {"bot1", "bot2"}
    assert (bots["bot1"].free, bots["bot1"].version, bots["bot1"].referees) == (3, "v2", ("r1", "r2"))
    assert (bots["bot2"].free, bots["bot2"].referees) == (0, ("r1",))


@pytest.mark.django_db
def test_rows_silent_for_an_hour_are_forgotten_by_the_next_referee():
    referee_heartbeat(report=report("ancient"))
    Referee.objects.filter(referee_id="ancient").update(last_heartbeat=Now() - timedelta(hours=2))
    DjangoRefereePool().heartbeat(report("fresh"))  # its first beat cleans up
    assert list(Referee.objects.values_list("referee_id", flat=True)) == ["fresh"]


@pytest.mark.django_db
def test_unchanged_bots_are_not_written_again_but_a_change_or_a_lost_row_is(
        django_assert_num_queries, monkeypatch):
    """A referee with thousands of idle bots reports them every second: the heartbeat
    writes them (and marks them seen) only when they changed, every BOTS_EVERY_S anyway,
    or when its row is gone; workers still see the bots of the last write."""
    import tournaments.play.pool as pool

    registry = DjangoRefereePool()
    registry.heartbeat(report("r1", bot7=BotSlots(2, "1.0")))
    Referee.objects.filter(referee_id="r1").update(bots={"bot7": {"free": 9}})  # a marker
    with django_assert_num_queries(2):  # the row's other fields, the members
        registry.heartbeat(report("r1", bot7=BotSlots(2, "1.0")))
    assert Referee.objects.get(referee_id="r1").bots == {"bot7": {"free": 9}}  # not rewritten
    registry.heartbeat(report("r1", bot7=BotSlots(1, "1.0")))  # a slot taken: written
    assert Referee.objects.get(referee_id="r1").bots["bot7"]["free"] == 1
    Referee.objects.filter(referee_id="r1").delete()  # forgotten meanwhile: written whole
    registry.heartbeat(report("r1", bot7=BotSlots(1, "1.0")))
    assert Referee.objects.get(referee_id="r1").bots["bot7"]["free"] == 1
    Referee.objects.filter(referee_id="r1").update(bots={})
    monkeypatch.setattr(pool, "BOTS_EVERY_S", 0.0)  # then due again however unchanged
    registry.heartbeat(report("r1", bot7=BotSlots(1, "1.0")))
    assert Referee.objects.get(referee_id="r1").bots["bot7"]["free"] == 1
    assert pool_connected_bots()["bot7"].free == 1


@pytest.mark.django_db
def test_a_burst_of_connecting_bots_is_written_at_most_every_gap_and_only_new_ones_seen(
        monkeypatch):
    """While thousands of bots connect, every heartbeat (up to 5 a second) saw them
    changed and wrote them all and marked them all seen: ~50 ms of the referee's CPU a
    beat at 5,000 bots (benchmarks/README.md). Now a referee holding n bots writes them at
    most every n x BOTS_GAP_PER_BOT_S (capped), marks only the new ones seen, and a small
    pool's change is still written at the next heartbeat."""
    import tournaments.play.pool as pool

    marked: list[list[str]] = []
    real_seen = pool.bots_seen
    monkeypatch.setattr(pool, "bots_seen", lambda *, bot_ids: (
        marked.append(sorted(bot_ids)), real_seen(bot_ids=bot_ids))[1])
    clock = [100.0]
    registry = DjangoRefereePool()
    registry.clock = lambda: clock[0]

    def bots(n: int) -> dict[str, BotSlots]:
        return {f"b{i}": BotSlots(1, "1.0") for i in range(n)}

    def beat(n: int, at: float) -> dict:
        clock[0] = at
        registry.heartbeat(RefereeReport(referee_id="r1", address="10.0.0.1:1", capacity=8,
                                         active_tables=0, bots=bots(n), started_at=1.0))
        return Referee.objects.get(referee_id="r1").bots

    assert len(beat(5000, 100.0)) == 5000 and len(marked.pop()) == 5000  # the first: all
    assert len(beat(5100, 100.2)) == 5000  # changed, but within 5,100 x 0.2 ms = 1 s
    assert len(beat(5200, 100.9)) == 5000 and not marked
    assert len(beat(5300, 101.0)) == 5300  # the gap has passed: written
    assert marked.pop() == sorted(f"b{i}" for i in range(5000, 5300))  # only the new ones
    assert len(beat(5300, 101.2)) == 5300 and registry.bot_writes == 2
    assert len(beat(5300, 110.0)) == 5300 and len(marked.pop()) == 5300  # BOTS_EVERY: all
    # A small pool: its change is written at the very next heartbeat, as before.
    registry = DjangoRefereePool()
    registry.clock = lambda: clock[0]
    assert len(beat(3, 200.0)) == 3
    assert len(beat(4, 200.2)) == 4 and registry.bot_writes == 2
