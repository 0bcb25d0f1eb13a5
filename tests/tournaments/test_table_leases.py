"""Table leases (tournaments.play.lifecycle, tournaments.play.leases): who plays a table, when a
dead worker's table is claimed, and how a taken-over attempt is fenced. On real rows; the
heartbeat and reaper threads run for real against the test database."""

from __future__ import annotations

import os
import threading
import time
from datetime import timedelta

import pytest
from django.db import transaction
from django.utils import timezone

from tests.tournaments.conftest import running_round_robin
from tournaments.models import Table
from tournaments.play import leases
from tournaments.play.lifecycle import (
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


# --- fencing the recorder and the task ------------------------------------------------------


@pytest.mark.django_db
def test_a_taken_over_attempts_late_games_are_never_recorded(table) -> None:
    from tests.tournaments.conftest import make_result
    from tournaments.models import Game
    from tournaments.services.recording import table_games_record
    from tournaments.services.tables import table_plan

    assert table_plan(table_id=table.pk, lease_owner="worker-a").first_game_index == 0
    assert len(table_games_record(table_id=table.pk, results=[make_result(0, [0, 1, 2, 3])],
                                  lease_owner="worker-a")) == 1
    # worker-a stalls past its lease; a reaper claims the table and worker-b resumes it.
    assert tables_claim_stale(stale_after_s=STALE, now=later(31)) == [table.pk]
    assert table_plan(table_id=table.pk, lease_owner="worker-b").first_game_index == 1
    with pytest.raises(LeaseHeld):
        table_plan(table_id=table.pk, lease_owner="worker-c")  # resumed once, not twice
    # worker-a wakes up with games 1 and 2: refused, nothing of the batch is recorded.
    with pytest.raises(LeaseLost):
        table_games_record(table_id=table.pk, results=[make_result(1, [3, 2, 1, 0]), make_result(2, [3, 2, 1, 0])],
                           lease_owner="worker-a")
    assert list(Game.objects.filter(table=table).values_list("index", flat=True)) == [0]
    # worker-b plays on from game 1: its own games are recorded, each once.
    table_games_record(table_id=table.pk, results=[make_result(1, [0, 1, 2, 3])], lease_owner="worker-b")
    games = dict(Game.objects.filter(table=table).values_list("index", "finishing_order"))
    assert games == {0: [0, 1, 2, 3], 1: [0, 1, 2, 3]}
    assert Table.objects.get(pk=table.pk).games_recorded == 2


@pytest.mark.django_db(transaction=True)
def test_a_task_whose_lease_is_taken_over_mid_table_stops_and_records_nothing_more(table, monkeypatch) -> None:
    """The old holder is alive (say its renewals were stuck for a whole lease): a reaper
    claimed its table and another worker resumed it. Its next batch is refused and it stops."""
    from django.db import connection

    from tests.tournaments.conftest import make_result
    from tournaments import tasks
    from tournaments.models import Game
    from tournaments.play.referee import TableOutcome

    def game_recorded(index: int) -> bool:
        return Game.objects.filter(table=table, index=index).exists()

    def referee(plan, **_):
        try:
            yield make_result(0, [0, 1, 2, 3])
            deadline = time.monotonic() + 10
            while not game_recorded(0) and time.monotonic() < deadline:
                time.sleep(0.02)
            # Meanwhile: a reaper claims the table, another worker takes it over.
            assert tables_claim_stale(stale_after_s=STALE, now=later(31)) == [table.pk]
            assert start(table.pk, "worker-b")
            yield make_result(1, [3, 2, 1, 0])
            yield make_result(2, [3, 2, 1, 0])
            yield TableOutcome(completed=False, next_game_index=3, detail="cancelled")
        finally:
            connection.close()  # this reader thread's own connection

    monkeypatch.setattr("tournaments.play.referee.referee_play_table", referee)
    monkeypatch.setattr("tournaments.play.routing.route_connected", lambda route: None)
    assert tasks.table_play_task(table.pk) == "lease lost"
    assert list(Game.objects.filter(table=table).values_list("index", flat=True)) == [0]
    row = Table.objects.get(pk=table.pk)
    # Nothing of the new holder's was touched: still its lease, running, no error noted.
    assert (row.status, row.lease_owner, row.games_recorded, row.last_error) == ("running", "worker-b", 1, "")


@pytest.mark.django_db
def test_a_second_copy_of_the_task_leaves_a_held_table_alone(table, monkeypatch) -> None:
    from tournaments import tasks

    assert start(table.pk, "worker-a")
    monkeypatch.setattr("tournaments.play.referee.referee_play_table", lambda plan, **_: pytest.fail("played twice at once"))
    assert tasks.table_play_task(table.pk) == "played by another worker"
    row = Table.objects.get(pk=table.pk)
    assert (row.lease_owner, row.attempts) == ("worker-a", 1)


@pytest.mark.django_db
def test_the_tick_and_the_workers_reapers_claim_the_same_way(table, monkeypatch) -> None:
    from tournaments import tasks

    enqueued: list[int] = []
    monkeypatch.setattr(tasks.table_play_task, "delay", enqueued.append)
    assert start(table.pk, "worker-dead", lease_s=0.2)
    time.sleep(0.3)
    assert tasks.tournaments_tick()["resumed_stale"] == 1 and enqueued == [table.pk]
    assert tasks.tables_reap() == [] and enqueued == [table.pk]  # claimed once


@pytest.mark.django_db(transaction=True)
def test_keeping_leases_costs_one_thread_per_process_and_nothing_for_a_short_table(organiser, bots) -> None:
    tournament = running_round_robin(organiser, bots[:8], seats_per_table=4)
    tables = list(tournament.tables.all()[:3])
    times = LeaseTimes(lease_s=1.0, renew_s=0.3, reap_s=0)
    # A table done before its first renewal is due: never renewed, no query at all.
    with leases.TableLease(tables[0].pk, times=times) as short:
        assert start(tables[0].pk, short.owner, lease_s=times.lease_s)
        short.keep()
    threads_before = {t.name for t in threading.enumerate()}
    held = [leases.TableLease(t.pk, times=times) for t in tables[1:]]
    try:
        for lease in held:
            assert start(lease.table_id, lease.owner, lease_s=times.lease_s)
            lease.keep()
        time.sleep(1.5)  # past the lease: both kept alive by one thread renewing them
        # (the short table's attempt ended without freeing its lease, as a dead one would)
        assert tables_claim_stale(stale_after_s=STALE) == [tables[0].pk]
        assert all(lease.renewals >= 3 for lease in held)
        assert short.renewals == 0
        names = [t.name for t in threading.enumerate()]
        assert names.count("table-leases") == 1 and "table-leases" in threads_before
    finally:
        for lease in held:
            lease.release()


@pytest.mark.django_db
def test_a_redelivered_task_takes_over_at_once_from_a_holder_whose_process_is_gone(table, monkeypatch) -> None:
    """A worker's pool child killed mid-table (the OOM killer): Celery requeues its task at
    once; the copy sees the lease held by a process of this host that no longer exists and
    takes the table over without waiting for the lease to expire."""
    import subprocess

    from tests.tournaments.conftest import make_result
    from tournaments import tasks
    from tournaments.models import Game
    from tournaments.play.lifecycle import lease_owner_new, lease_owner_process_gone
    from tournaments.play.referee import TableOutcome

    gone = subprocess.Popen(["true"])
    gone.wait()
    host = lease_owner_new().split(":")[0]
    dead, alive = f"{host}:{gone.pid}:0123456789abcdef", f"{host}:{os.getppid()}:0123456789abcdef"
    assert lease_owner_process_gone(dead) and not lease_owner_process_gone(alive)
    assert not lease_owner_process_gone(f"elsewhere:{gone.pid}:0123456789abcdef")  # another host: unsure

    def referee(plan, **_):
        for i in range(plan.first_game_index, plan.games_planned):
            yield make_result(i, [0, 1, 2, 3])
        yield TableOutcome(completed=True, next_game_index=plan.games_planned)

    monkeypatch.setattr("tournaments.play.referee.referee_play_table", referee)
    monkeypatch.setattr("tournaments.play.routing.route_connected", lambda route: None)
    assert start(table.pk, alive)
    assert tasks.table_play_task(table.pk) == "played by another worker"  # alive: left alone
    Table.objects.filter(pk=table.pk).update(lease_owner=dead)
    assert tasks.table_play_task(table.pk).startswith("recorded")
    row = Table.objects.get(pk=table.pk)
    assert row.status == "done" and row.games_recorded == row.games_planned
    assert Game.objects.filter(table=table).count() == row.games_planned


@pytest.mark.django_db
def test_a_reaper_claims_at_once_the_tables_of_this_hosts_dead_processes_and_only_those(organiser, bots,
                                                                                         monkeypatch) -> None:
    """A worker killed with its whole pool and restarted by its supervisor: nothing
    redelivers its tasks (Redis holds them for its visibility timeout, an hour) and their
    leases would hold the tables for up to 30 s more. The restarted worker's reaper claims
    them on its next pass; a live holder, a holder on another host and a stopped (SIGSTOP)
    holder keep theirs until the lease expires."""
    import signal
    import subprocess
    import sys

    from tournaments import tasks
    from tournaments.play.lifecycle import lease_owner_new

    tournament = running_round_robin(organiser, bots[:8], seats_per_table=4)
    dead_table, live_table, remote_table, stopped_table = list(tournament.tables.order_by("id")[:4])
    gone = subprocess.Popen(["true"])
    gone.wait()
    stopped = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        stopped.send_signal(signal.SIGSTOP)
        host = lease_owner_new().split(":")[0]
        assert start(dead_table.pk, f"{host}:{gone.pid}:0123456789abcdef")
        assert start(live_table.pk, f"{host}:{os.getppid()}:0123456789abcdef")
        assert start(remote_table.pk, f"elsewhere:{gone.pid}:0123456789abcdef")
        assert start(stopped_table.pk, f"{host}:{stopped.pid}:0123456789abcdef")
        enqueued: list[int] = []
        monkeypatch.setattr(tasks.table_play_task, "delay", enqueued.append)
        assert tasks.tables_reap() == [dead_table.pk] and enqueued == [dead_table.pk]
        row = Table.objects.get(pk=dead_table.pk)
        assert (row.status, row.lease_owner) == ("running", "")  # free: the re-enqueued task takes it
        owners = dict(Table.objects.filter(pk__in=[live_table.pk, remote_table.pk, stopped_table.pk])
                      .values_list("pk", "lease_owner"))
        assert owners == {live_table.pk: f"{host}:{os.getppid()}:0123456789abcdef",
                          remote_table.pk: f"elsewhere:{gone.pid}:0123456789abcdef",
                          stopped_table.pk: f"{host}:{stopped.pid}:0123456789abcdef"}
        assert tasks.tables_reap() == []  # claimed once
    finally:
        stopped.kill()
        stopped.wait()


def test_a_table_lost_with_its_referee_retries_within_seconds_however_often_it_failed() -> None:
    """A referee restarting takes seconds: a table that failed against it a few times must
    not wait a minute once it is back (the recovery benchmark's slow runs), while a table
    waiting for absent bots still backs off to a minute."""
    from tournaments import tasks

    assert [tasks.backoff_seconds(n, tasks.RECOVERY_BACKOFF_S) for n in range(1, 9)] == [2, 4, 8, 8, 8, 8, 8, 8]
    assert tasks.backoff_seconds(8) == 60
    # Still about 25 minutes of a referee down before its tables fail, as before the cap.
    outage = sum(tasks.backoff_seconds(n, tasks.RECOVERY_BACKOFF_S) for n in range(1, tasks.MAX_REFEREE_RETRIES + 1))
    assert 20 * 60 <= outage <= 30 * 60


def test_a_table_lost_with_its_referee_waits_in_its_slot_and_retries_as_soon_as_the_referee_answers() -> None:
    """With the referee down the task holds its worker slot until the referee answers
    again (or its backoff ran out) and then retries at once: the worker takes no more
    tables from the queue meanwhile (each would fail, back off and fail again), and the
    table resumes within moments of the referee's restart, not a backoff later."""
    import socket
    import threading
    from concurrent import futures

    import grpc

    from tournaments import tasks
    from tournaments.play.referee import referee_channel_drop

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    target = f"127.0.0.1:{port}"
    server = grpc.server(futures.ThreadPoolExecutor(1))
    server.add_insecure_port(target)
    restart = threading.Timer(0.5, server.start)  # the referee back half a second later
    restart.start()
    try:
        assert tasks._referee_wait(target, 30) == 0  # returned once it answered, not after 30 s
        with grpc.insecure_channel(target) as channel:  # it answers
            assert grpc.channel_ready_future(channel).result(timeout=5) is None
    finally:
        restart.join()
        server.stop(0)
        referee_channel_drop(target=target)
    assert tasks._referee_wait("", 8) == 8  # nowhere to wait (no route): the plain backoff


@pytest.mark.django_db
def test_a_table_whose_plan_meets_the_database_down_is_retried_not_dropped(table, monkeypatch) -> None:
    """PostgreSQL restarting while a worker takes a table: the plan fails to connect. The
    task must be retried (its message kept), not fail: a failed task is acked and the table
    would stay pending with no task left to play it."""
    from celery.exceptions import Retry
    from django.db import OperationalError

    from tournaments import tasks

    def down(**_):
        raise OperationalError("connection failed: the database system is starting up")

    retries: list[int] = []

    def retry(*, countdown: int, exc: Exception, **_) -> Retry:
        retries.append(countdown)
        return Retry(exc=exc, when=countdown)

    monkeypatch.setattr("tournaments.play.attempt.table_plan", down)
    monkeypatch.setattr(tasks.table_play_task, "retry", retry)
    with pytest.raises(Retry):
        tasks.table_play_task(table.pk)
    assert retries == [2]  # retried in 2 s (then 4, then every 8), never failed
    row = Table.objects.get(pk=table.pk)
    assert (row.status, row.attempts) == ("pending", 0)  # untouched: the retry plays it


def test_a_wait_for_a_referee_that_never_answers_ends_and_leaves_no_polling_thread() -> None:
    """The slot's wait for a referee still down ends at its countdown (the retry is then
    due at once) and stops watching the channel: a watch left pending kept gRPC's
    connectivity-polling thread alive for the channel's life (the leak check names it)."""
    import socket
    import sys
    import threading

    from tournaments import tasks
    from tournaments.play.referee import referee_channel_drop

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        target = f"127.0.0.1:{sock.getsockname()[1]}"  # nothing listens there
    def polling() -> list[str]:
        """Threads now inside gRPC's connectivity polling (the channel is still cached)."""
        frames = sys._current_frames()
        out = []
        for thread in threading.enumerate():
            frame = frames.get(thread.ident or -1)
            while frame is not None:
                if frame.f_code.co_name == "_poll_connectivity":
                    out.append(thread.name)
                    break
                frame = frame.f_back
        return out

    try:
        assert tasks._referee_wait(target, 1) == 0
        deadline = time.monotonic() + 5
        while polling():
            assert time.monotonic() < deadline, f"gRPC's connectivity polling still runs: {polling()}"
            time.sleep(0.1)
    finally:
        referee_channel_drop(target=target)


@pytest.mark.django_db(transaction=True)
def test_a_recorder_frozen_inside_its_batch_stalls_the_tournament_only_for_the_idle_bound(
        organiser, bots, monkeypatch) -> None:
    """A worker frozen (SIGSTOP) inside a recording batch holds the tournament's row lock,
    which every batch and every close of the tournament takes: PostgreSQL ends the frozen
    session once it idled LOCKED_IDLE_S (here 1 s), and the other tables record again. The
    frozen side is a thread that stops between two statements of its transaction: to the
    database, the same as a stopped process."""
    from django.db import DatabaseError, connection

    from tournaments import table_rows

    if connection.vendor != "postgresql":
        pytest.skip("the idle bound is PostgreSQL's (idle_in_transaction_session_timeout)")
    monkeypatch.setattr(table_rows, "LOCKED_IDLE_S", 1)
    for statement in (table_rows._table_with_tournament, table_rows._tournament_locked):
        monkeypatch.setattr(statement, "_texts", {})  # built again with the bound of 1 s
    tournament = running_round_robin(organiser, bots[:8], seats_per_table=4)
    frozen_table, other_table = tournament.tables.order_by("id")[:2]
    locked, frozen_error = threading.Event(), []

    def frozen_recorder() -> None:
        try:
            with transaction.atomic():
                table_rows.table_with_tournament(frozen_table.pk, lock="tournament")
                locked.set()
                time.sleep(3)  # frozen between two statements
                Table.objects.filter(pk=frozen_table.pk).update(games_recorded=1)
        except DatabaseError as exc:  # InternalError: PostgreSQL ended the session
            frozen_error.append(exc)
        finally:
            connection.close()

    thread = threading.Thread(target=frozen_recorder)
    thread.start()
    try:
        assert locked.wait(10)
        started = time.monotonic()
        with transaction.atomic():  # another worker's batch of another table
            table_rows.table_with_tournament(other_table.pk, lock="tournament")
            waited = time.monotonic() - started
    finally:
        thread.join()
    assert waited < 2.8, f"the other table's batch waited {waited:.1f} s for the lock (frozen for 3 s)"
    # The frozen transaction was ended and rolled back whole: it wrote nothing.
    assert frozen_error and "idle-in-transaction timeout" in str(frozen_error[0])
    assert Table.objects.get(pk=frozen_table.pk).games_recorded == 0


def test_a_pending_table_whose_first_task_was_lost_is_claimed_once_per_period(table) -> None:
    """A worker killed after receiving a table's task but before its plan ran (no lease
    yet) leaves the table pending with no attempt, its message in Redis's unacked set for
    an hour: the reapers claim it (with the queue empty: `tasks.tables_reap`) once it
    waited `older_than_s`, and again only a period later."""
    from tournaments.play.lifecycle import tables_claim_lost

    now = timezone.now()
    Table.objects.filter(pk=table.pk).update(created_at=now - timedelta(seconds=45))
    assert tables_claim_lost(older_than_s=30, now=now) == [table.pk]
    assert tables_claim_lost(older_than_s=30, now=now + timedelta(seconds=10)) == []
    assert tables_claim_lost(older_than_s=30, now=now + timedelta(seconds=31)) == [table.pk]
    # Attempted once: its lease and retries are the other reapers' business.
    assert start(table.pk, "host:1:a")
    assert tables_claim_lost(older_than_s=30, now=now + timedelta(seconds=120)) == []


def test_the_reapers_send_a_lost_pending_table_again_only_when_nothing_waits_in_the_queue(table, monkeypatch) -> None:
    from tournaments import tasks

    Table.objects.filter(pk=table.pk).update(created_at=timezone.now() - timedelta(seconds=tasks.LOST_TABLE_S + 5))
    sent = []
    monkeypatch.setattr(tasks.table_play_task, "delay", lambda table_id, **_: sent.append(table_id))
    monkeypatch.setattr(tasks, "_tables_queue_empty", lambda: False)  # its task may still be queued
    assert tasks.tables_reap() == [] and sent == []
    monkeypatch.setattr(tasks, "_tables_queue_empty", lambda: True)
    assert tasks.tables_reap() == [table.pk] and sent == [table.pk]


#: A recorder process (a real one, SIGSTOPped) frozen inside the COPY of its batch's seats,
#: holding the tournament's row lock: Django's own lock statement, then psycopg's COPY left
#: open (to PostgreSQL: `active`, waiting on the client, the idle bound not running).
_FROZEN_INSIDE_COPY = """
import os, sys, time
sys.path[:0] = ["platform", "."]
os.environ["DJANGO_SETTINGS_MODULE"] = "tienlen_site.settings"
import django
django.setup()
from django.db import connection, transaction
from tournaments import table_rows
from tournaments.models import GameSeat
with transaction.atomic():
    table_rows.table_with_tournament(int(sys.argv[1]), lock="tournament")
    if sys.argv[2] == "copy":
        with connection.cursor() as cursor, cursor.cursor.copy(
                f"COPY {GameSeat._meta.db_table} (game_id, seat) FROM STDIN") as copy:
            copy.write_row((1, 0))
            print("frozen", flush=True)
            time.sleep(120)
    with connection.cursor() as cursor:  # idle in the transaction, its idle bound undone
        cursor.execute("SET LOCAL idle_in_transaction_session_timeout = 0")
    print("frozen", flush=True)
    time.sleep(120)
"""


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("where", ["copy", "idle"])
def test_a_worker_stopped_mid_statement_holding_the_lock_stalls_the_tournament_only_until_a_reaper_pass(
        organiser, bots, monkeypatch, where) -> None:
    """A worker SIGSTOPped inside a statement of its recording batch (the seats' COPY, a
    pipelined executemany) holds the tournament's row lock, and the idle bound never runs
    (PostgreSQL starts it between statements only): every batch and close of the tournament
    waited for the whole stop (180 s in benchmarks/README.md, "Recovery"). A reaper pass
    ends such a session once it has waited on its client LOCKED_IDLE_S (here 1 s) while
    another waits on its lock, and the other table's batch goes on; the stopped batch
    wrote nothing. The same for a session left idle in its transaction without the idle
    bound (`where` "idle"): the bound must not depend on how the holder got there."""
    import signal
    import subprocess
    import sys
    from pathlib import Path

    from django.db import connection

    from tournaments import table_rows, tasks
    from tournaments.models import GameSeat

    if connection.vendor != "postgresql":
        pytest.skip("PostgreSQL's sessions and locks")
    monkeypatch.setattr(table_rows, "LOCKED_IDLE_S", 1)
    monkeypatch.setattr(tasks, "_tables_queue_empty", lambda: False)
    tournament = running_round_robin(organiser, bots[:8], seats_per_table=4)
    frozen_table, other_table = tournament.tables.order_by("id")[:2]
    db = connection.settings_dict
    url = f"postgres://{db['USER']}:{db['PASSWORD'] or ''}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"
    root = Path(__file__).resolve().parents[2]
    worker = subprocess.Popen([sys.executable, "-c", _FROZEN_INSIDE_COPY, str(frozen_table.pk), where], cwd=root,
                              env={**os.environ, "DATABASE_URL": url}, stdout=subprocess.PIPE, text=True)
    waited: list[float] = []

    def other_batch() -> None:
        started = time.monotonic()
        try:
            with transaction.atomic():
                table_rows.table_with_tournament(other_table.pk, lock="tournament")
                waited.append(time.monotonic() - started)
        finally:
            connection.close()

    waiter = threading.Thread(target=other_batch)
    try:
        assert worker.stdout is not None and worker.stdout.readline().strip() == "frozen"
        worker.send_signal(signal.SIGSTOP)
        waiter.start()
        time.sleep(2.5)
        assert not waited, "the lock was free: the stopped worker did not hold it"  # the idle bound did not help
        tasks.tables_reap()
        waiter.join(5)
        assert waited, "the other table's batch still waits for the stopped worker's lock after a reaper pass"
    finally:
        worker.send_signal(signal.SIGCONT)
        worker.kill()
        worker.wait(10)
        waiter.join(30)
    assert waited[0] < 7.5
    assert not GameSeat.objects.exists()  # the stopped batch was rolled back whole


@pytest.mark.django_db
def test_a_retry_after_the_database_failed_takes_its_own_lease_back_at_once(table, monkeypatch) -> None:
    """PostgreSQL restarting mid-table: the attempt ends on a database error and cannot free
    its lease (the database is what failed). Its retry, due in 2 s, found the lease held by
    that ended attempt, took itself for a second copy and stopped: the table waited for the
    lease to expire and a reaper (up to 40 s). The retry carries
    the ended attempt's owner and takes that lease back at once."""
    from celery.exceptions import Retry
    from django.db import OperationalError

    from tournaments import tasks
    from tournaments.play import attempt as attempts
    from tournaments.play.attempt import AttemptOutcome, Happened

    owners: list[str] = []

    def attempt_ended_by_the_database(table_id: int, *, lease, avoid=()) -> AttemptOutcome:
        plan = attempts._plan(table_id, lease)  # takes the lease, as a real attempt
        owners.append(lease.owner)
        return AttemptOutcome(Happened.DATABASE_ERROR, table_id, plan.attempts, "database error: gone",
                              OperationalError("gone"))

    def database_down(**_) -> None:
        raise OperationalError("the database system is shutting down")

    retries: list[dict] = []

    def retry(*, countdown: float, exc: Exception, kwargs: dict | None = None, **_) -> Retry:
        retries.append(kwargs or {})
        return Retry(exc=exc, when=countdown)

    monkeypatch.setattr(tasks, "table_attempt", attempt_ended_by_the_database)
    monkeypatch.setattr(tasks, "table_wait", database_down)
    monkeypatch.setattr(tasks.table_play_task, "retry", retry)
    with pytest.raises(Retry):
        tasks.table_play_task(table.pk)
    assert Table.objects.get(pk=table.pk).lease_owner == owners[0]  # not freed: the database was down
    with pytest.raises(Retry):
        tasks.table_play_task(table.pk, **retries[0])  # the retry, 2 s later, lease still live
    assert len(owners) == 2, "the retry found the ended attempt's lease held and left the table"
    assert Table.objects.get(pk=table.pk).lease_owner == owners[1]


@pytest.mark.django_db(transaction=True)
def test_a_resumed_table_is_taken_from_the_queue_before_the_new_tables_ahead_of_it() -> None:
    """A table resumed (a reaper's re-enqueue, a retry) is taken before the new tables already
    queued: at the back of the queue it waited for every one of them (the table killed with
    its worker finished last, 40-50 s after the fault under load, and every later game's
    rating waited for it). Real Redis (CELERY_BROKER_URL), read as a worker reads it."""
    from tests.celery_helpers import test_broker_url
    from tournaments import tasks
    from tournaments.jobs import Job, enqueue_on_commit

    url = test_broker_url()
    if not url.startswith("redis"):
        pytest.skip("priorities of the Redis transport")
    app = tasks.table_play_task.app
    saved = app.conf.broker_url, app.conf.broker_transport_options, app._pool, app.amqp._producer_pool
    queue = app.conf.task_default_queue

    def purge() -> None:
        with app.connection_for_write() as conn:
            conn.default_channel.queue_purge(queue)

    app.conf.broker_url, app.conf.broker_transport_options, app._pool, app.amqp._producer_pool = url, {}, None, None
    try:
        purge()
        for table_id in (101, 102, 103):
            enqueue_on_commit(Job.PLAY_TABLE, table_id)  # outside a transaction: sent now
        tasks.table_play_task.delay(104)  # a reaper's re-enqueue (tables_reap)
        with app.connection_for_read() as conn:
            simple = conn.SimpleQueue(queue, no_ack=True)
            taken = [simple.get(timeout=5).headers["argsrepr"] for _ in range(4)]
        purge()
    finally:
        app.conf.broker_url, app.conf.broker_transport_options, app._pool, app.amqp._producer_pool = saved
    assert taken == ["(104,)", "(101,)", "(102,)", "(103,)"]
