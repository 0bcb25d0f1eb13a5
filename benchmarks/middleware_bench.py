"""What the site's security layers cost per request: the Content-Security-Policy header
(django-csp) and the sign-in throttle's middleware (django-axes), against the same requests
without them, interleaved in one run so machine load hits both alike.

Requests go through Django's test client (no network) on a small test database; the pages
are the cheapest ones (a tournament's progress.json, the home page, /api/v1/), where a
per-request cost shows most. Times are CPU time of this process (`time.process_time`), which
other work on the machine disturbs far less than wall time. The sign-in throttle works only when
someone signs in (one query per failed attempt).

    .venv/bin/python benchmarks/middleware_bench.py [--rounds 7] [--requests 300]
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

LAYERS = ("csp.middleware.CSPMiddleware", "axes.middleware.AxesMiddleware")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--requests", type=int, default=300)
    args = parser.parse_args()

    import django

    django.setup()
    from django.conf import settings
    from django.db import connection
    from django.test import Client
    from django.test.utils import override_settings, setup_test_environment

    setup_test_environment()
    old_name = connection.creation.create_test_db(verbosity=0)
    try:
        from tests.web.factories import make_world

        w = make_world(tables=2, games_per_table=2)
        pages = {
            "progress.json": f"/tournaments/{w.tournament.slug}/progress.json",
            "home": "/",
            "api root": "/api/v1/",
        }
        full = list(settings.MIDDLEWARE)
        variants = {
            "with": full,
            "without CSP": [m for m in full if m != LAYERS[0]],
            "without axes": [m for m in full if m != LAYERS[1]],
            "without": [m for m in full if m not in LAYERS],
        }
        results: dict[tuple[str, str], list[float]] = {}
        for round_no in range(args.rounds):
            order = list(variants.items())
            order = order if round_no % 2 == 0 else order[::-1]  # neither side always first
            for variant, middleware in order:
                with override_settings(MIDDLEWARE=middleware):
                    client = Client()  # a client loads the middleware once, on its first request
                    for name, path in pages.items():
                        client.get(path)  # warm
                        start = time.process_time()  # CPU: robust to other load
                        for _ in range(args.requests):
                            response = client.get(path, HTTP_ACCEPT="text/html")
                        per = (time.process_time() - start) / args.requests * 1000
                        assert response.status_code == 200
                        assert ("Content-Security-Policy" in response) == ("CSP" not in variant and variant != "without")
                        results.setdefault((name, variant), []).append(per)
        print(f"{args.rounds} rounds x {args.requests} requests per page and variant, "
              f"load average {os.getloadavg()[0]:.1f}\n")
        print("| page | both, median CPU ms | without CSP | without axes | without both | cost of both |")
        print("| --- | ---: | ---: | ---: | ---: | ---: |")
        for name in pages:
            m = {v: statistics.median(results[(name, v)]) for v in variants}
            a, b = m["with"], m["without"]
            print(f"| {name} | {a:.3f} | {m['without CSP']:.3f} | {m['without axes']:.3f} | {b:.3f} "
                  f"| {1000 * (a - b):+.0f} µs ({100 * (a / b - 1):+.1f} %) |")
    finally:
        connection.creation.destroy_test_db(old_name, verbosity=0)


if __name__ == "__main__":
    main()
