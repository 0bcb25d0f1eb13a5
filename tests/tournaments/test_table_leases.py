"""Table leases (tournaments.table_lifecycle, tournaments.leases): who plays a table, when a
dead worker's table is claimed, and how a taken-over attempt is fenced. On real rows; the
heartbeat and reaper threads run for real against the test database."""

from __future__ import annotations

import time
from datetime import timedelta

import pytest
from django.db import transaction
from django.utils import timezone

from tests.tournaments.conftest import running_round_robin
from tournaments import leases
from tournaments.models import Table
from tournaments.table_lifecycle import (
    LeaseHeld,
    LeaseLost,
    LeaseTimes,
    table_busy,
    table_lease_renew,
    table_progress_save,
    table_start,
    table_wait,
    tables_claim_stale,
)

STALE = 900.0


@pytest.fixture
def table(organiser, bots) -> Table:
    tournament = running_round_robin(organiser, bots[:4], seats_per_table=4)
    return tournament.tables.get()


def start(table_id: int, owner: str, lease_s: float = 30.0) -> bool:
    with transaction.atomic():
        row = Table.objects.select_for_update().get(pk=table_id)
        return table_start(table=row, now=timezone.now(), owner=owner, lease_s=lease_s)


def later(seconds: float):
    return timezone.now() + timedelta(seconds=seconds)


# --- the default timings -----------------------------------------------------------------


def test_with_default_settings_a_dead_workers_table_is_claimed_well_within_a_minute(settings) -> None:
    # The project's defaults, not a test's: read from the settings module as shipped.
    from tienlen_site import settings as shipped

    times = LeaseTimes(lease_s=shipped.TIENLEN_LEASE_SECONDS, renew_s=shipped.TIENLEN_LEASE_RENEW_SECONDS,
                       reap_s=shipped.TIENLEN_LEASE_REAP_SECONDS)
    assert (times.lease_s, times.renew_s, times.reap_s) == (30, 10, 10)
    for name in ("TIENLEN_LEASE_SECONDS", "TIENLEN_LEASE_RENEW_SECONDS", "TIENLEN_LEASE_REAP_SECONDS"):
        delattr(settings, name)
    assert LeaseTimes.from_settings() == times  # the code's fallbacks agree with the settings
    # The worker died just after renewing: its lease runs out `lease_s` later, and some
    # worker's reaper looks within `reap_s` after that. The claimed table is enqueued at
    # once, leaving 20 s of the minute for a free worker to take it and start the referee.
    assert times.worst_claim_s == 40 <= 60 - 20
    # A healthy holder loses its lease only after lease_s / renew_s = 3 failed renewals.
    assert times.lease_s / times.renew_s == 3
    # ... and the outer bound stays an outer bound.
    assert times.worst_claim_s < shipped.TIENLEN_STALE_TABLE_SECONDS


def test_lease_timings_that_would_lose_a_healthy_lease_are_refused() -> None:
    with pytest.raises(ValueError, match="at most half"):
        LeaseTimes(lease_s=10, renew_s=6, reap_s=5)
    with pytest.raises(ValueError, match=">= 0"):
        LeaseTimes(lease_s=30, renew_s=10, reap_s=-1)


# --- taking, renewing, claiming ----------------------------------------------------------


@pytest.mark.django_db
def test_a_live_lease_keeps_a_second_attempt_out_until_it_expires(table) -> None:
    assert start(table.pk, "worker-a")
    with pytest.raises(LeaseHeld, match="worker-a"):
        start(table.pk, "worker-b")
    assert Table.objects.get(pk=table.pk).attempts == 1  # the refused start changed nothing
    assert tables_claim_stale(stale_after_s=STALE, now=later(29)) == []
    # Expired: a reaper claims it once, frees the lease, and the next attempt takes it.
    assert tables_claim_stale(stale_after_s=STALE, now=later(31)) == [table.pk]
    assert tables_claim_stale(stale_after_s=STALE, now=later(31)) == []
    row = Table.objects.get(pk=table.pk)
    assert (row.status, row.lease_owner, row.lease_expires_at) == ("running", "", None)
    assert start(table.pk, "worker-b")
    row.refresh_from_db()
    assert (row.lease_owner, row.attempts) == ("worker-b", 2)


@pytest.mark.django_db
def test_an_expired_lease_is_taken_over_by_the_next_start_even_before_a_reaper_looks(table) -> None:
    assert start(table.pk, "worker-a", lease_s=0.2)
    time.sleep(0.3)  # the database's clock decides
    assert start(table.pk, "worker-b")
    assert Table.objects.get(pk=table.pk).lease_owner == "worker-b"
    with pytest.raises(LeaseLost):
        table_lease_renew(table_id=table.pk, owner="worker-a")


@pytest.mark.django_db
def test_renewals_keep_a_lease_alive_on_the_databases_clock(table) -> None:
    assert start(table.pk, "worker-a", lease_s=1.0)
    for _ in range(3):
        time.sleep(0.4)
        assert table_lease_renew(table_id=table.pk, owner="worker-a", lease_s=1.0)
        assert tables_claim_stale(stale_after_s=STALE) == []
    time.sleep(1.1)
    assert tables_claim_stale(stale_after_s=STALE) == [table.pk]


