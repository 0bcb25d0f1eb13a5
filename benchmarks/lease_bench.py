"""Lease benchmark: what does holding a table's lease add to the worker's per-table cost?

Measured side by side in one run, alternating, on real rows in PostgreSQL (a started 8-bot
round robin's tables), each the median of `--repeat` timings:

* the attempt's start (`table_plan`: its one UPDATE of the table row takes the lease), next
  to the same start without an owner (no lease: what it cost before leases);
* the recorder's UPDATE of the table row fenced by the owner (`table_progress_save`),
  next to the plain UPDATE it replaced (one per recorded batch);
* the worker's bookkeeping per table: a `TableLease` made, kept (the process's heartbeat
  thread, started once per process), checked and released, with no query;
* one renewal (`table_lease_renew`): one UPDATE per playing table every
  TIENLEN_LEASE_RENEW_SECONDS (10 s), off the per-game path, in the heartbeat thread;
* one reaper pass (`tables_claim_stale`, nothing to claim): one SELECT per worker process
  every TIENLEN_LEASE_REAP_SECONDS (10 s), in the worker's main process.

The starts and the recorder's UPDATEs run inside a transaction (as in the worker, where the
commit is the recording batch's own); the renewal and the reaper's pass commit on their own
(as they do). Uses its own database `tienlen_lease_bench` (created, migrated and flushed).

    .venv/bin/python benchmarks/lease_bench.py [--repeat 2000]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "platform")]
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tienlen_site.settings")
BENCH_DB = os.environ.get("TIENLEN_BENCH_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/tienlen_lease_bench")
os.environ["DATABASE_URL"] = BENCH_DB


def setup_django() -> None:
    import django
    import psycopg
    from django.core.management import call_command

    base, _, name = BENCH_DB.rpartition("/")
    with psycopg.connect(f"{base}/postgres", autocommit=True) as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone():
            conn.execute(f'CREATE DATABASE "{name}"')
    django.setup()
    call_command("migrate", verbosity=0)
    call_command("flush", interactive=False, verbosity=0)


def tables() -> list[int]:
    from django.contrib.auth import get_user_model

    from tournaments.models import Tournament
    from tournaments.services.accounts import bot_create
    from tournaments.services.tournaments import (
        tournament_create,
        tournament_entrant_add,
        tournament_schedule,
    )

    organiser = get_user_model().objects.create(username="bench-organiser", is_staff=True)
    tournament = tournament_create(organiser=organiser, name="Lease bench", format="round_robin", seats_per_table=4)
    for number in range(8):
        bot, _ = bot_create(owner=organiser, name=f"bench-{number}", house_bot="random")
        tournament_entrant_add(tournament=tournament, bot=bot)
    Tournament.objects.filter(pk=tournament.pk).update(status=Tournament.Status.SCHEDULED)
    return tournament_schedule(tournament_id=tournament.pk)


def median_us(samples: list[float]) -> float:
    return statistics.median(samples) * 1e6


def timed(call: Callable[[], object]) -> float:
    start = time.perf_counter()
    call()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=2000)
    args = parser.parse_args()
    setup_django()
    from django.db import transaction
    from django.db.models import F

    from tournaments.models import Table
    from tournaments.play import leases
    from tournaments.play.lifecycle import (
        LeaseTimes,
        lease_owner_new,
        table_lease_renew,
        table_progress_save,
        tables_claim_stale,
    )
    from tournaments.services.tables import table_plan

    ids = tables()
    leased, free = ids[0], ids[1]
    owner = lease_owner_new()
    table_plan(table_id=leased, lease_owner=owner)
    table_plan(table_id=free)
    renewed, renewer = ids[3], lease_owner_new()  # its own row: the compared rows see alike writes
    table_plan(table_id=renewed, lease_owner=renewer)
    times = LeaseTimes.from_settings()
    warm = leases.TableLease(ids[2], times=times)
    warm.keep()
    warm.release()

    def bookkeeping() -> None:
        lease = leases.TableLease(ids[2], times=times)
        lease.keep()
        lease.check()
        lease.release()

    rows: dict[str, list[float]] = {key: [] for key in (
        "start, lease taken", "start, no lease", "record UPDATE, fenced", "record UPDATE, plain",
        "bookkeeping", "renewal", "reaper pass")}
    # The recorder's counters go in `increments` (its UPDATE is written out: no F() there).
    pairs = [
        ("start, lease taken", lambda: table_plan(table_id=leased, lease_owner=owner)),
        ("start, no lease", lambda: table_plan(table_id=free)),
        ("record UPDATE, fenced", lambda: table_progress_save(
            table_id=leased, fields={}, owner=owner, increments={"games_recorded": 0})),
        ("record UPDATE, plain", lambda: Table.objects.filter(pk=free).update(games_recorded=F("games_recorded") + 0)),
    ]
    for i in range(args.repeat):  # alternating, each pair in both orders, so drift hits both alike
        # The start and the recorder's UPDATE run inside a transaction in the worker: no
        # commit of their own here either (one transaction per round, rolled back).
        with transaction.atomic():
            for key, call in (pairs if i % 2 else [pairs[1], pairs[0], pairs[3], pairs[2]]):
                rows[key].append(timed(call))
            transaction.set_rollback(True)
        rows["bookkeeping"].append(timed(bookkeeping))
        rows["renewal"].append(timed(lambda: table_lease_renew(table_id=renewed, owner=renewer)))
        rows["reaper pass"].append(timed(lambda: tables_claim_stale(stale_after_s=900)))

    print(f"lease costs, median of {args.repeat} (PostgreSQL {BENCH_DB.rpartition('@')[2]})")
    print(f"{'what':<24} {'µs':>8}  when")
    when = {
        "start, lease taken": "once per attempt (a table_plan)",
        "start, no lease": "  the same before leases",
        "record UPDATE, fenced": "once per recorded batch",
        "record UPDATE, plain": "  the same before leases",
        "bookkeeping": "once per attempt, no query",
        "renewal": f"every {times.renew_s:.0f} s per playing table (heartbeat thread)",
        "reaper pass": f"every {times.reap_s:.0f} s per worker process (main process)",
    }
    for key, samples in rows.items():
        print(f"{key:<24} {median_us(samples):>8.1f}  {when[key]}")
    per_table = (median_us(rows["start, lease taken"]) - median_us(rows["start, no lease"])
                 + median_us(rows["record UPDATE, fenced"]) - median_us(rows["record UPDATE, plain"])
                 + median_us(rows["bookkeeping"]))
    print(f"{'added per table':<24} {per_table:>8.1f}  (start + one batch + bookkeeping; "
          "a 4-game table records in one or two batches)")


if __name__ == "__main__":
    main()
