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
