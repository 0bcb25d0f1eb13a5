"""The collusion report's false-positive rate on honest fields, and its power against a
colluding pair, over many simulated tournaments.

    .venv/bin/python benchmarks/collusion_bench.py --replicates 200 --jobs 2

Each replicate is a round robin of the platform's schedule (tournaments.scheduling:
8 entrants at tables of 4, 14 tables in 7 rounds, every pair at 3 tables), played in the
engine with the example bots (no referee, no database: the same games the referee would
play, quickly), scored by the platform's own code: the luck baselines
(tournaments.scoring.baseline), the luck-adjusted scores and the report itself
(tournaments.scoring.collusion), every bot counted as a remote bot (all 28 pairs tested).

Scenarios (each with fresh deals per replicate):

- honest fields: `heuristic*3,greedy*3,random*2` (strengths far apart: a weak pair must
  not look like colluders) and `heuristic*8` (equal bots), in the default deal format
  (field duplicates: a round's tables share deals) and with independent deals;
- a colluding pair: two of the heuristic bots replaced by colluders
  (tests/tournaments/colluding_bot.py: they tell each other their hands and, together,
  play the move after which the pair scores most), playing heuristic apart (the realistic
  pair: +0.36 ± 0.2 points a game for the pair together) or greedy apart (the end-to-end
  test's pair: far stronger together than apart).

`duplicate sets` sets the length: 1 is 4 games a table (56 games, 12 shared games a pair),
2 is 8 (112, 24).

Printed per scenario, at alpha 0.05 and 0.01: the tournaments with any honest pair flagged
(the family-wise error rate Holm bounds by alpha), the honest pairs whose raw p-value is
below 0.05 and 0.01 (a calibrated test gives 5 % and 1 %), and with colluders the share of
tournaments where the colluding pair was flagged (the power), with the colluders' mean
joint gain per game.
Intervals are 95 % Wilson intervals.
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
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.tournaments.colluding_bot import Channel, colluding_bot
from tournaments.scheduling.round_robin import round_robin_schedule
from tournaments.scoring.adjusted import GameRow
from tournaments.scoring.baseline import deal_baseline, house_bot_class, play_deal
from tournaments.scoring.collusion import DEFAULT_ALPHA, collusion_report


@dataclass(frozen=True)
class Scenario:
    name: str
    lineup: tuple[str, ...]
    deal_format: str  # field or independent
    sets: int  # duplicate sets: games a table = sets x seats
    apart: str = "heuristic"  # how the colluders play without their partner

    @property
    def colluders(self) -> tuple[int, ...]:
        return tuple(i for i, s in enumerate(self.lineup) if s == "colluder")


def lineup(text: str) -> tuple[str, ...]:
    out: list[str] = []
    for part in text.split(","):
        name, _, count = part.partition("*")
        out.extend([name.strip()] * int(count or 1))
    return tuple(out)


@lru_cache(maxsize=8)
def schedule_for(n: int, seats: int, field: bool):
    return round_robin_schedule(n, seats, field=field)


def play_tournament(sc: Scenario, replicate: int, seats: int = 4) -> list[GameRow]:
    schedule = schedule_for(len(sc.lineup), seats, sc.deal_format == "field")
    games_per_table = sc.sets * seats
    first_of_group: dict[int, int] = {}
    for t_no, table in enumerate(schedule.tables):
        first_of_group.setdefault(table.deal_group, t_no)
    rows = []
    baselines: dict[str, list[float]] = {}
    tag = f"{sc.name}/{sc.deal_format}/{sc.sets}/{sc.apart}/{replicate}"
    for t_no, table in enumerate(schedule.tables):
        for i in range(games_per_table):
            deal_table = first_of_group[table.deal_group] if sc.deal_format == "field" else t_no
            seed = f"{tag}/t{deal_table}/g{i}"
            random.seed(zlib.crc32(f"{tag}/{t_no}/{i}".encode()))
            channel = Channel()
            cls = colluding_bot(channel, table_id=f"{tag}/t{t_no}/g{i}", apart=sc.apart, seed=f"{tag}/{t_no}/{i}")
            bots = [cls() if sc.lineup[e] == "colluder" else house_bot_class(sc.lineup[e])() for e in table.seats]
            points = play_deal(seed, bots)
            if seed not in baselines:
                baselines[seed] = deal_baseline(seed, seats)
            key = (table.deal_group, i) if sc.deal_format == "field" else (t_no, i)
            rows.append(GameRow(deal=key, entrants=table.seats, points=points, baseline=baselines[seed]))
    return rows


def replicate_job(args: tuple[Scenario, int, float]) -> dict:
    sc, replicate, alpha = args
    t0 = time.process_time()
    games = play_tournament(sc, replicate)
    t1 = time.process_time()
    report = collusion_report(games, alpha=alpha)
    t2 = time.process_time()
    colluding = tuple(sorted(sc.colluders))
    honest = [p for p in report.pairs if (p.a, p.b) != colluding]
    pair = next((p for p in report.pairs if (p.a, p.b) == colluding), None)
    def adjusted(p) -> float:
        return p.p_adjusted if p.p_adjusted is not None else 1.0

    return {
        "honest_min_adjusted": min((adjusted(p) for p in honest if p.tested), default=1.0),
        "colluders_adjusted": adjusted(pair) if pair else 1.0,
        "honest_flagged": sum(p.flagged for p in honest),
        "honest_p05": sum(p.p_value < 0.05 for p in honest if p.tested),
        "honest_p01": sum(p.p_value < 0.01 for p in honest if p.tested),
        "honest_tested": sum(p.tested for p in honest),
        "colluders_flagged": bool(pair and pair.flagged),
        "colluders_gain": pair.joint_gain if pair else math.nan,
        "colluders_z": pair.z if pair else math.nan,
        "games": len(games),
        "play_cpu_s": t1 - t0,
        "report_cpu_s": t2 - t1,
    }


def wilson(k: int, n: int) -> tuple[float, float]:
    if n == 0:
        return (math.nan, math.nan)
    z = 1.959964
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def pct(k: int, n: int) -> str:
    lo, hi = wilson(k, n)
    return f"{100 * k / n:5.1f} [{100 * lo:4.1f}, {100 * hi:4.1f}]"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--replicates", type=int, default=100, help="honest tournaments per scenario (default 100)")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--colluding-replicates", type=int, default=20,
                    help="tournaments per scenario with colluders (default 20: their search costs ~1 s a game)")
    ap.add_argument("--quick", action="store_true", help="30 and 8 replicates (a smoke run: wide intervals)")
    args = ap.parse_args()
    reps = 30 if args.quick else args.replicates
    creps = 8 if args.quick else args.colluding_replicates
    mixed = lineup("heuristic*3,greedy*3,random*2")
    equal = lineup("heuristic*8")
    colluding = lineup("colluder*2,heuristic*1,greedy*3,random*2")
    scenarios = [
        Scenario("honest mixed", mixed, "field", 2),
        Scenario("colluding pair", colluding, "field", 2, "greedy"),
        Scenario("colluding pair", colluding, "field", 2, "heuristic"),
        Scenario("honest mixed", mixed, "independent", 2),
        Scenario("honest mixed", mixed, "field", 1),
        Scenario("honest equal", equal, "field", 2),
    ]
    print(f"# collusion_bench: {reps} honest and {creps} colluding tournaments per scenario, "
          f"{args.jobs} jobs, load {os.getloadavg()[0]:.2f}")
    print(f"{'scenario':<34} {'deals':<12} {'games':>5} {'runs':>5} "
          f"{'honest flagged, a=0.05':>23} {'a=0.01':>20} {'honest p<0.05':>20} {'p<0.01':>20} "
          f"{'colluders flagged, a=0.05':>26} {'a=0.01':>20} {'colluders gain':>15}")
    started = time.perf_counter()
    cpu_play = cpu_report = 0.0
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        for sc in scenarios:
            n = creps if sc.colluders else reps
            results = list(pool.map(replicate_job, [(sc, r, DEFAULT_ALPHA) for r in range(n)], chunksize=2))
            name = f"{sc.name} ({sc.apart} apart)" if sc.colluders else sc.name
            fwer = [pct(sum(r["honest_min_adjusted"] <= a for r in results), n) for a in (0.05, 0.01)]
            tested = sum(r["honest_tested"] for r in results)
            p05 = pct(sum(r["honest_p05"] for r in results), tested)
            p01 = pct(sum(r["honest_p01"] for r in results), tested)
            cpu_play += sum(r["play_cpu_s"] for r in results)
            cpu_report += sum(r["report_cpu_s"] for r in results)
            if sc.colluders:
                power = [pct(sum(r["colluders_adjusted"] <= a for r in results), n) for a in (0.05, 0.01)]
                gains = [r["colluders_gain"] for r in results]
                gain = f"{statistics.fmean(gains):+.2f} ± {1.96 * statistics.stdev(gains) / math.sqrt(len(gains)):.2f}"
            else:
                power, gain = ["–", "–"], "–"
            print(f"{name:<34} {sc.deal_format:<12} {results[0]['games']:>5} {n:>5} {fwer[0]:>23} {fwer[1]:>20} "
                  f"{p05:>20} {p01:>20} {power[0]:>26} {power[1]:>20} {gain:>15}", flush=True)
    print(f"# {time.perf_counter() - started:.0f} s wall; CPU {cpu_play:.0f} s playing and scoring baselines, "
          f"{cpu_report:.1f} s in the report")


if __name__ == "__main__":
    main()
