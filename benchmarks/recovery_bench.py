"""Recovery benchmark: how long does a tournament take to recover from crashes, run after run?

Each run is an 8-bot house round robin (`--cycles` x 14 tables of 4 games) on the deployed
defaults (leases 30 s / renewals 10 s / reaper 10 s, Redis visibility timeout an hour, a
Celery worker of 2 prefork processes consuming the tables' queue, an analysis worker of its
own, one referee in the pool). Mid-tournament the script crashes things the way a machine
does, and restarts what died after `--restart-after` seconds, as a supervisor (Docker's
restart policy, systemd) would:

* `kill`: SIGKILL of the worker (its whole process group), then, once the restarted worker
  records games again and a table is mid-play, SIGKILL of the referee;
* `stop`: SIGSTOP of the worker (a stuck process: its leases expire, another worker takes
  its tables over) until the tournament has finished without it (or for `--stop-s`
  seconds), then SIGCONT: the woken attempts must write nothing (their leases were taken
  over), checked again `--after-wake-s` seconds later; a second worker runs throughout;
* `pg`: PostgreSQL restarted mid-tournament: by default a PostgreSQL instance of the
  benchmark's own (initdb into a temporary directory, as `benchmarks/soak.py` does;
  `pg_ctl restart -m fast`), or `--pg-restart "COMMAND"` against the database
  DATABASE_URL names (a cluster of its own, never one that other work shares);
* `none`: no fault, the reference (the same moment is taken as "the fault").

`--beat` also runs Celery beat (its tick re-enqueues stale and forgotten tables too). Each
run waits until the tournament is `finished` (or `--timeout`), then checks: every planned
game recorded exactly once, every game rated, no seat forfeited. Printed per run: the
seconds from the first fault to the finish, the longest time without a new game recorded
(the stall), the table attempts; then the distribution.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/tienlen_recovery \
    CELERY_BROKER_URL=redis://127.0.0.1:6379/6 \
      .venv/bin/python benchmarks/recovery_bench.py --runs 20 [--beat] [--fault kill|stop|pg]

`--log-dir DIR` keeps the processes' logs (each run's start is printed in UTC, to find it).
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "platform")]
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tienlen_site.settings")
DB_URL = os.environ.get("DATABASE_URL") or "postgres://postgres@127.0.0.1:5432/tienlen_recovery_bench"
if not DB_URL.startswith("postgres"):
    sys.exit("recovery_bench needs PostgreSQL: set DATABASE_URL=postgres://...")
os.environ["DATABASE_URL"] = DB_URL
BROKER = os.environ.get("CELERY_BROKER_URL") or "redis://127.0.0.1:6379/5"
if not BROKER.startswith("redis"):
    sys.exit("recovery_bench needs Redis: set CELERY_BROKER_URL=redis://...")
os.environ["CELERY_BROKER_URL"] = BROKER
ORGANIZER_TOKEN = "recovery-bench-organizer-token"
HOUSE = ["random", "greedy", "heuristic", "greedy", "random", "heuristic", "greedy", "heuristic"]


def setup() -> None:
    from bench_db import fresh_database

    fresh_database(DB_URL, BROKER)


def percentile(values: list[float], fraction: float) -> float:
    """The nearest-rank percentile (p90 of 20 runs: the 18th)."""
    ordered = sorted(values)
    return ordered[max(0, min(len(ordered) - 1, -(-int(fraction * 100) * len(ordered) // 100) - 1))]


class Stack:
    """The deployed processes: a referee, a tables worker (or two), an analysis worker, beat."""

    def __init__(self, group, *, target: str, beat: bool, workers: int) -> None:
        from demo import processes

        self.processes = processes
        self.group = group
        self.target = target
        self.workers = [f"worker-{n}" for n in range(1, workers + 1)]
        self.env = {
            "REFEREE_TARGET": target, "REFEREE_ORGANIZER_TOKEN": ORGANIZER_TOKEN,
            "TIENLEN_ORGANIZER_TOKEN": ORGANIZER_TOKEN, "DATABASE_URL": DB_URL, "CELERY_BROKER_URL": BROKER,
            "TIENLEN_TOKEN_STORE": "tournaments.token_store:DjangoTokenStore",
        }
        self.start_referee()
        for name in self.workers:
            self.start_worker(name)
        group.start("analysis", self.worker_argv("analysis", "analysis", 1), env=self.env)
        if beat:
            group.start("beat", processes.python_argv(
                "-m", "celery", "-A", "tienlen_site.celery:app", "beat", "--loglevel", "WARNING",
                "-s", str(Path(group.log_dir) / "beat-schedule")), env=self.env)
        # The first run starts once the workers are up: else its first "stall" was the
        # workers' start (15-25 s under load), not a recovery.
        for name in [*self.workers, "analysis"]:
            log = group.processes[name].log_path
            processes.wait_until(lambda log=log: " ready." in log.read_text(errors="replace"), timeout=120,
                                 what=f"{name} to be ready", group=group)

    def worker_argv(self, name: str, queues: str, concurrency: int) -> list[str]:
        return self.processes.python_argv(
            "-m", "celery", "-A", "tienlen_site.celery:app", "worker", "--loglevel", "INFO",
            "--concurrency", str(concurrency), "--queues", queues, "--hostname", f"{name}@%h",
            "--without-gossip", "--without-mingle")

    def start_worker(self, name: str) -> None:
        self.group.start(name, self.worker_argv(name, "celery", 2), env=self.env)

    def start_referee(self) -> None:
        self.group.start("referee", self.processes.python_argv(
            "-m", "referee_service", "--listen", self.target, "--advertise", self.target, "--referee-id", "ref-1",
            "--organizer-token", ORGANIZER_TOKEN, "--token-store", "tournaments.token_store:DjangoTokenStore",
            "--pool", "auto", "--log-level", "warning"), env=self.env)
        self.processes.wait_until(lambda: self.processes.referee_healthy(self.target), timeout=60,
                                  what="the referee", group=self.group)


class CpuMeter:
    """CPU-s of every process of the stack (each managed process's group: a worker with its
    pool), of this database's PostgreSQL backends and of the benchmark itself, from `start()`
    on: sampled at most once a second and before each kill (a killed process's CPU is kept
    as last seen), so a slow recovery can be read against what the machine gave each part."""

    TICK = os.sysconf("SC_CLK_TCK")

    def __init__(self, group) -> None:
        self.group = group
        self.seen: dict[int, tuple[str, float]] = {}
        self.base: dict[int, float] = {}
        self.at = 0.0
        self.own = 0.0

    def _backends(self) -> set[int]:
        from django.db import connection

        try:
            with connection.cursor() as cursor:
                cursor.execute("SELECT pid FROM pg_stat_activity WHERE datname = current_database() "
                               "AND pid <> pg_backend_pid()")
                return {pid for (pid,) in cursor.fetchall()}
        except Exception:
            return set()

    def sample(self, *, force: bool = False) -> None:
        if not force and time.monotonic() - self.at < 1.0:
            return
        self.at = time.monotonic()
        groups = {process.pid: name for name, process in self.group.processes.items()}
        backends = self._backends()
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                pid, rest = int(stat.parent.name), stat.read_text().rsplit(")", 1)[1].split()
            except (OSError, ValueError):
                continue
            name = groups.get(int(rest[2])) or ("postgres" if pid in backends else None)
            if name:
                self.seen[pid] = (name, (int(rest[11]) + int(rest[12])) / self.TICK)

    def start(self) -> None:
        self.sample(force=True)
        self.base = {pid: cpu for pid, (_, cpu) in self.seen.items()}
        self.own = time.process_time()

    def totals(self) -> dict[str, float]:
        self.sample(force=True)
        out: dict[str, float] = {"bench": time.process_time() - self.own}
        for pid, (name, cpu) in self.seen.items():
            out[name] = out.get(name, 0.0) + cpu - self.base.get(pid, 0.0)
        return out


def wait_for(condition, *, timeout: float, what: str, interval: float = 0.02) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out waiting for {what}")
        time.sleep(interval)


def one_run(stack: Stack, staff, bots, *, number: int, args) -> dict:
    from django.db import close_old_connections

    from tournaments.models import Game, GameSeat, RatingChange, Table, Tournament
    from tournaments.services import tournaments as services

    tournament = services.tournament_create(
        organiser=staff, name=f"recovery {number}", format="round_robin", seats_per_table=4, cycles=args.cycles,
        allow_same_owner=True)
    for bot in bots:
        services.tournament_entrant_add(tournament=tournament, bot=bot)
    games_qs = Game.objects.filter(table__tournament=tournament)
    gaps: list[tuple[float, float]] = []  # (seconds without a new game, when it ended)
    last = {"count": 0, "at": time.monotonic()}

    meter = CpuMeter(stack.group)

    def games() -> int:
        meter.sample()
        close_old_connections()
        try:
            count = games_qs.count()
        except Exception:  # PostgreSQL restarting: look again
            close_old_connections()
            return last["count"]
        now = time.monotonic()
        if count != last["count"]:
            gaps.append((now - last["at"], now))
            last.update(count=count, at=now)
        return count

    def finished() -> bool:
        games()
        try:
            return Tournament.objects.filter(pk=tournament.pk).values_list("status", flat=True)[0] == "finished"
        except Exception:
            close_old_connections()
            return False

    def half_played() -> bool:
        # A table mid-play: started (its lease taken), not all of its games recorded. (Not
        # "1 to 3 games recorded": on a quiet machine a table's 4 games often arrive in one
        # recording batch, and a whole run could finish without that state being seen.)
        games()
        return Table.objects.filter(tournament=tournament, status="running", games_recorded__lt=4).exists()

    planned_games = 14 * args.cycles * 4
    started = time.monotonic()
    services.tournament_start(tournament=tournament)
    wait_for(lambda: games() >= planned_games // 5, timeout=args.timeout, what="a fifth of the games")
    wait_for(half_played, timeout=args.timeout, what="a table half played")
    meter.start()
    fault_at = time.monotonic()
    referee_down = 0.0
    group = stack.group
    if args.fault == "kill":
        meter.sample(force=True)
        group.kill(stack.workers[0])
        time.sleep(args.restart_after)
        stack.start_worker(stack.workers[0])
        at_restart = games()
        wait_for(lambda: games() >= at_restart + 8 and half_played(), timeout=args.timeout,
                 what="games after the worker's restart")
        meter.sample(force=True)
        group.kill("referee")
        killed = time.monotonic()
        time.sleep(args.restart_after)
        stack.start_referee()
        referee_down = time.monotonic() - killed
    stopped_finish = None
    if args.fault == "stop":
        group.processes[stack.workers[0]].signal_group(signal.SIGSTOP)
        try:  # the tournament finishes without the stopped worker (or --stop-s passes)
            wait_for(finished, timeout=args.stop_s or args.timeout, what="the tournament to finish", interval=0.05)
            stopped_finish = time.monotonic() - fault_at
        except RuntimeError:
            if not args.stop_s:
                raise
        group.processes[stack.workers[0]].signal_group(signal.SIGCONT)
    elif args.fault == "pg":
        if args.pg_restart:
            subprocess.run(args.pg_restart, shell=True, check=True)  # the operator's own command
        else:
            stack.pg.restart()
    try:
        wait_for(finished, timeout=args.timeout, what="the tournament to finish", interval=0.05)
    except RuntimeError:
        close_old_connections()
        for row in Table.objects.filter(tournament=tournament).exclude(status="done").values_list(
                "id", "status", "attempts", "games_recorded", "lease_owner", "lease_expires_at", "progress_at",
                "last_error"):
            print("  not done:", row, flush=True)
        raise
    done = time.monotonic()
    cpu = meter.totals()
    if args.fault == "stop":
        time.sleep(args.after_wake_s)  # the woken worker's attempts: fenced, they write nothing
    close_old_connections()
    recorded = games_qs.count()
    distinct = games_qs.values("table_id", "index").distinct().count()
    planned = sum(Table.objects.filter(tournament=tournament).values_list("games_planned", flat=True))
    rated = RatingChange.objects.filter(game__table__tournament=tournament).count()
    forfeited = GameSeat.objects.filter(game__table__tournament=tournament, forfeited=True).count()
    attempts = sorted(Table.objects.filter(tournament=tournament).values_list("attempts", flat=True))
    statuses = set(Table.objects.filter(tournament=tournament).values_list("status", flat=True))
    # The tables that took longest from their first start to their close: which ones the
    # recovery waited for, and how often each was attempted (to read against the logs).
    spans = sorted(((f - s).total_seconds(), number, tries) for s, f, number, tries in Table.objects.filter(
        tournament=tournament, started_at__isnull=False, finished_at__isnull=False).values_list(
        "started_at", "finished_at", "number", "attempts"))[-3:]
    ok = recorded == distinct == planned and rated == 4 * recorded and not forfeited and statuses == {"done"}
    # The stall: the longest time without a new game recorded after the fault (a gap that
    # ends after it, counted from the last game before it).
    stall = max([gap for gap, end in gaps if end > fault_at] + [done - last["at"]])
    return {
        "total": done - started, "after_fault": done - fault_at, "stall": stall,
        "games": recorded, "planned": planned, "rated": rated, "forfeited": forfeited, "ok": ok,
        "max_attempts": attempts[-1], "referee_down": referee_down, "retried_tables": sum(1 for a in attempts if a > 1),
        "finished_while_stopped": stopped_finish,
        "cpu": cpu,
        "slowest": ", ".join(f"table {number} {span:.1f} s/{tries} attempts" for span, number, tries in reversed(spans)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--cycles", type=int, default=10, help="round robin cycles: 14 tables of 4 games each")
    parser.add_argument("--beat", action="store_true", help="also run Celery beat")
    parser.add_argument("--fault", choices=("kill", "stop", "pg", "none"), default="kill",
                        help="none: the same runs without a fault (what the play itself takes)")
    parser.add_argument("--restart-after", type=float, default=1.0,
                        help="seconds before a killed process is started again (its supervisor)")
    parser.add_argument("--stop-s", type=float, default=0.0,
                        help="--fault stop: seconds the worker stays stopped (0: until the tournament finished)")
    parser.add_argument("--after-wake-s", type=float, default=10.0,
                        help="--fault stop: seconds given to the woken worker before the checks")
    parser.add_argument("--pg-restart", default="",
                        help="--fault pg: a shell command restarting the PostgreSQL of DATABASE_URL "
                             "(default: an instance of the benchmark's own, restarted with pg_ctl)")
    parser.add_argument("--pg-port", type=int, default=0, help="--fault pg: its own instance's port (default: free)")
    parser.add_argument("--log-dir", help="keep the processes' logs here (default: a temporary directory)")
    parser.add_argument("--timeout", type=float, default=600.0)
    args = parser.parse_args()
    own_pg = None
    if args.fault == "pg" and not args.pg_restart:
        global DB_URL
        from soak import OwnPostgres

        from demo import processes as _processes

        own_pg = OwnPostgres(args.pg_port or _processes.free_port())
        DB_URL = os.environ["DATABASE_URL"] = own_pg.start()
    try:
        run_all(args, own_pg)
    finally:
        if own_pg is not None:
            from django.db import connections

            connections.close_all()
            own_pg.stop()


def run_all(args, own_pg) -> None:
    setup()

    from django.contrib.auth.models import User

    from demo import processes
    from tournaments.services import accounts

    staff = User.objects.create_user("recovery-bench", is_staff=True)
    bots = [accounts.bot_create(owner=staff, name=f"house-{i}-{kind}", house_bot=kind)[0]
            for i, kind in enumerate(HOUSE)]
    target = f"127.0.0.1:{processes.free_port()}"
    results = []
    if args.log_dir:
        Path(args.log_dir).mkdir(parents=True, exist_ok=True)
    with (processes.terminate_on_signals(),
          tempfile.TemporaryDirectory(prefix="recovery-bench-") as temporary,
          processes.ProcessGroup(Path(args.log_dir or temporary)) as group):
        stack = Stack(group, target=target, beat=args.beat, workers=2 if args.fault == "stop" else 1)
        stack.pg = own_pg
        for number in range(args.runs):
            print(f"run {number + 1} starts at {datetime.now(UTC):%H:%M:%S} UTC, load average "
                  f"{os.getloadavg()[0]:.1f}", flush=True)
            result = one_run(stack, staff, bots, number=number, args=args)
            results.append(result)
            print(f"run {number + 1}: {result['after_fault']:.1f} s from the fault to the finish "
                  f"({result['total']:.1f} s in all; the referee down {result['referee_down']:.1f} s), longest stall {result['stall']:.1f} s, "
                  f"{result['games']}/{result['planned']} games, {result['rated']} rating changes, "
                  f"{result['forfeited']} forfeits, {result['retried_tables']} tables retried "
                  f"(max {result['max_attempts']} attempts)"
                  + ("" if result["finished_while_stopped"] is None
                     else f", finished {result['finished_while_stopped']:.1f} s after the stop, still stopped")
                  + ("" if result["ok"] else "  <-- NOT ALL RECORDED ONCE")
                  + f"; slowest tables: {result['slowest']}", flush=True)
            print(f"  CPU-s from the fault to the finish ({result['after_fault']:.1f} s wall, load "
                  f"{os.getloadavg()[0]:.1f}): " + ", ".join(f"{name} {cpu:.1f}" for name, cpu in sorted(
                      result["cpu"].items())) + f"; all {sum(result['cpu'].values()):.1f}", flush=True)
            group.check_alive()
    after = [r["after_fault"] for r in results]
    stalls = [r["stall"] for r in results]
    print()
    print(f"{args.fault}, beat {'on' if args.beat else 'off'}, {len(results)} runs of {14 * args.cycles * 4} games, "
          f"load average {os.getloadavg()[0]:.1f}")
    print("| | min | median | p90 | max |")
    print("| --- | ---: | ---: | ---: | ---: |")

    def row(name: str, values: list[float]) -> None:
        print(f"| {name} | {min(values):.1f} | {statistics.median(values):.1f} | {percentile(values, 0.9):.1f} | "
              f"{max(values):.1f} |")

    row("fault to finish, s", after)
    row("referee down (kill to answering again), s", [r["referee_down"] for r in results])
    row("longest stall, s", stalls)
    row("tables retried", [float(r["retried_tables"]) for r in results])
    row("CPU-s of the stack (every process above), fault to finish", [sum(r["cpu"].values()) for r in results])
    row("cores the stack had (its CPU-s / wall s), fault to finish",
        [sum(r["cpu"].values()) / r["after_fault"] for r in results])
    print(f"| every game recorded once and rated | {sum(r['ok'] for r in results)} of {len(results)} runs | | | |")


if __name__ == "__main__":
    main()
