"""Deal formats side by side: games needed to separate heuristic from greedy, and leaks.

    .venv/bin/python benchmarks/deal_formats_bench.py --replicates 300 --jobs 2

An 8-bot round robin at tables of 4 (default lineup: 3 x heuristic, 3 x greedy,
2 x random; the platform's schedule: 14 tables in 7 rounds, every pair meets 3 times,
4 games per table, so 56 games) is played many times over ("replicates", each with fresh
deals), once per deal format:

- independent: every game its own deal;
- rotation: each table plays one deal in its 4 seat rotations (the old default; leaks);
- field: the tables of a round (a deal group) play the same 4 deals seat for seat, each
  bot once per deal — among isolated bots only: at most one table of a group seats remote
  bots (tournaments.scheduling.deal_groups: remote bots may pool what they see), so the field format is played three
  times, with the same bots marked all house (isolated), half remote (every other entrant
  of the lineup) and all remote (every table its own deals: independent deals in effect).

Each format's games are then scored by every estimator that applies to it:

- raw: points per game;
- luck-adjusted: points - baseline(deal, seat), the baseline a simulation of the deal by
  house bots (tournaments.scoring.baseline: greedy x4 and heuristic x4, averaged; also
  greedy x4 alone, the cheapest);
- field duplicate: points - mean points of the same seat on the same deal at the group's
  other tables (duplicate bridge's comparison);
- field duplicate + baseline: points - the mean of those counterparts' points (each less
  its own adjusted mean, the correction for counterparts' strength) and the baseline (the
  platform's luck-adjusted score, tournaments.scoring.adjusted); "uncorrected": the same
  without the correction (the estimator the platform used before the correction).

For every heuristic entrant h and greedy entrant g, D = mean score per game of h - of g
in one tournament. Its spread over replicates, sd(D), is what a tournament of 56 games
can tell; the games needed for a 95% interval to exclude zero are
56 x (1.96 sd(D) / mean(D))^2 (the mean is each estimator's own: duplicate scores are
on a smaller scale). sd(D)^2 is averaged over the 9 (h, g) pairs. The ratio to
independent raw is what a format buys; its 95% interval comes from a bootstrap over
replicates. Formats share deals where they can (field and rotation use the deals of
independent's tables), which makes their ratios more precise, not biased.

Exposure: for every format, how many times a bot was dealt into a deal it had already
played (in any seat). A format is fair to bots with memory only if this is zero.
"""

from __future__ import annotations

import argparse
import math
import os
import random
import statistics
import sys
import time
import zlib
from collections import Counter, defaultdict
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tournaments.scheduling.round_robin import round_robin_schedule
from tournaments.scoring.adjusted import GameRow, adjusted_scores
from tournaments.scoring.baseline import deal_baseline, house_bot_class, play_deal

FIELDS = {"field": "all house", "field/half remote": "half remote", "field/all remote": "all remote"}
FORMATS = ("independent", "rotation", *FIELDS)


@dataclass(frozen=True)
class Played:
    """One game: the deal, its group (tables that share deals), entrant per seat, points."""

    seed: str
    group: int
    entrants: tuple[int, ...]
    points: tuple[int, ...]


def isolated_for(fmt: str, n: int) -> tuple[bool, ...]:
    """Which entrants are isolated (house bots) in a field variant; the bots play alike."""
    field = FIELDS.get(fmt, "all house")
    if field == "all remote":
        return (False,) * n
    if field == "half remote":
        return tuple(i % 2 == 1 for i in range(n))
    return (True,) * n


@lru_cache(maxsize=8)
def schedule_for(n: int, seats: int, field: bool, isolated: tuple[bool, ...]):
    return round_robin_schedule(n, seats, field=field, isolated=isolated if field else None)


def play_tournament(fmt: str, specs: list[str], seats: int, games: int, replicate: int) -> list[Played]:
    n = len(specs)
    field = fmt in FIELDS
    schedule = schedule_for(n, seats, field, isolated_for(fmt, n))
    out = []
    for t_no, table in enumerate(schedule.tables):
        for i in range(games):
            # Deals: independent's own per table and game; field's per group and game (the
            # seeds of the group's first table); rotation's one per table, rotated.
            if field:
                first = min(j for j, t in enumerate(schedule.tables) if t.deal_group == table.deal_group)
                seed = f"r{replicate}/t{first}/g{i}"
                seating = table.seats
            elif fmt == "rotation":
                seed = f"r{replicate}/t{t_no}/g0"
                seating = tuple(table.seats[(s + i) % seats] for s in range(seats))
            else:
                seed = f"r{replicate}/t{t_no}/g{i}"
                seating = table.seats
            random.seed(zlib.crc32(f"{'field' if field else fmt}/{replicate}/{t_no}/{i}".encode()))
            bots = [house_bot_class(specs[e])() for e in seating]
            points = play_deal(seed, bots)
            out.append(Played(seed, table.deal_group if field else -1 - t_no, seating, tuple(points)))
    return out


