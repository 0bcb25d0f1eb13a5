"""Counterparts: do identical bots get the same luck-adjusted score?

    .venv/bin/python benchmarks/counterpart_bias_bench.py --tournaments 200 --jobs 2

A round robin of house bots at tables of 4 with the platform's schedule (field duplicates,
every entrant isolated, so each round is a deal group) is played many times with fresh
deals by the engine (tournaments.scoring.baseline.play_deal), and scored by the
platform's own code (tournaments.scoring.adjusted) twice: uncorrected (points minus the
mean of the counterparts' points and the baseline: the estimator before the correction) and
corrected for the counterparts' strength (the platform's now). For every pair of
identical bots (same kind), D = the difference of their mean adjusted scores in one
tournament; over the tournaments its mean and standard error say whether the schedule
and the scoring favour one of two identical bots (it should be 0).

Also printed: per-pair counterpart counts of the design (tables at which two entrants
held the same seat of the same deal), for 8, 12 and 16 entrants.

`--lineup` (default: the 8-bot field where the design's counterparts are most uneven for
two identical bots: greedy x 4, random x 4), `--games-per-table`, `--baseline`
(comma-separated house bots of the baseline; default greedy,heuristic as the platform).
"""

from __future__ import annotations

import argparse
import itertools
import math
import os
import random
import statistics
import sys
import time
import zlib
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tournaments.scheduling.round_robin import round_robin_schedule
from tournaments.scoring.adjusted import GameRow, adjusted_standings
from tournaments.scoring.baseline import deal_baseline, house_bot_class, play_deal


def schedule_groups(n: int) -> list[list[tuple[int, ...]]]:
    schedule = round_robin_schedule(n, 4, field=True, isolated=[True] * n)
    groups: dict[int, list[tuple[int, ...]]] = {}
    for t in schedule.tables:
        groups.setdefault(t.deal_group, []).append(t.seats)
    return list(groups.values())


def counterpart_counts(n: int) -> Counter:
    counts: Counter = Counter()
    for tables in schedule_groups(n):
        for a, b in itertools.combinations(tables, 2):
            for x, y in zip(a, b, strict=False):
                counts[tuple(sorted((x, y)))] += 1
    return Counter(counts.get((a, b), 0) for a in range(n) for b in range(a + 1, n))


def one_tournament(args: tuple[int, list[str], int, tuple[str, ...]]) -> dict[str, dict[tuple[int, int], float]]:
    replicate, specs, games, baseline_bots = args
    rows = []
    for gid, tables in enumerate(schedule_groups(len(specs))):
        for i in range(games):
            seed = f"bias/{replicate}/{gid}/{i}"
            base = deal_baseline(seed, 4, bots=baseline_bots)
            for t_no, table in enumerate(tables):
                random.seed(zlib.crc32(f"{replicate}/{gid}/{t_no}/{i}".encode()))
                points = play_deal(seed, [house_bot_class(specs[e])() for e in table])
                rows.append(GameRow(deal=(gid, i), entrants=table, points=points, baseline=base))
    pairs = [(a, b) for a, b in itertools.combinations(range(len(specs)), 2) if specs[a] == specs[b]]
    out = {}
    for name, corrected in (("uncorrected", False), ("corrected", True)):
        means = {r.entrant: r.adjusted_mean for r in adjusted_standings(rows, correct_counterparts=corrected)}
        out[name] = {p: means[p[0]] - means[p[1]] for p in pairs}
    raw = {}
    for g in rows:
        for e, p in zip(g.entrants, g.points, strict=True):
            raw.setdefault(e, []).append(p)
    out["raw"] = {p: statistics.fmean(raw[p[0]]) - statistics.fmean(raw[p[1]]) for p in pairs}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tournaments", type=int, default=200)
    ap.add_argument("--lineup", default="greedy*4,random*4")
    ap.add_argument("--games-per-table", type=int, default=6)
    ap.add_argument("--baseline", default="greedy,heuristic")
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args()
    specs: list[str] = []
    for part in args.lineup.split(","):
        name, _, count = part.partition("*")
        specs += [name.strip()] * int(count or 1)
    baseline = tuple(b.strip() for b in args.baseline.split(",") if b.strip())
    for n in (8, 12, 16):
        counts = counterpart_counts(n)
        text = ", ".join(f"{c}: {counts[c]}" for c in sorted(counts))
        print(f"counterpart tables per pair, {n} entrants: {{{text}}} (pairs)")
    print(f"lineup {', '.join(f'{i}:{s}' for i, s in enumerate(specs))}; {args.games_per_table} games a table; "
          f"baseline {'+'.join(baseline)}; {args.tournaments} tournaments")
    started = time.perf_counter()
    jobs = [(r, specs, args.games_per_table, baseline) for r in range(args.tournaments)]
    if args.jobs > 1:
        with ProcessPoolExecutor(max_workers=min(args.jobs, os.cpu_count() or 1)) as pool:
            results = list(pool.map(one_tournament, jobs, chunksize=2))
    else:
        results = [one_tournament(j) for j in jobs]
    print()
    print("| identical pair | raw D (z) | uncorrected adjusted D (z) | corrected adjusted D (z) |")
    print("| --- | ---: | ---: | ---: |")
    worst = {"raw": 0.0, "uncorrected": 0.0, "corrected": 0.0}
    for pair in results[0]["corrected"]:
        cells = []
        for name in ("raw", "uncorrected", "corrected"):
            values = [r[name][pair] for r in results]
            mean = statistics.fmean(values)
            se = statistics.stdev(values) / math.sqrt(len(values))
            worst[name] = max(worst[name], abs(mean / se))
            cells.append(f"{mean:+.3f} ± {1.96 * se:.3f} ({mean / se:+.1f})")
        print(f"| {specs[pair[0]]} {pair[0]} − {pair[1]} | " + " | ".join(cells) + " |")
    print()
    print("largest |z|: " + ", ".join(f"{k} {v:.1f}" for k, v in worst.items()))
    print(f"total time {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
