"""The worker's side of table leases: the heartbeat that keeps a playing table's lease, and
the reaper that finds tables whose holder died. The lease's state changes themselves are
transitions of `tournaments.play.lifecycle` (`table_lease_renew`, `tables_claim_stale`).

Both run in background threads so nothing is added to the per-game path: a table's
recorder never waits for a renewal, and a renewal is one UPDATE every
TIENLEN_LEASE_RENEW_SECONDS per playing table, from one heartbeat thread per worker process
(started on first use, in the process that plays: after a prefork worker's fork). Each
thread uses its own database connection (Django's are per thread); the reaper, which runs
in the worker's main process, closes it after every pass, so that process never forks a
pool child while holding one.
"""

from __future__ import annotations

import logging
import os
import random
import threading
import time
from collections.abc import Callable
from types import TracebackType

from django.db import DatabaseError, connection, reset_queries

from tournaments.models import Table
from tournaments.play.lifecycle import LeaseLost, LeaseTimes, lease_owner_new, table_lease_renew

log = logging.getLogger(__name__)


class TableLease:
    """One attempt's hold on a table: its owner token, and while it plays, renewals of the
    lease by the process's heartbeat thread (`_Keeper`).

        with TableLease(table_id) as lease:
            plan = table_plan(table_id=..., lease_owner=lease.owner)   # takes the lease
            lease.keep()                                                # renewed from now on
            ... lease.check() between batches; writes pass owner=lease.owner ...

    `lost` is set when a renewal finds the lease taken over (the attempt was presumed dead,
    e.g. its renewals failed for a whole lease): the attempt must stop, and `check()`
    raises LeaseLost. Its writes are fenced anyway (they raise LeaseLost themselves).
    Keeping a lease costs a dict entry, no thread and no query: a table shorter than one
    renewal period is never renewed at all.

    `succeeds` names the attempt this one continues (a task's retry: the owner of its
    previous run), whose lease it may take back at once: that attempt has ended, but its
    last transition could not free its lease when the database was what failed (e.g.
    PostgreSQL restarting), and the table would otherwise wait for the lease to expire."""

    def __init__(self, table_id: int, *, times: LeaseTimes | None = None, succeeds: str = "") -> None:
        self.table_id = table_id
        self.owner = lease_owner_new()
        self.succeeds = succeeds
        self.times = times or LeaseTimes.from_settings()
        self.lost = threading.Event()
        self.renewals = 0
        self.renewed_at = 0.0  # time.monotonic() of the take or the last renewal
        self._kept = False

    def keep(self) -> None:
        """Start renewing (once the lease is taken)."""
        if not self._kept:
            self.renewed_at = time.monotonic()
            self._kept = True
            _keeper().add(self)

    def check(self) -> None:
        if self.lost.is_set():
            raise LeaseLost(self.table_id, self.owner)

    def release(self) -> None:
        """Stop renewing (the lease itself is freed by the attempt's last transition)."""
        if self._kept:
            self._kept = False
            _keeper().discard(self)

    def __enter__(self) -> TableLease:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.release()

    def renew(self) -> bool:
        """One renewal (the keeper's thread); False once there is nothing more to keep."""
        try:
            if not table_lease_renew(table_id=self.table_id, owner=self.owner, lease_s=self.times.lease_s):
                return False  # the table closed (or it is no longer running): nothing to keep
        except LeaseLost:
            log.warning("table %s: lease of %s taken over; stopping", self.table_id, self.owner)
            self.lost.set()
            return False
        except Table.DoesNotExist:
            return False  # deleted (its tournament was): nothing to keep
        except DatabaseError as exc:
            # The next renewal may succeed; the lease outlives a few failed ones.
            log.warning("table %s: lease renewal failed: %s", self.table_id, exc)
            connection.close()
            return True
        except Exception:
            log.exception("table %s: lease renewal failed", self.table_id)
            return True
        self.renewals += 1
        self.renewed_at = time.monotonic()
        return True


