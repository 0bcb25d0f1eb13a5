"""Where one table's wall clock goes in the recording worker: plan / route / stream open and
play / record / close, for a table played by `table_play_task` run inline (this process is
the worker; the referee is its own process, registered in the pool as deployed).

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/tienlen_pipe \
    CELERY_BROKER_URL=redis://127.0.0.1:6379/5 \
      .venv/bin/python benchmarks/table_split_bench.py [--cycles 2]

An 8-bot house round robin (14 tables of 4 games a cycle) is scheduled, then each table is
played in turn, as one worker process with a task per table does. Each phase is timed
with `time.perf_counter` by wrapping the function that does it:

* plan: `table_plan` (lock, start, seats, deal seeds; takes the lease);
* route: `routing.table_route` (the pool view, the table's referee noted);
* first game: from the stream's call to its first event (the stream opened at the
  referee, its first game played);
* rest of play: from the first event to the last (the referee plays, the worker's reader
  thread queues);
* record: `table_games_record` (each batch; with the close in its last batch);
* other: the task's own work besides (the lease, `_finish`: what follows the close, and the
  baselines' enqueue).

The referee is idle for everything but the stream: plan + route + record + other is what
overlapping tables can hide. The Redis database is only written to (the baselines' queue),
never consumed; the database is created, migrated and flushed.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "platform"), str(ROOT / "benchmarks")]
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tienlen_site.settings")
DB_URL = os.environ.get("DATABASE_URL") or "postgres://postgres@127.0.0.1:5432/tienlen_pipe_bench"
os.environ["DATABASE_URL"] = DB_URL
BROKER = os.environ.get("CELERY_BROKER_URL") or "redis://127.0.0.1:6379/5"
os.environ["CELERY_BROKER_URL"] = BROKER

import pipeline_bench  # noqa: E402  (the referee process and the round robin)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cycles", type=int, default=2, help="round robin cycles (14 tables of 4 games each)")
    parser.add_argument("--rounds", type=int, default=3,
                        help="then, alternating: the tables one after another (a task per table) against one "
                             "group task of all of them, TIENLEN_GROUP_THREADS at a time; 0: the split only")
    args = parser.parse_args()
    pipeline_bench.setup()

    from django.contrib.auth.models import User

    from tournaments import tasks
    from tournaments.models import Game, Tournament
    from tournaments.play import attempt, referee, routing, stream
    from tournaments.services import accounts
    from tournaments.services import tournaments as services

    proc, target = pipeline_bench.start_referee(0)
    os.environ["REFEREE_TARGET"] = target
    os.environ["REFEREE_ORGANIZER_TOKEN"] = pipeline_bench.ORGANIZER_TOKEN
    from django.conf import settings

    settings.REFEREE_TARGET = target
    settings.REFEREE_ORGANIZER_TOKEN = pipeline_bench.ORGANIZER_TOKEN
    phases: dict[str, float] = {}

    def timed(name, fn):
        def run(*a, **k):
            t0 = time.perf_counter()
            try:
                return fn(*a, **k)
            finally:
                phases[name] = phases.get(name, 0.0) + time.perf_counter() - t0
        return run

    def timed_stream(fn):
        def run(*a, **k):
            t0 = time.perf_counter()
            first = None
            for event in fn(*a, **k):
                now = time.perf_counter()
                if first is None:
                    first = now
                    phases["first game"] = phases.get("first game", 0.0) + now - t0
                last = now
                yield event
            if first is not None:
                phases["rest of play"] = phases.get("rest of play", 0.0) + last - first
        return run

    attempt.table_plan = timed("plan", attempt.table_plan)
    routing.table_route = timed("route", routing.table_route)
    attempt.table_games_record = timed("record", attempt.table_games_record)
    stream.referee.referee_play_table = timed_stream(referee.referee_play_table)
    try:
        staff = User.objects.create_user("split-bench", is_staff=True)
        bots = [accounts.bot_create(owner=staff, name=f"house-{i}-{kind}", house_bot=kind)[0]
                for i, kind in enumerate(pipeline_bench.HOUSE)]
        rows: list[dict[str, float]] = []
        for run in range(2):  # the first is the warm-up
            tournament = pipeline_bench.round_robin(staff, bots, name=f"split {run}", cycles=args.cycles)
            Tournament.objects.filter(pk=tournament.pk).update(status=Tournament.Status.SCHEDULED)
            table_ids = services.tournament_schedule(tournament_id=tournament.pk)
            for table_id in table_ids:
                phases.clear()
                c0, t0 = time.process_time(), time.perf_counter()
                tasks.table_play_task.apply(args=(table_id,))
                total = time.perf_counter() - t0
                phases["worker CPU"] = time.process_time() - c0
                phases["total"] = total
                if run:
                    rows.append(dict(phases))
            games = Game.objects.filter(table__tournament=tournament).count()
            assert games == 4 * len(table_ids), (games, len(table_ids))
        names = ["plan", "route", "first game", "rest of play", "record", "other", "total", "worker CPU"]
        for row in rows:
            row["other"] = row["total"] - sum(row.get(n, 0.0) for n in names[:5])
        print(f"\n{len(rows)} tables of 4 games, one after another (table_play_task inline; load {os.getloadavg()[0]:.1f})\n")
        print("| per table, ms | median | mean | share of the wall (mean) |")
        print("| --- | ---: | ---: | ---: |")
        mean_total = statistics.mean(r["total"] for r in rows)
        for name in names:
            values = [1000 * r.get(name, 0.0) for r in rows]
            share = "" if name in ("total", "worker CPU") else f"{100 * statistics.mean(values) / (1000 * mean_total):.0f} %"
            print(f"| {name} | {statistics.median(values):.1f} | {statistics.mean(values):.1f} | {share} |")
        if args.rounds:
            side_by_side(args, staff, bots)
    finally:
        proc.stop()


def side_by_side(args, staff, bots) -> None:
    """The same round robin played inline, alternating: a task per table, one after
    another, and one group task of all its tables (`tables_play_task`, TIENLEN_GROUP_THREADS
    at a time): games/s of each, wall clock and this process's CPU."""
    from django.conf import settings

    from tournaments import tasks
    from tournaments.models import Game, Tournament
    from tournaments.services import tournaments as services

    rates: dict[str, list[float]] = {"one after another": [], "a group": []}
    cpu: dict[str, list[float]] = {k: [] for k in rates}
    for r in range(args.rounds):
        for kind in rates:
            tournament = pipeline_bench.round_robin(staff, bots, name=f"side {r} {kind}", cycles=args.cycles)
            Tournament.objects.filter(pk=tournament.pk).update(status=Tournament.Status.SCHEDULED)
            table_ids = services.tournament_schedule(tournament_id=tournament.pk)
            c0, t0 = time.process_time(), time.perf_counter()
            if kind == "a group":
                tasks.tables_play_task.apply(args=(table_ids,))
            else:
                for table_id in table_ids:
                    tasks.table_play_task.apply(args=(table_id,))
            seconds, spent = time.perf_counter() - t0, time.process_time() - c0
            games = Game.objects.filter(table__tournament=tournament).count()
            assert games == 4 * len(table_ids), (kind, games, len(table_ids))
            assert Tournament.objects.get(pk=tournament.pk).status == Tournament.Status.FINISHED
            rates[kind].append(games / seconds)
            cpu[kind].append(1000 * spent / games)
            print(f"  round {r + 1}, {kind}: {games / seconds:.1f} games/s, worker CPU {1000 * spent / games:.1f} ms a "
                  f"game (load {os.getloadavg()[0]:.1f})", flush=True)
    at_once = getattr(settings, "TIENLEN_GROUP_THREADS", 2)
    print(f"\nside by side, {args.rounds} alternating rounds (a group: {at_once} tables at a time)\n")
    print("| tables | games/s | worker CPU ms a game | group / one after another, per round |")
    print("| --- | ---: | ---: | ---: |")
    ratios = [g / o for o, g in zip(rates["one after another"], rates["a group"], strict=True)]
    for kind in rates:
        lo, hi = min(rates[kind]), max(rates[kind])
        cell = f"{min(ratios):.2f}–{max(ratios):.2f} (median {statistics.median(ratios):.2f})" if kind == "a group" else ""
        print(f"| {kind} | {lo:.1f}–{hi:.1f} | {min(cpu[kind]):.1f}–{max(cpu[kind]):.1f} | {cell} |")


if __name__ == "__main__":
    main()
