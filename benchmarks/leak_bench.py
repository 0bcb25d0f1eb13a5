"""Where a worker's and a referee's memory goes as they play table after table (issue 26).

The 20-minute soak (benchmarks/soak.py) saw the referees' RSS rise ~2 MB a minute and the
workers' 6-8 MB a minute for the whole run. This finds out what grows, in two parts:

- `stack`: a real referee (`RefereeThread`, the platform's token store) and a real Celery
  worker (thread pool, one thread) in this process, with DEBUG on as in development,
  play `--rounds` round robins of 8 house bots (14 tables of 4 games each) started as the
  API starts one, baselines included. After each round: RSS, tracemalloc's traced memory,
  the referee's per-table structures and the house bots' caches; then the allocation
  sites that grew most from the end of the first round (warm-up) to the last, by line.
  `--without-reset` leaves the query logs as they were before the fix (the worker's
  connections log every query, task after task) to show the difference.
- `caches`: the heuristic house bot's capped caches (`plan_cost`, `_shape`) at each size
  of `--plan-cost` x `--shape`, one child process each, side by side: deal baselines
  (greedy x4 then heuristic x4 on a deal, what the analysis task runs) in blocks, CPU
  seconds of each block (process time: what a smaller cache costs), RSS, hit rates.

    DATABASE_URL=postgres://... CELERY_BROKER_URL=redis://... \\
        .venv/bin/python benchmarks/leak_bench.py [--rounds 4] [--without-reset] [--top 12]
    .venv/bin/python benchmarks/leak_bench.py caches [--deals 2400] [--plan-cost 200000,100000]
        [--shape 65536,16384]

`stack` empties and migrates the database and flushes the Redis DB it is given
(benchmarks/bench_db.py): give it ones of its own (`CELERY_BROKER_URL=memory://` needs no
Redis: the worker is in this process).
"""

from __future__ import annotations

import argparse
import functools
import gc
import json
import os
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "platform"), str(ROOT / "benchmarks")]

HOUSE = ["random", "greedy", "heuristic", "greedy", "random", "heuristic", "greedy", "heuristic"]


def rss_mb() -> float:
    from soak import tree_rss_mb

    return tree_rss_mb(os.getpid()) or 0.0


def house_caches() -> dict[str, int]:
    import bots_sdk.examples.heuristic as heuristic
    from bots_sdk.rules import scoring

    return {"plan_cost": heuristic.plan_cost.cache_info().currsize,
            "_shape": heuristic._shape.cache_info().currsize,
            "scoring._stuck": scoring._stuck.cache_info().currsize}


# --- stack: a real referee and worker in this process ------------------------------------------