@pytest.mark.django_db
def test_a_table_waiting_for_its_retry_is_not_claimed_before_the_retry_is_due(table) -> None:
    assert start(table.pk, "worker-a")
    # Bots absent: the retry comes in 60 s; the lease is free until then (plus one lease).
    assert table_wait(table_id=table.pk, error="not connected: 7", waiting_for_bots=True,
                      owner="worker-a", retry_in_s=60)
    row = Table.objects.get(pk=table.pk)
    assert (row.status, row.lease_owner) == ("waiting", "")
    assert tables_claim_stale(stale_after_s=STALE, now=later(85)) == []
    # The retry came (from whichever worker got the message): it takes the free lease.
    assert start(table.pk, "worker-c")
    assert table_busy(table_id=table.pk, owner="worker-c", retry_in_s=8)
    assert tables_claim_stale(stale_after_s=STALE, now=later(30)) == []
    # The retry was lost with its worker: claimed one lease after it was due.
    assert tables_claim_stale(stale_after_s=STALE, now=later(40)) == [table.pk]


@pytest.mark.django_db
def test_the_outer_bound_claims_a_silent_table_even_with_a_live_lease(table) -> None:
    assert start(table.pk, "worker-a")
    Table.objects.filter(pk=table.pk).update(progress_at=timezone.now() - timedelta(seconds=STALE + 1))
    assert tables_claim_stale(stale_after_s=STALE) == [table.pk]
    with pytest.raises(LeaseLost):
        table_lease_renew(table_id=table.pk, owner="worker-a")


@pytest.mark.django_db
def test_tables_of_a_tournament_not_running_are_never_claimed(table) -> None:
    from tournaments.services.tournaments import tournament_cancel

    assert start(table.pk, "worker-a")
    tournament_cancel(tournament=table.tournament)
    assert tables_claim_stale(stale_after_s=STALE, now=later(3600)) == []


# --- fencing -------------------------------------------------------------------------------


@pytest.mark.django_db
def test_a_taken_over_attempt_can_write_nothing_more(table) -> None:
    assert start(table.pk, "worker-a")
    assert tables_claim_stale(stale_after_s=STALE, now=later(31)) == [table.pk]
    assert start(table.pk, "worker-b")
    before = Table.objects.get(pk=table.pk)
    # The old attempt wakes up: every write it tries is refused, in the statement itself.
    with pytest.raises(LeaseLost):
        table_lease_renew(table_id=table.pk, owner="worker-a")
    with pytest.raises(LeaseLost):
        table_wait(table_id=table.pk, error="aborted", owner="worker-a", retry_in_s=2)
    with pytest.raises(LeaseLost):
        table_busy(table_id=table.pk, owner="worker-a", retry_in_s=2)
    with pytest.raises(LeaseLost):
        table_progress_save(table_id=table.pk, fields={"games_recorded": 3}, owner="worker-a")
    after = Table.objects.get(pk=table.pk)
    assert (after.status, after.attempts, after.games_recorded, after.lease_owner, after.last_error) == (
        before.status, before.attempts, before.games_recorded, "worker-b", before.last_error)
    # The holder's own writes go through.
    table_progress_save(table_id=table.pk, fields={"games_recorded": 1}, owner="worker-b")
    assert table_lease_renew(table_id=table.pk, owner="worker-b")
    assert Table.objects.get(pk=table.pk).games_recorded == 1


# --- the threads ---------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_the_heartbeat_thread_keeps_the_lease_while_the_table_plays_and_stops_after(table) -> None:
    times = LeaseTimes(lease_s=1.0, renew_s=0.25, reap_s=0)
    with leases.TableLease(table.pk, times=times) as lease:
        assert start(table.pk, lease.owner, lease_s=times.lease_s)
        lease.keep()
        deadline = time.monotonic() + 3 * times.lease_s
        while time.monotonic() < deadline:
            assert tables_claim_stale(stale_after_s=STALE) == []
            time.sleep(0.2)
        assert lease.renewals >= 8 and not lease.lost.is_set()
    # The attempt ended without freeing its lease (its worker died, say): a lease later, claimed.
    time.sleep(times.lease_s + 0.1)
    assert tables_claim_stale(stale_after_s=STALE) == [table.pk]


@pytest.mark.django_db(transaction=True)
def test_the_heartbeat_thread_notices_a_takeover(table) -> None:
    times = LeaseTimes(lease_s=1.0, renew_s=0.2, reap_s=0)
    with leases.TableLease(table.pk, times=times) as lease:
        assert start(table.pk, lease.owner, lease_s=times.lease_s)
        lease.keep()
        assert tables_claim_stale(stale_after_s=STALE, now=later(5)) == [table.pk]
        assert lease.lost.wait(2)
        with pytest.raises(LeaseLost):
            lease.check()


@pytest.mark.django_db(transaction=True)
def test_the_reaper_thread_claims_expired_leases_on_its_own(table) -> None:
    claimed: list[list[int]] = []
    assert start(table.pk, "worker-dead", lease_s=0.5)
    reaper = leases.Reaper(lambda: claimed.append(tables_claim_stale(stale_after_s=STALE)), interval_s=0.2)
    reaper.start()
    try:
        deadline = time.monotonic() + 5
        while [table.pk] not in claimed and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        reaper.stop()
    assert [table.pk] in claimed
    assert sum(claimed, []) == [table.pk]  # once
    assert Table.objects.get(pk=table.pk).lease_owner == ""
