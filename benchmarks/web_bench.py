"""Server time of the heaviest pages with a 10,000-game tournament (budget: 200 ms).

Builds a throwaway test database (SQLite by default, PostgreSQL when DATABASE_URL is set),
fills it with one round robin of 10,000 recorded games (16 bots, real engine replays) and a
leaderboard, then renders each page through Django's test client several times and prints
median and worst server time and the query count. The cache is cleared before every
render (the first view after new results), except for the row marked cached: the
tournament page as every later view sees it until the next deal is revealed. All pages are measured in one run so the
numbers compare with each other.

    .venv/bin/python benchmarks/web_bench.py [--games 10000] [--repeat 15] [--queries]

`--queries` also prints, per page, each query's median time in the database (timed around
the cursor call): what a change to one selector costs, without the rendering around it.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "platform")]
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tienlen_site.settings")

BUDGET_MS = 200.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=10_000)
    parser.add_argument("--bots", type=int, default=16)
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--queries", action="store_true", help="per page, each query's median database time")
    args = parser.parse_args()

    import django

    django.setup()
    from django.conf import settings
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    # no setup_test_environment(): its instrumented template rendering is not server time
    settings.ALLOWED_HOSTS = ["*"]
    # A database of its own, so a concurrent test run's test database is never clobbered.
    if connection.vendor != "sqlite":
        connection.settings_dict.setdefault("TEST", {})["NAME"] = "test_tienlen_webbench"
    old_name = connection.creation.create_test_db(verbosity=0, autoclobber=True, keepdb=False)
    try:
        from django.core.cache import cache

        from tests.web.factories import make_world

        t0 = time.perf_counter()
        games_per_table = 8
        w = make_world(bots=args.bots, tables=args.games // games_per_table, games_per_table=games_per_table, slug="bench-10k")
        build_s = time.perf_counter() - t0
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("ANALYZE")  # what autovacuum does to a live database
        client = Client()
        pages = [
            ("tournament (10k games)", f"/tournaments/{w.tournament.slug}/"),
            ("tournament, standings cached", f"/tournaments/{w.tournament.slug}/"),
            ("tournament games list", f"/tournaments/{w.tournament.slug}/games/"),
            ("progress.json", f"/tournaments/{w.tournament.slug}/progress.json"),
            ("leaderboard", f"/leaderboards/{w.pool.slug}/"),
            ("home", "/"),
            ("bot page", f"/bots/{w.bots[0].name}/"),
            ("game + replay viewer", f"/games/{w.games[-1].id}/"),
        ]
        print(f"database: {connection.vendor}; built {args.games} games for {args.bots} bots in {build_s:.1f} s\n")
        print(f"| page | queries | median ms | worst ms | under {BUDGET_MS:.0f} ms |")
        print("| --- | ---: | ---: | ---: | :---: |")
        per_query: dict[str, list[tuple[str, list[float]]]] = {}
        for name, url in pages:
            cache.clear()
            client.get(url)  # warm-up (template loading, connection)
            times = []
            timed: list[tuple[str, list[float]]] = []
            for _ in range(args.repeat):
                if "cached" not in name:  # a spectator's view after the first since the last reveal
                    cache.clear()
                calls: list[tuple[str, float]] = []

                def timer(execute, sql, params, many, context, calls=calls):
                    start = time.perf_counter()
                    try:
                        return execute(sql, params, many, context)
                    finally:
                        calls.append((sql, (time.perf_counter() - start) * 1000))

                with CaptureQueriesContext(connection) as ctx, connection.execute_wrapper(timer):
                    start = time.perf_counter()
                    response = client.get(url)
                    times.append((time.perf_counter() - start) * 1000)
                assert response.status_code == 200, (url, response.status_code)
                for i, (sql, ms) in enumerate(calls):
                    if i == len(timed):
                        timed.append((sql, []))
                    timed[i][1].append(ms)
            per_query[name] = timed
            med, worst = statistics.median(times), max(times)
            print(f"| {name} | {len(ctx)} | {med:.1f} | {worst:.1f} | {'yes' if med < BUDGET_MS else 'NO'} |")
        if args.queries:
            for name, timed in per_query.items():
                print(f"\n{name}: median ms per query")
                for sql, ms in timed:
                    print(f"  {statistics.median(ms):7.2f}  {' '.join(sql.split())[:110]}")
    finally:
        connection.creation.destroy_test_db(old_name, verbosity=0)


if __name__ == "__main__":
    main()
