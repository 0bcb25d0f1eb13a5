"""`make bench`: every benchmark script in this folder, one after another, each printing its
own table; a summary of what ran, how long and whether it failed closes the run.

    .venv/bin/python benchmarks/run_all.py            # full runs (the recorded numbers)
    .venv/bin/python benchmarks/run_all.py --quick    # short runs: does every script work?
    .venv/bin/python benchmarks/run_all.py --only web_bench,middleware_bench

Scripts are found by name (`*_bench.py` and `example_bots_strength.py`), so a new benchmark
runs here without being listed; `QUICK` names the short-run flags of those that have them.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent

QUICK: dict[str, list[str]] = {
    "arena_bench": ["--games", "200", "--blocks", "6"],
    "connections_bench": ["--bots", "1000", "--clients", "2", "--baseline-s", "5", "--idle-s", "5"],
    "deal_formats_bench": ["--quick"],
    "determinize_bench": ["--positions", "5", "--samples", "50"],
    "engine_bench": ["--quick"],
    "env_bench": ["--games", "20"],
    "example_bots_strength": ["--games", "400"],
    "flood_bench": ["--quick"],
    "hosting_bench": ["--quick"],
    "house_bench": ["--seconds", "4"],
    "middleware_bench": ["--rounds", "3", "--requests", "100"],
    "pipeline_bench": ["--rounds", "1", "--cycles", "1"],
    "referee_bench": ["--quick"],
    "replay_read_bench": ["--quick"],
    "sdk_client_bench": ["--quick"],
    "search_bench": ["--quick"],
    "tournament_bench": ["--rounds", "1", "--recompute-games", "10000", "--record-rounds", "1"],
    "view_encoder_bench": ["--quick"],
    "web_bench": ["--games", "2000", "--repeat", "5"],
}


def scripts() -> list[str]:
    names = sorted(p.stem for p in HERE.glob("*_bench.py"))
    if (HERE / "example_bots_strength.py").exists():
        names.append("example_bots_strength")
    return names


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="each script's short run")
    parser.add_argument("--only", default="", help="comma-separated script names")
    args = parser.parse_args()
    chosen = scripts()
    if args.only:
        wanted = [n.strip().removesuffix(".py") for n in args.only.split(",") if n.strip()]
        unknown = sorted(set(wanted) - set(chosen))
        if unknown:
            parser.error(f"--only: no benchmark {', '.join(unknown)} (known: {', '.join(chosen)})")
        chosen = wanted
    summary = []
    for name in chosen:
        argv = [sys.executable, str(HERE / f"{name}.py"), *(QUICK.get(name, []) if args.quick else [])]
        print(f"\n===== {name} {' '.join(argv[2:])}".rstrip(), flush=True)
        start = time.monotonic()
        code = subprocess.call(argv)
        summary.append((name, code, time.monotonic() - start))
    print("\n| benchmark | exit | seconds |\n| --- | ---: | ---: |")
    for name, code, seconds in summary:
        print(f"| {name} | {code} | {seconds:.0f} |")
    return 1 if any(code for _, code, _ in summary) else 0


if __name__ == "__main__":
    sys.exit(main())
