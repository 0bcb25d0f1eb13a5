"""Pipeline benchmark: does the whole tournament pipeline keep up with its referee?

An 8-bot round robin at the default table size (4 games per table: one duplicate set,
field deals), measured side by side in one run, alternating, for every configuration:

* **referee alone**: the same kind of tables (a scheduled round robin's own plans: same
  seats, same committed deals) played straight through the organiser API by `--streams`
  threads of this process, the games thrown away;
* **pipeline**: `tournament_start` (the service the API's start calls) -> Celery on Redis
  -> the worker process(es) -> the referee's PlayTable stream -> every game recorded in
  PostgreSQL and rated, timed until the tournament is `finished` (then checked: every
  planned game recorded once, every game rated).

Each referee and each Celery worker is its own OS process, as deployed. CPU per game is read
from /proc for every component: the referee(s), the worker (its parent and pool children),
PostgreSQL (the backends connected to the benchmark's database, from pg_stat_activity),
the bot processes (`--bots remote`) and this process (the API's side: starting the
tournament, and the referee-alone client).

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/tienlen_pipe \
    CELERY_BROKER_URL=redis://127.0.0.1:6379/5 \
      .venv/bin/python benchmarks/pipeline_bench.py [--rounds 3] [--cycles 4] \
        [--workers 1] [--referees 1] [--pool prefork] [--bots house|remote] [--profile FILE] [--debug]

Every process runs as deployed, `DJANGO_DEBUG=0` (`--debug`: the development default,
whose debug cursor costs every process about a third of its CPU per game).

`--workers 1,2,4` and `--referees 1,2` measure each combination in turn (every pipeline
run with its referee-alone run just before it). The referees register in the referee pool
(the platform's token store, `--pool auto`) and the workers route every table over
it, as deployed; the referee-alone run deals its tables round the referees. The database named in DATABASE_URL (default
`tienlen_pipe_bench`) is created, migrated and flushed; the Redis database is flushed.
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "platform")]
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tienlen_site.settings")
DB_URL = os.environ.get("DATABASE_URL") or "postgres://postgres@127.0.0.1:5432/tienlen_pipe_bench"
if not DB_URL.startswith("postgres"):
    sys.exit("pipeline_bench needs PostgreSQL: set DATABASE_URL=postgres://...")
os.environ["DATABASE_URL"] = DB_URL
BROKER = os.environ.get("CELERY_BROKER_URL") or "redis://127.0.0.1:6379/5"
if not BROKER.startswith("redis"):
    sys.exit("pipeline_bench needs Redis: set CELERY_BROKER_URL=redis://...")
os.environ["CELERY_BROKER_URL"] = BROKER
ORGANIZER_TOKEN = "pipe-bench-organizer-token"
HOUSE = ["random", "greedy", "heuristic", "greedy", "random", "heuristic", "greedy", "heuristic"]
TICK = os.sysconf("SC_CLK_TCK")


# --- processes and their CPU -------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def cpu_s(pid: int) -> float:
    """User + system CPU seconds of a process (0 when it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / TICK


def children(pid: int) -> list[int]:
    """The process and its descendants (Celery's pool children, a referee's house workers)."""
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        found.append(current)
        try:
            kids = Path(f"/proc/{current}/task/{current}/children").read_text().split()
        except OSError:
            continue
        todo.extend(int(k) for k in kids)
    return found


class Proc:
    def __init__(self, name: str, argv: list[str], env: dict[str, str], cwd: Path = ROOT) -> None:
        self.name = name
        self.popen = subprocess.Popen(argv, cwd=cwd, env={**os.environ, **env}, stdin=subprocess.DEVNULL)

    def pids(self) -> list[int]:
        return children(self.popen.pid)

    def stop(self) -> None:
        if self.popen.poll() is None:
            self.popen.terminate()
            try:
                self.popen.wait(20)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait()


class MainProcess:
    """A Celery worker's main process alone (it takes the tasks from Redis and hands them to
    its pool): the part of the worker's CPU that is Celery's own, not the tasks'."""

    def __init__(self, proc: Proc) -> None:
        self.proc = proc

    def pids(self) -> list[int]:
        return [self.proc.popen.pid]


def wait_port(port: int, proc: Proc, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.popen.poll() is not None:
            raise RuntimeError(f"{proc.name} exited with {proc.popen.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"{proc.name} did not listen on {port}")


def start_referee(number: int) -> tuple[Proc, str]:
    port = free_port()
    target = f"127.0.0.1:{port}"
    proc = Proc(f"referee-{number}", [
        sys.executable, "-m", "referee_service", "--listen", target, "--organizer-token", ORGANIZER_TOKEN,
        "--token-store", "tournaments.token_store:DjangoTokenStore", "--pool", "auto", "--advertise", target,
        "--log-level", "warning",
    ], {})
    wait_port(port, proc)
    return proc, target


def start_worker(number: int | str, *, concurrency: int, pool: str, target: str, profile: str | None,
                 queues: str = "celery", code: Path = ROOT) -> Proc:
    """A Celery worker running the code of the checkout `code` (this one by default; `--code`
    runs another checkout's workers against the same database, referees and API side)."""
    argv = [sys.executable if code == ROOT else str(code / ".venv" / "bin" / "python")]
    if profile:
        argv += [str(ROOT / "benchmarks" / "cpu_profile.py"), profile]  # by CPU time, not the wall
    argv += ["-m", "celery", "-A", "tienlen_site.celery:app", "worker", "--pool", pool, "--concurrency", str(concurrency),
             "--loglevel", os.environ.get("PIPE_WORKER_LOGLEVEL", "WARNING"), "--without-gossip", "--without-mingle", "--without-heartbeat",
             "--queues", queues, "--hostname", f"pipe-bench-{number}@%h"]
    return Proc(f"worker-{number}", argv, {
        "PYTHONPATH": f"{code}:{code / 'platform'}", "REFEREE_TARGET": target,
        "REFEREE_ORGANIZER_TOKEN": ORGANIZER_TOKEN,
    }, cwd=code)


def wait_workers(app, count: int, timeout: float = 180.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        replies = app.control.ping(timeout=0.5) or []
        if len([r for r in replies if any(name.startswith("pipe-bench-") for name in r)]) >= count:
            return
    raise RuntimeError("the Celery workers did not answer")


def start_bots(bots: list, tokens: dict[int, str], targets: list[str]) -> list[Proc]:
    """One SDK bot process per bot and referee (each bot runs its house example remotely)."""
    procs = []
    for bot, kind in zip(bots, HOUSE, strict=True):
        for target in targets:
            procs.append(Proc(f"bot-{bot.pk}", [
                sys.executable, "-m", "bots_sdk.cli", "run", kind, "--server", target,
            ], {"TIENLEN_TOKEN": tokens[bot.pk], "TIENLEN_LOG_LEVEL": "WARNING"}))
    return procs


def postgres_backends() -> list[int]:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT pid FROM pg_stat_activity WHERE datname = current_database()")
        return [row[0] for row in cursor.fetchall()]


@dataclass
class Meter:
    """CPU seconds per component between start() and stop()."""

    roles: dict[str, list[Proc]]
    before: dict[int, float] = field(default_factory=dict)
    spent: dict[str, float] = field(default_factory=dict)
    self_cpu: float = 0.0

    def _snapshot(self) -> dict[str, dict[int, float]]:
        snap = {role: {pid: cpu_s(pid) for p in procs for pid in p.pids()} for role, procs in self.roles.items()}
        snap["postgres"] = {pid: cpu_s(pid) for pid in postgres_backends()}
        return snap

    def start(self) -> None:
        self._start = self._snapshot()
        self.self_cpu = time.process_time()

    def stop(self) -> None:
        self.self_cpu = time.process_time() - self.self_cpu
        end = self._snapshot()
        self.spent = {
            role: sum(cpu - self._start[role].get(pid, 0.0) for pid, cpu in pids.items())
            for role, pids in end.items()
        }
        self.spent["api/client (this process)"] = self.self_cpu


# --- the two ways of playing a round robin ----------------------------------------------------


def round_robin(organiser, bots, *, name: str, cycles: int, sets: int = 1):
    from tournaments.services import tournaments as services

    tournament = services.tournament_create(
        organiser=organiser, name=name, format="round_robin", seats_per_table=4, cycles=cycles,
        duplicate_sets=sets, allow_same_owner=True,
    )
    for bot in bots:
        services.tournament_entrant_add(tournament=tournament, bot=bot)
    return tournament


def referee_alone(organiser, bots, targets: list[str], *, number: int, cycles: int, sets: int, streams: int,
                  meter: Meter) -> tuple[int, float]:
    """Schedule a round robin, take every table's plan, then play them all on the
    referee(s) with `streams` concurrent calls (tables dealt round the referees)."""
    from bots_sdk.protocol.tienlen.v1 import organizer_pb2 as org
    from referee_service.organizer_client import OrganizerClient
    from tournaments.models import Tournament
    from tournaments.services import tables as table_services
    from tournaments.services import tournaments as services

    tournament = round_robin(organiser, bots, name=f"alone {number}", cycles=cycles, sets=sets)
    Tournament.objects.filter(pk=tournament.pk).update(status=Tournament.Status.SCHEDULED)
    table_ids = services.tournament_schedule(tournament_id=tournament.pk)
    plans = [table_services.table_plan(table_id=t) for t in table_ids]
    clients = [OrganizerClient(t, ORGANIZER_TOKEN) for t in targets]
    for client in clients:
        client.list_bots()  # channels up before the clock starts, as a worker's would be
    lock = threading.Lock()
    queue = list(enumerate(plans))
    games = 0

    def play() -> int:
        played = 0
        while True:
            with lock:
                if not queue:
                    return played
                i, plan = queue.pop(0)
            for event in clients[i % len(clients)].play_table(plan.request()):
                played += isinstance(event, org.GameRecord)

    meter.start()
    t0 = time.perf_counter()
    with ThreadPoolExecutor(streams) as pool:
        games = sum(pool.map(lambda _: play(), range(streams)))
    seconds = time.perf_counter() - t0
    meter.stop()
    for client in clients:
        client.close()
    expected = sum(p.games_planned for p in plans)
    if games != expected:
        raise RuntimeError(f"referee alone played {games} of {expected} games")
    return games, seconds


def pipeline(organiser, bots, *, number: int, cycles: int, sets: int, meter: Meter | None) -> tuple[int, float, float]:
    """Start a round robin as the API does and wait until it is finished; then until every
    revealed deal has its luck baseline (seconds from the start, not metered)."""
    from django.db import close_old_connections

    from tournaments.models import Deal, Game, RatingChange, Table, Tournament
    from tournaments.services import tournaments as services

    tournament = round_robin(organiser, bots, name=f"pipeline {number}", cycles=cycles, sets=sets)
    if meter:
        meter.start()
    t0 = time.perf_counter()
    services.tournament_start(tournament=tournament)
    deadline = time.monotonic() + 900
    while Tournament.objects.filter(pk=tournament.pk).values_list("status", flat=True)[0] != Tournament.Status.FINISHED:
        if time.monotonic() > deadline:
            raise RuntimeError("the pipeline did not finish the round robin")
        time.sleep(0.02)
    seconds = time.perf_counter() - t0
    if meter:
        meter.stop()
    close_old_connections()
    pending = Deal.objects.filter(tournament=tournament, baseline__isnull=True)
    while pending.exists():
        if time.monotonic() > deadline:
            raise RuntimeError("the luck baselines were not computed")
        time.sleep(0.05)
    with_baselines = time.perf_counter() - t0
    games = Game.objects.filter(table__tournament=tournament).count()
    planned = sum(Table.objects.filter(tournament=tournament).values_list("games_planned", flat=True))
    rated = RatingChange.objects.filter(game__table__tournament=tournament).count()
    if games != planned or rated != 4 * games:
        raise RuntimeError(f"pipeline: {games} games recorded of {planned} planned, {rated} rating changes")
    return games, seconds, with_baselines


# --- the run -----------------------------------------------------------------------------------


def setup() -> None:
    from bench_db import fresh_database

    fresh_database(DB_URL, BROKER)


def code_name(code: Path) -> str:
    return "this" if code == ROOT else code.name


def ints(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x]


def fmt_range(values: Iterable[float], digits: int = 0) -> str:
    values = list(values)
    lo, hi = min(values), max(values)
    return f"{lo:.{digits}f}" if f"{lo:.{digits}f}" == f"{hi:.{digits}f}" else f"{lo:.{digits}f}–{hi:.{digits}f}"


def run_round(args, app, staff, bots, ref_procs: list[Proc], targets: list[str], bot_procs: list[Proc], *,
              workers: int, mode: str, number: int, result: dict, group: int = 8, code: Path = ROOT) -> None:
    """One referee-alone run then one pipeline run, on workers started for `mode` (and warmed
    up with an unmetered one-cycle round robin, so no run pays a fresh process's first
    imports and connections)."""
    from django.conf import settings

    settings.TIENLEN_TABLES_PER_TASK = group  # read by the start service, in this process
    queues = "celery,analysis" if mode == "same" else "celery"
    # The referees register in the pool (the platform's database) and every worker
    # routes each table over it (tournaments.play.routing); REFEREE_TARGET is only the
    # fallback when no referee is registered.
    if args.pool == "threads":  # `workers` processes, each a threads pool
        worker_procs = [
            start_worker(i, concurrency=args.threads or 4, pool="threads", target=targets[0], profile=None, queues=queues,
                         code=code)
            for i in range(workers)
        ]
    else:  # one Celery worker whose pool has `workers` processes
        worker_procs = [start_worker(0, concurrency=workers, pool=args.pool, target=targets[0],
                                     profile=args.profile if workers == 1 else None, queues=queues, code=code)]
    analysis_procs = []
    if mode == "separate":
        analysis_procs = [start_worker("analysis", concurrency=1, pool="prefork", target=targets[0], profile=None,
                                       queues="analysis", code=code)]
    try:
        wait_workers(app, len(worker_procs) + len(analysis_procs))
        pipeline(staff, bots, number=number * 10 + 9, cycles=1, sets=args.sets, meter=None)  # warm-up
        roles = {"referee": ref_procs, "worker": worker_procs, "analysis": analysis_procs, "bots": bot_procs,
                 "worker main process": [MainProcess(p) for p in worker_procs]}
        meter = Meter(roles)
        games, secs = referee_alone(staff, bots, targets, number=number, cycles=args.cycles, sets=args.sets,
                                    streams=args.streams, meter=meter)
        result["alone"].append(games / secs)
        result["cpu_alone"].append({k: v / games for k, v in meter.spent.items()})
        meter = Meter(roles)
        games, secs, with_baselines = pipeline(staff, bots, number=number, cycles=args.cycles, sets=args.sets, meter=meter)
        result["pipeline"].append(games / secs)
        result["baselines"].append(with_baselines)
        result["cpu_pipeline"].append({k: v / games for k, v in meter.spent.items()})
    finally:
        for proc in worker_procs + analysis_procs:
            proc.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3, help="alternating repetitions of each configuration")
    parser.add_argument("--cycles", type=int, default=4, help="round robin cycles (14 tables of 4 games each)")
    parser.add_argument("--sets", type=int, default=1,
                        help="duplicate sets per table: 4 games each (1, the default table size)")
    parser.add_argument("--workers", type=ints, default=[1], help="worker processes, e.g. 1,2,4")
    parser.add_argument("--referees", type=ints, default=[1], help="referee processes, e.g. 1,2")
    parser.add_argument("--pool", default="prefork",
                        help="Celery pool: prefork (one worker, --workers pool processes), threads (--workers "
                             "processes of --threads threads each), solo")
    parser.add_argument("--threads", type=int, default=0,
                        help="with --pool threads: threads per worker process (default: the Celery setting)")
    parser.add_argument("--streams", type=int, default=8, help="concurrent organiser calls of the referee-alone run")
    parser.add_argument("--bots", choices=("house", "remote"), default="house",
                        help="house bots in the referee, or 8 SDK bot processes (one per bot and referee)")
    parser.add_argument("--profile", help="cProfile the (single, solo-pool) worker by CPU time into this file")
    parser.add_argument("--group", type=ints, default=[1],
                        help="tables per task (TIENLEN_TABLES_PER_TASK): 1 (the default: a task per table, one "
                             "after another), 8 (a worker process streams a group of 8 tables at once); 1,8 "
                             "alternates both in each round, each with its referee-alone run")
    parser.add_argument("--analysis", default="separate",
                        help="where the luck baselines run: separate (the analysis queue on a worker process of "
                             "its own, as compose), same (the recording worker consumes both queues, as before "
                             "issue 13's pipeline work), or both: same,separate (alternating in each round, each "
                             "with its referee-alone run)")
    parser.add_argument("--code", default=".",
                        help="checkouts whose workers play the pipeline runs, e.g. .,/work/wt/pipeline-base: "
                             "alternated in each round (same database, referees and API side), each with its "
                             "referee-alone run; a checkout's own .venv runs its workers. `path@N`: that "
                             "checkout with N tables a task only (instead of each of --group), e.g. "
                             ".@8,/work/main@1")
    parser.add_argument("--debug", action="store_true",
                        help="every process with DJANGO_DEBUG=1 (the development default) instead of as deployed")
    args = parser.parse_args()
    # As deployed (docker/compose.yml): DEBUG off, unless `--debug`. With DEBUG on (the
    # development default) every query of every process goes through Django's debug cursor
    # (timed, its SQL formatted and kept in the connection's log): the figures of issue 26
    # up to 2026-12-07 were measured so, and that overhead is not the platform's. Set before
    # Django starts here (setup()) and inherited by every process the run starts.
    os.environ["DJANGO_DEBUG"] = "1" if args.debug else "0"
    if not args.debug:
        os.environ.setdefault("DJANGO_SECRET_KEY", os.urandom(32).hex())
        os.environ.setdefault("REFEREE_ORGANIZER_TOKEN", ORGANIZER_TOKEN)  # this process's settings
    analysis = [m for m in args.analysis.split(",") if m]
    if not analysis or set(analysis) - {"same", "separate"}:
        parser.error("--analysis: same, separate or same,separate")
    modes = []
    for entry in (c for c in args.code.split(",") if c):
        path, _, group = entry.partition("@")  # `path@N`: that checkout with N tables a task only
        code = ROOT if path == "." else Path(path).resolve()
        modes += [(m, g, code) for g in ([int(group)] if group else args.group) for m in analysis]
    setup()

    from django.contrib.auth.models import User

    from tienlen_site.celery import app
    from tournaments.services import accounts

    app.conf.broker_url = BROKER
    staff = User.objects.create_user("pipe-bench", is_staff=True)
    tokens: dict[int, str] = {}
    if args.bots == "house":
        bots = [accounts.bot_create(owner=staff, name=f"house-{i}-{kind}", house_bot=kind)[0] for i, kind in enumerate(HOUSE)]
    else:
        bots = []
        for i in range(8):
            bot, token = accounts.bot_create(owner=staff, name=f"remote-{i}")
            bots.append(bot)
            tokens[bot.pk] = token

    rows = []
    for referees in args.referees:
        ref_procs, targets = zip(*(start_referee(n) for n in range(referees)), strict=True)
        bot_procs = start_bots(bots, tokens, list(targets)) if tokens else []
        try:
            if bot_procs:
                time.sleep(3)  # the bots connect
            for workers in args.workers:
                results = {mode: {"alone": [], "pipeline": [], "baselines": [], "cpu_alone": [], "cpu_pipeline": []}
                           for mode in modes}
                for r in range(args.rounds):
                    for mode in modes:
                        run_round(args, app, staff, bots, list(ref_procs), list(targets), bot_procs, workers=workers,
                                  mode=mode[0], group=mode[1], code=mode[2],
                                  number=(len(rows) * 10 + r) * 10 + modes.index(mode), result=results[mode])
                        res = results[mode]
                        print(f"  referees {referees}, workers {workers}, baselines {mode[0]}, tables per task "
                              f"{mode[1]}, code {code_name(mode[2])}, round {r + 1}: "
                              f"alone {res['alone'][-1]:.1f} games/s, pipeline {res['pipeline'][-1]:.1f} games/s "
                              f"(baselines done after {res['baselines'][-1]:.1f} s)", flush=True)
                rows.extend((referees, workers, mode, results[mode]) for mode in modes)
        finally:
            for proc in bot_procs:
                proc.stop()
            for proc in ref_procs:
                proc.stop()

    games_per_run = 14 * args.cycles * 4 * args.sets
    print()
    print(f"8-bot round robin, {args.bots} bots, {14 * args.cycles} tables x {4 * args.sets} games ({games_per_run} games) per run, "
          f"Celery pool {args.pool}, {args.rounds} alternating rounds, DEBUG {'on' if args.debug else 'off (as deployed)'}; "
          "ranges over the rounds")
    print()
    print("| code | referees | worker processes | baselines | tables per task | referee alone, games/s "
          "| pipeline, games/s | pipeline / alone | worker CPU / referee CPU, per game | baselines done, s |")
    print("| --- | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for referees, workers, (mode, group, code), res in rows:
        ratios = [p / a for a, p in zip(res["alone"], res["pipeline"], strict=True)]
        print(f"| {code_name(code)} | {referees} | {workers} | {mode} | {group} | {fmt_range(res['alone'])} | "
              f"{fmt_range(res['pipeline'])} | "
              f"{fmt_range(ratios, 2)} (median {statistics.median(ratios):.2f}) | "
              f"{fmt_range((c['worker'] / c['referee'] for c in res['cpu_pipeline']), 2)} | {fmt_range(res['baselines'], 1)} |")
    print()
    roles = ["referee", "worker", "worker main process", "analysis", "postgres", "bots", "api/client (this process)"]
    print("| CPU ms per game (worker: the one recording, of which its main process; analysis: the baselines' own) | "
          + " | ".join(roles) + " |")
    print("| --- |" + " ---: |" * len(roles))
    for referees, workers, (mode, group, code), res in rows:
        for kind in ("alone", "pipeline"):
            cells = [fmt_range((1000 * c[role] for c in res[f"cpu_{kind}"]), 2) for role in roles]
            print(f"| {kind}, {code_name(code)}, {referees} referee(s), {workers} worker(s), baselines {mode}, "
                  f"{group} table(s) a task | "
                  + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