def exposure(games: list[Played]) -> tuple[int, int]:
    """(times a bot was dealt a deal it had already played, most plays of one deal by one bot)."""
    seen: dict[tuple[int, str], int] = defaultdict(int)
    for g in games:
        for e in g.entrants:
            seen[(e, g.seed)] += 1
    repeats = sum(c - 1 for c in seen.values())
    return repeats, max(seen.values())


def scores(games: list[Played], estimator: str, baselines: dict[str, dict[str, list[float]]]) -> list[tuple[tuple[int, ...], list[float]]]:
    """Per game: entrants and each seat's score under the estimator, through the platform's
    own scoring (tournaments.scoring.adjusted)."""
    if estimator == "raw":
        return [(g.entrants, [float(p) for p in g.points]) for g in games]
    kind = {"field duplicate": None, "luck-adjusted: greedy": "greedy"}.get(estimator, "greedy+heuristic")
    # Counterparts only count in field duplicates: elsewhere every game has its own deal key.
    field = estimator.startswith("field duplicate")
    rows = [
        GameRow(
            deal=(g.group, g.seed) if field else (id(g),),
            entrants=g.entrants,
            points=g.points,
            baseline=baselines[kind][g.seed] if kind is not None and estimator != "field duplicate" else None,
        )
        for g in games
    ]
    corrected = "uncorrected" not in estimator
    return [(g.entrants, row) for g, row in zip(games, adjusted_scores(rows, correct_counterparts=corrected), strict=True)]


def differences(scored, n: int, better: list[int], worse: list[int]) -> dict[tuple[int, int], float]:
    total = [0.0] * n
    count = [0] * n
    for entrants, values in scored:
        for e, v in zip(entrants, values, strict=True):
            total[e] += v
            count[e] += 1
    mean = [total[e] / count[e] for e in range(n)]
    return {(h, g): mean[h] - mean[g] for h in better for g in worse}


ESTIMATORS = {
    "independent": ["raw", "luck-adjusted: greedy", "luck-adjusted: greedy+heuristic"],
    "rotation": ["raw"],
    **{fmt: ["raw", "luck-adjusted: greedy+heuristic", "field duplicate + baseline (uncorrected)",
             "field duplicate + baseline"] for fmt in FIELDS},
}


def replicate_job(args: tuple[int, list[str], int, int]) -> dict:
    replicate, specs, seats, games = args
    n = len(specs)
    better = [i for i, s in enumerate(specs) if s == "heuristic"]
    worse = [i for i, s in enumerate(specs) if s == "greedy"]
    played = {fmt: play_tournament(fmt, specs, seats, games, replicate) for fmt in FORMATS}
    seeds = sorted({g.seed for fmt in FORMATS for g in played[fmt]})
    baselines: dict[str, dict[str, list[float]]] = {"greedy": {}, "greedy+heuristic": {}}
    cost = {"greedy": 0.0, "greedy+heuristic": 0.0}
    for seed in seeds:
        t0 = time.process_time()
        baselines["greedy"][seed] = deal_baseline(seed, seats, bots=("greedy",))
        t1 = time.process_time()
        baselines["greedy+heuristic"][seed] = deal_baseline(seed, seats)
        t2 = time.process_time()
        cost["greedy"] += t1 - t0
        cost["greedy+heuristic"] += t2 - t1
    result = {"diffs": {}, "exposure": {}, "games": {}, "baseline_cpu_s": cost, "deals": len(seeds)}
    for fmt in FORMATS:
        result["exposure"][fmt] = exposure(played[fmt])
        result["games"][fmt] = len(played[fmt])
        for est in ESTIMATORS[fmt]:
            result["diffs"][(fmt, est)] = differences(scores(played[fmt], est, baselines), n, better, worse)
    return result


