"""The worker's side of table leases: the heartbeat that keeps a playing table's lease, and
the reaper that finds tables whose holder died. The lease's state changes themselves are
transitions of `tournaments.table_lifecycle` (`table_lease_renew`, `tables_claim_stale`).

Both run in background threads so nothing is added to the per-game path: a table's
recorder never waits for a renewal, and a renewal is one UPDATE every
TIENLEN_LEASE_RENEW_SECONDS per playing table. Each thread uses its own database
connection (Django's are per thread) and closes it when it stops; the reaper closes it
after every pass, so a prefork worker never forks a child while holding one.
"""

from __future__ import annotations

import logging
import random
import threading
from collections.abc import Callable
from types import TracebackType

from django.db import DatabaseError, connection

from tournaments.table_lifecycle import LeaseLost, LeaseTimes, lease_owner_new, table_lease_renew

log = logging.getLogger(__name__)


class TableLease:
    """One attempt's hold on a table: its owner token, and while it plays, a heartbeat
    thread renewing the lease.

        with TableLease(table_id) as lease:
            plan = table_plan(table_id=..., lease_owner=lease.owner)   # takes the lease
            lease.keep()                                                # starts renewing
            ... lease.check() between batches; writes pass owner=lease.owner ...

    `lost` is set when a renewal finds the lease taken over (the attempt was presumed dead,
    e.g. its renewals failed for a whole lease): the attempt must stop, and `check()`
    raises LeaseLost. Its writes are fenced anyway (they raise LeaseLost themselves)."""

    def __init__(self, table_id: int, *, times: LeaseTimes | None = None) -> None:
        self.table_id = table_id
        self.owner = lease_owner_new()
        self.times = times or LeaseTimes.from_settings()
        self.lost = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.renewals = 0

    def keep(self) -> None:
        """Start renewing (once the lease is taken)."""
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._run, name=f"lease-{self.table_id}", daemon=True
            )
            self._thread.start()

    def check(self) -> None:
        if self.lost.is_set():
            raise LeaseLost(self.table_id, self.owner)

    def release(self) -> None:
        """Stop renewing (the lease itself is freed by the attempt's last transition)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
            self._thread = None

    def __enter__(self) -> TableLease:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.release()

    def _run(self) -> None:
        try:
            while not self._stop.wait(self.times.renew_s):
                try:
                    if not table_lease_renew(table_id=self.table_id, owner=self.owner,
                                             lease_s=self.times.lease_s):
                        return  # the table closed (or it is no longer running): nothing to keep
                    self.renewals += 1
                except LeaseLost:
                    log.warning("table %s: lease of %s taken over; stopping", self.table_id, self.owner)
                    self.lost.set()
                    return
                except DatabaseError as exc:
                    # The next renewal may succeed; the lease outlives a few failed ones.
                    log.warning("table %s: lease renewal failed: %s", self.table_id, exc)
                    connection.close()
                except Exception:
                    log.exception("table %s: lease renewal failed", self.table_id)
        finally:
            connection.close()


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
                self.reap()
            except Exception:  # a database or broker hiccup: look again next time
                log.exception("table reaper pass failed")
            finally:
                connection.close()
                self.passes += 1


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