class _Keeper:
    """The process's heartbeat thread: renews every kept lease once its renewal period has
    passed (looking five times a period), with one database connection of its own."""

    def __init__(self) -> None:
        self.pid = os.getpid()
        self._leases: set[TableLease] = set()
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._thread: threading.Thread | None = None

    def add(self, lease: TableLease) -> None:
        with self._lock:
            self._leases.add(lease)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="table-leases", daemon=True)
                self._thread.start()
            self._wake.notify()

    def discard(self, lease: TableLease) -> None:
        with self._lock:
            self._leases.discard(lease)

    def _due(self) -> list[TableLease]:
        with self._lock:
            while not self._leases:
                self._wake.wait()
            now = time.monotonic()
            return [lease for lease in self._leases if now - lease.renewed_at >= lease.times.renew_s]

    def _run(self) -> None:
        while True:
            with self._lock:
                idle = not self._leases
            if idle:
                # Nothing to keep: hold no database connection while waiting (a connection
                # idle for hours holds a server slot, and a test database cannot be dropped
                # while a keeper of an earlier test still has it open).
                connection.close()
            for lease in self._due():
                if not lease.renew():
                    self.discard(lease)
            # This thread's connection outlives every task, and with DEBUG on Django logs
            # each of its queries (up to 9,000) until a web request empties the log: none
            # ever comes here, so the soak's workers grew by ~1.5 MB a minute.
            reset_queries()
            with self._lock:  # a lease added meanwhile wakes it (its period may be shorter)
                if self._leases:
                    self._wake.wait(min(lease.times.renew_s for lease in self._leases) / 5)


_keepers: dict[int, _Keeper] = {}
_keepers_lock = threading.Lock()


def _keeper() -> _Keeper:
    """This process's keeper (one per process: a prefork child makes its own)."""
    pid = os.getpid()
    with _keepers_lock:
        keeper = _keepers.get(pid)
        if keeper is None:
            keeper = _keepers[pid] = _Keeper()
        return keeper


class Reaper:
    """Calls `reap()` every `interval_s` seconds (with a random first delay, so the workers
    of a deployment do not all look at once) in a daemon thread, until stopped."""

    def __init__(self, reap: Callable[[], object], *, interval_s: float) -> None:
        self.reap = reap
        self.interval_s = interval_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="table-reaper", daemon=True)
        self.passes = 0

    def start(self) -> Reaper:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def _run(self) -> None:
        delay = random.uniform(0, self.interval_s)
        while not self._stop.wait(delay):
            delay = self.interval_s
            try:
                _lock_wait_bounded()
                self.reap()
            except Exception:  # a database or broker hiccup: look again next time
                log.exception("table reaper pass failed")
            finally:
                connection.close()
                reset_queries()  # as the keeper's: no request ever empties this thread's log
                self.passes += 1


#: Seconds a reaper pass waits for a row lock before giving up until its next pass. A
#: claim waits on the tournament's row lock like any writer: behind a holder frozen
#: mid-statement (SIGSTOP), an unbounded wait hung the reaper thread itself, and with it the
#: pass that ends such a holder (`table_rows.lock_holders_frozen_end`) and every claim after.
REAP_LOCK_WAIT_S = 2


def _lock_wait_bounded() -> None:
    """`lock_timeout` for the reaper thread's session (closed after every pass)."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(f"SET lock_timeout = '{REAP_LOCK_WAIT_S * 1000}ms'")


_reaper: Reaper | None = None
_reaper_lock = threading.Lock()


def reaper_start(reap: Callable[[], object], *, interval_s: float | None = None) -> Reaper | None:
    """Start this process's reaper (idempotent); None when TIENLEN_LEASE_REAP_SECONDS is 0."""
    global _reaper
    interval = LeaseTimes.from_settings().reap_s if interval_s is None else interval_s
    if interval <= 0:
        return None
    with _reaper_lock:
        if _reaper is None:
            _reaper = Reaper(reap, interval_s=interval).start()
            log.info("table reaper started: every %.0f s", interval)
        return _reaper


def reaper_stop() -> None:
    global _reaper
    with _reaper_lock:
        if _reaper is not None:
            _reaper.stop()
            _reaper = None