def summarise(results: list[dict], key: tuple[str, str], sample: list[int]) -> tuple[float, float]:
    """(mean D, mean over pairs of var D) over the replicates in `sample`."""
    pairs = list(results[0]["diffs"][key])
    mean = statistics.fmean(results[i]["diffs"][key][p] for i in sample for p in pairs)
    var = statistics.fmean(
        statistics.variance([results[i]["diffs"][key][p] for i in sample]) for p in pairs
    )
    return mean, var


def needed(games: int, mean: float, var: float) -> float:
    return games * (1.959964**2) * var / (mean * mean) if mean else math.inf


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--replicates", type=int, default=300, help="tournaments per format (default 300)")
    ap.add_argument("--lineup", default="heuristic*3,greedy*3,random*2")
    ap.add_argument("--games-per-table", type=int, default=4)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--bootstrap", type=int, default=400)
    ap.add_argument("--quick", action="store_true", help="40 replicates (a smoke run: wide intervals)")
    args = ap.parse_args()
    if args.quick:
        args.replicates = 40
    specs: list[str] = []
    for part in args.lineup.split(","):
        name, _, count = part.partition("*")
        specs += [name.strip()] * int(count or 1)
    seats = 4
    if "heuristic" not in specs or "greedy" not in specs:
        ap.error("the lineup needs at least one heuristic and one greedy bot")
    schedule = round_robin_schedule(len(specs), seats, field=True, isolated=[True] * len(specs))
    print(
        f"{len(specs)}-bot round robin ({', '.join(specs)}), tables of {seats}: {schedule.design}, "
        f"{len(schedule.tables)} tables x {args.games_per_table} games; {args.replicates} replicates"
    )
    for fmt, label in FIELDS.items():
        planned = schedule_for(len(specs), seats, True, isolated_for(fmt, len(specs)))
        sizes = Counter(t.deal_group for t in planned.tables)
        shared = sum(v for v in sizes.values() if v > 1)
        print(f"  {fmt} ({label}): {len(sizes)} deal groups, {shared} of {len(planned.tables)} tables share their deals")
    started = time.perf_counter()
    jobs = [(r, specs, seats, args.games_per_table) for r in range(args.replicates)]
    if args.jobs > 1:
        with ProcessPoolExecutor(max_workers=min(args.jobs, os.cpu_count() or 1)) as pool:
            results = list(pool.map(replicate_job, jobs, chunksize=4))
    else:
        results = [replicate_job(j) for j in jobs]
    elapsed = time.perf_counter() - started
    everyone = list(range(len(results)))
    rng = random.Random(7)
    samples = [[rng.randrange(len(results)) for _ in everyone] for _ in range(args.bootstrap)]
    reference = ("independent", "raw")
    rows = []
    for fmt in FORMATS:
        for est in ESTIMATORS[fmt]:
            key = (fmt, est)
            games = results[0]["games"][fmt]
            mean, var = summarise(results, key, everyone)
            need = needed(games, mean, var)
            ratios = []
            for sample in samples:
                m, v = summarise(results, key, sample)
                m0, v0 = summarise(results, reference, sample)
                ratios.append(needed(games, m, v) / needed(games, m0, v0))
            ratios.sort()
            low, high = ratios[int(0.025 * len(ratios))], ratios[int(0.975 * len(ratios)) - 1]
            repeats, most = results[0]["exposure"][fmt]
            repeats = sum(r["exposure"][fmt][0] for r in results)
            most = max(r["exposure"][fmt][1] for r in results)
            rows.append((fmt, est, mean, math.sqrt(var), need, low, high, repeats, most))
    base_need = rows[0][4]
    print()
    print(
        f"| format | score | mean D | sd D ({results[0]['games']['independent']} games) | games to separate "
        "| vs independent raw (95% CI) | repeated deals | max plays of a deal by a bot |"
    )
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for fmt, est, mean, sd, need, low, high, repeats, most in rows:
        print(
            f"| {fmt} | {est} | {mean:+.3f} | {sd:.3f} | {need:.0f} | {need / base_need:.2f} "
            f"[{low:.2f}, {high:.2f}] | {repeats} | {most} |"
        )
    deals = sum(r["deals"] for r in results)
    cost = {k: sum(r["baseline_cpu_s"][k] for r in results) for k in ("greedy", "greedy+heuristic")}
    print()
    print(
        f"baseline CPU per deal: greedy x4 {1000 * cost['greedy'] / deals:.2f} ms, "
        f"greedy x4 + heuristic x4 {1000 * cost['greedy+heuristic'] / deals:.2f} ms ({deals} deals)"
    )
    print(f"total time {elapsed:.0f} s")


if __name__ == "__main__":
    main()
