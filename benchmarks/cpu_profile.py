"""Run a module under cProfile timed by CPU (`time.process_time`), not the wall clock.

    python benchmarks/cpu_profile.py OUT -m celery -A tienlen_site.celery:app worker --pool solo ...

`python -m cProfile` times by the wall: a worker waiting on its referee's stream or on
PostgreSQL shows that wait as the cost of whatever was blocked, which hides where its CPU
goes. `pipeline_bench.py --profile` runs its worker through this.
"""

from __future__ import annotations

import cProfile
import runpy
import sys
import time


def main() -> None:
    out, flag, module, *rest = sys.argv[1:]
    if flag != "-m":
        sys.exit("usage: cpu_profile.py OUT -m MODULE [ARGS...]")
    sys.argv = [module, *rest]
    profiler = cProfile.Profile(time.process_time)
    profiler.enable()
    try:
        runpy.run_module(module, run_name="__main__", alter_sys=True)
    except SystemExit:
        pass
    finally:
        profiler.disable()
        profiler.dump_stats(out)


if __name__ == "__main__":
    main()