def stack(args: argparse.Namespace) -> None:
    db_url, broker = os.environ.get("DATABASE_URL", ""), os.environ.get("CELERY_BROKER_URL", "")
    if not db_url.startswith("postgres") or not broker.startswith(("redis", "memory")):
        sys.exit("leak_bench stack needs DATABASE_URL=postgres://... and CELERY_BROKER_URL=redis://... "
                 "(or memory://, the worker being in this process)")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tienlen_site.settings")
    os.environ.setdefault("DJANGO_DEBUG", "1")
    from bench_db import fresh_database

    fresh_database(db_url, broker)
    from django.conf import settings
    from django.contrib.auth.models import User
    from django.db import reset_queries

    import tournaments.play.attempt
    import tournaments.tasks
    from referee_service.server import RefereeThread
    from tests.celery_helpers import isolated_celery_worker
    from tournaments.models import Deal, Tournament
    from tournaments.services import accounts
    from tournaments.services import tournaments as services
    from tournaments.token_store import DjangoTokenStore

    if args.without_reset:  # as before the fix: a connection's query log kept from task to task
        tournaments.tasks.queries_forgotten = lambda: None
        tournaments.play.attempt.reset_queries = lambda: None
    staff = User.objects.create_user("leak-bench", is_staff=True)
    bots = [accounts.bot_create(owner=staff, name=f"house-{i}-{kind}", house_bot=kind)[0]
            for i, kind in enumerate(HOUSE)]
    tracemalloc.start(args.frames)
    referee = RefereeThread(DjangoTokenStore(), organizer_token="leak-bench-organizer").start()
    settings.REFEREE_TARGET, settings.REFEREE_ORGANIZER_TOKEN = referee.target, "leak-bench-organizer"
    registry = referee.referee.registry
    rows, first = [], None
    t0 = time.perf_counter()
    try:
        with isolated_celery_worker(concurrency=1):
            for number in range(args.rounds):
                tournament = services.tournament_create(
                    organiser=staff, name=f"leak {number}", format="round_robin", seats_per_table=4,
                    allow_same_owner=True)
                for bot in bots:
                    services.tournament_entrant_add(tournament=tournament, bot=bot)
                services.tournament_start(tournament=tournament)
                deadline = time.monotonic() + 900
                while (Tournament.objects.filter(pk=tournament.pk).values_list("status", flat=True)[0]
                       != Tournament.Status.FINISHED
                       or Deal.objects.filter(tournament=tournament, baseline__isnull=True).exists()):
                    if time.monotonic() > deadline:
                        raise RuntimeError(f"round {number + 1} did not finish")
                    reset_queries()  # this thread's own polling, logged too with DEBUG on
                    time.sleep(0.1)
                gc.collect()
                traced, _peak = tracemalloc.get_traced_memory()
                rows.append({"round": number + 1, "s": time.perf_counter() - t0, "rss": rss_mb(),
                             "traced": traced / 1e6, "tables": len(registry.tables),
                             "offsets": len(registry.move_id_bases), **house_caches()})
                if first is None:
                    first = tracemalloc.take_snapshot()
                print(json.dumps(rows[-1], default=lambda v: round(v, 1)), flush=True)
            last = tracemalloc.take_snapshot()
    finally:
        referee.stop()
        tracemalloc.stop()
    print()
    print(f"{args.rounds} round robins of 8 house bots (14 tables x 4 games each), one worker thread and "
          f"one referee in this process, DEBUG on, query logs {'kept (before the fix)' if args.without_reset else 'emptied before each task'}")
    print()
    print("| after round | s | RSS MB | traced MB | referee tables | remembered offsets | plan_cost | _shape | _stuck |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for r in rows:
        print(f"| {r['round']} | {r['s']:.0f} | {r['rss']:.1f} | {r['traced']:.1f} | {r['tables']} | {r['offsets']} | "
              f"{r['plan_cost']:,} | {r['_shape']:,} | {r['scoring._stuck']:,} |")
    if first is None or len(rows) < 2:
        return
    keep = [tracemalloc.Filter(False, tracemalloc.__file__), tracemalloc.Filter(False, "<frozen importlib._bootstrap*>")]
    growth = last.filter_traces(keep).compare_to(first.filter_traces(keep), "lineno")
    print()
    print(f"Top {args.top} allocation sites by growth from the end of round 1 to the end of round {rows[-1]['round']}:")
    print()
    print("| site | grew kB | now kB | blocks grew |")
    print("| --- | ---: | ---: | ---: |")
    root = str(ROOT) + "/"
    for stat in growth[:args.top]:
        frame = stat.traceback[0]
        where = f"{frame.filename.replace(root, '').split('site-packages/')[-1]}:{frame.lineno}"
        print(f"| {where} | {stat.size_diff / 1e3:+,.0f} | {stat.size / 1e3:,.0f} | {stat.count_diff:+,} |")


# --- caches: the heuristic's cache sizes against CPU --------------------------------------------


def caches_child(plan_cost: int, shape: int, deals: int, blocks: int) -> dict:
    """One configuration, in a process of its own (a cache's size is fixed at import)."""
    import bots_sdk.examples.heuristic as heuristic

    heuristic.plan_cost = functools.lru_cache(maxsize=plan_cost)(heuristic.plan_cost.__wrapped__)
    heuristic._shape = functools.lru_cache(maxsize=shape)(heuristic._shape.__wrapped__)
    from tournaments.scoring.baseline import deal_baseline

    out = {"plan_cost": plan_cost, "shape": shape, "blocks": []}
    size = deals // blocks
    for block in range(blocks):
        start = time.process_time()
        for i in range(block * size, (block + 1) * size):
            deal_baseline(f"leak-bench-{i}", 4)
        out["blocks"].append((round(time.process_time() - start, 2), round(rss_mb(), 1)))
    for name in ("plan_cost", "_shape"):
        info = getattr(heuristic, name).cache_info()
        out[f"{name}_hits"] = info.hits / max(1, info.hits + info.misses)
    return out


def caches(args: argparse.Namespace) -> None:
    configs = [(p, s) for p in args.plan_cost for s in args.shape]
    procs = [subprocess.Popen([sys.executable, __file__, "caches-child", str(p), str(s), str(args.deals),
                               str(args.blocks)], stdout=subprocess.PIPE, text=True) for p, s in configs]
    results = [json.loads(proc.communicate()[0].splitlines()[-1]) for proc in procs]
    size = args.deals // args.blocks
    print(f"Deal baselines (greedy x4 + heuristic x4), {args.deals} deals in {args.blocks} blocks of {size}; "
          f"{len(configs)} configurations side by side, one process each")
    print()
    print("| plan_cost cap | _shape cap | CPU s per block | CPU s, 2nd half | RSS MB per block | plan_cost hits | _shape hits |")
    print("| ---: | ---: | --- | ---: | --- | ---: | ---: |")
    for r in results:
        cpu = [b[0] for b in r["blocks"]]
        print(f"| {r['plan_cost']:,} | {r['shape']:,} | {' '.join(f'{c:.2f}' for c in cpu)} | "
              f"{sum(cpu[len(cpu) // 2:]):.2f} | {' '.join(f'{b[1]:.0f}' for b in r['blocks'])} | "
              f"{r['plan_cost_hits']:.1%} | {r['_shape_hits']:.1%} |")


def ints(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x]


def main() -> None:
    if sys.argv[1:2] == ["caches-child"]:
        print(json.dumps(caches_child(*map(int, sys.argv[2:6]))))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("part", nargs="?", choices=("stack", "caches"), default="stack")
    parser.add_argument("--rounds", type=int, default=4, help="stack: round robins of 14 tables (4)")
    parser.add_argument("--without-reset", action="store_true",
                        help="stack: keep each connection's query log from task to task (before the fix)")
    parser.add_argument("--top", type=int, default=12, help="stack: allocation sites shown")
    parser.add_argument("--frames", type=int, default=1, help="stack: tracemalloc frames kept")
    parser.add_argument("--deals", type=int, default=2400, help="caches: deals per configuration")
    parser.add_argument("--blocks", type=int, default=6, help="caches: blocks of deals")
    parser.add_argument("--plan-cost", type=ints, default=[200_000, 100_000], help="caches: plan_cost caps")
    parser.add_argument("--shape", type=ints, default=[65_536, 16_384], help="caches: _shape caps")
    args = parser.parse_args()
    (caches if args.part == "caches" else stack)(args)


if __name__ == "__main__":
    main()
