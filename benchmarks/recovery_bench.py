"""Recovery benchmark: how long does a tournament take to recover from crashes, run after run?

Each run is an 8-bot house round robin (`--cycles` x 14 tables of 4 games) on the deployed
defaults (leases 30 s / renewals 10 s / reaper 10 s, Redis visibility timeout an hour, a
Celery worker of 2 prefork processes consuming the tables' queue, an analysis worker of its
own, one referee in the pool). Mid-tournament the script crashes things the way a machine
does, and restarts what died after `--restart-after` seconds, as a supervisor (Docker's
restart policy, systemd) would:

* `kill`: SIGKILL of the worker (its whole process group), then, once the restarted worker
  records games again and a table is half played, SIGKILL of the referee;
* `stop`: SIGSTOP of the worker for `--stop-s` seconds (a stuck process: its leases expire,
  another worker takes its tables over), then SIGCONT (the stopped attempts must write
  nothing: their leases were taken over); a second worker runs throughout;
* `pg`: PostgreSQL restarted mid-tournament (`--pg-restart "COMMAND"`; run it against a
  cluster of its own, never one that other work shares);
* `none`: no fault, the reference (the same moment is taken as "the fault").

`--beat` also runs Celery beat (its tick re-enqueues stale and forgotten tables too). Each
run waits until the tournament is `finished` (or `--timeout`), then checks: every planned
game recorded exactly once, every game rated, no seat forfeited. Printed per run: the
seconds from the first fault to the finish, the longest time without a new game recorded
(the stall), the table attempts; then the distribution.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/tienlen_recovery \
    CELERY_BROKER_URL=redis://127.0.0.1:6379/6 \
      .venv/bin/python benchmarks/recovery_bench.py --runs 20 [--beat] [--fault kill|stop|pg]
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
    gaps: list[float] = []
    last = {"count": 0, "at": time.monotonic()}

    def games() -> int:
        close_old_connections()
        try:
            count = games_qs.count()
        except Exception:  # PostgreSQL restarting: look again
            close_old_connections()
            return last["count"]
        now = time.monotonic()
        if count != last["count"]:
            gaps.append(now - last["at"])
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
        games()
        return Table.objects.filter(tournament=tournament, status="running", games_recorded__gte=1,
                                    games_recorded__lt=4).exists()

    planned_games = 14 * args.cycles * 4
    started = time.monotonic()
    services.tournament_start(tournament=tournament)
    wait_for(lambda: games() >= planned_games // 5, timeout=args.timeout, what="a fifth of the games")
    wait_for(half_played, timeout=args.timeout, what="a table half played")
    fault_at = time.monotonic()
    referee_down = 0.0
    group = stack.group
    if args.fault == "kill":
        group.kill(stack.workers[0])
        time.sleep(args.restart_after)
        stack.start_worker(stack.workers[0])
        at_restart = games()
        wait_for(lambda: games() >= at_restart + 8 and half_played(), timeout=args.timeout,
                 what="games after the worker's restart")
        group.kill("referee")
        killed = time.monotonic()
        time.sleep(args.restart_after)
        stack.start_referee()
        referee_down = time.monotonic() - killed
    elif args.fault == "stop":
        group.processes[stack.workers[0]].signal_group(signal.SIGSTOP)
        time.sleep(args.stop_s)
        group.processes[stack.workers[0]].signal_group(signal.SIGCONT)
    elif args.fault == "pg":
        subprocess.run(args.pg_restart, shell=True, check=True)  # the operator's own command
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
    close_old_connections()
    recorded = games_qs.count()
    distinct = games_qs.values("table_id", "index").distinct().count()
    planned = sum(Table.objects.filter(tournament=tournament).values_list("games_planned", flat=True))
    rated = RatingChange.objects.filter(game__table__tournament=tournament).count()
    forfeited = GameSeat.objects.filter(game__table__tournament=tournament, forfeited=True).count()
    attempts = sorted(Table.objects.filter(tournament=tournament).values_list("attempts", flat=True))
    statuses = set(Table.objects.filter(tournament=tournament).values_list("status", flat=True))
    ok = recorded == distinct == planned and rated == 4 * recorded and not forfeited and statuses == {"done"}
    return {
        "total": done - started, "after_fault": done - fault_at, "stall": max(gaps + [done - last["at"]]),
        "games": recorded, "planned": planned, "rated": rated, "forfeited": forfeited, "ok": ok,
        "max_attempts": attempts[-1], "referee_down": referee_down, "retried_tables": sum(1 for a in attempts if a > 1),
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
    parser.add_argument("--stop-s", type=float, default=45.0, help="--fault stop: seconds the worker stays stopped")
    parser.add_argument("--pg-restart", default="", help="--fault pg: the shell command restarting PostgreSQL")
    parser.add_argument("--timeout", type=float, default=600.0)
    args = parser.parse_args()
    if args.fault == "pg" and not args.pg_restart:
        parser.error("--fault pg needs --pg-restart COMMAND (a PostgreSQL cluster of the benchmark's own)")
    setup()

    from django.contrib.auth.models import User

    from demo import processes
    from tournaments.services import accounts

    staff = User.objects.create_user("recovery-bench", is_staff=True)
    bots = [accounts.bot_create(owner=staff, name=f"house-{i}-{kind}", house_bot=kind)[0]
            for i, kind in enumerate(HOUSE)]
    target = f"127.0.0.1:{processes.free_port()}"
    results = []
    with (processes.terminate_on_signals(), tempfile.TemporaryDirectory(prefix="recovery-bench-") as logs,
          processes.ProcessGroup(Path(logs)) as group):
        stack = Stack(group, target=target, beat=args.beat, workers=2 if args.fault == "stop" else 1)
        for number in range(args.runs):
            result = one_run(stack, staff, bots, number=number, args=args)
            results.append(result)
            print(f"run {number + 1}: {result['after_fault']:.1f} s from the fault to the finish "
                  f"({result['total']:.1f} s in all; the referee down {result['referee_down']:.1f} s), longest stall {result['stall']:.1f} s, "
                  f"{result['games']}/{result['planned']} games, {result['rated']} rating changes, "
                  f"{result['forfeited']} forfeits, {result['retried_tables']} tables retried "
                  f"(max {result['max_attempts']} attempts){'' if result['ok'] else '  <-- NOT ALL RECORDED ONCE'}",
                  flush=True)
            group.check_alive()
    after = [r["after_fault"] for r in results]
    stalls = [r["stall"] for r in results]
    print()
    print(f"{args.fault}, beat {'on' if args.beat else 'off'}, {len(results)} runs of {14 * args.cycles * 4} games, "
          f"load average {os.getloadavg()[0]:.1f}")
    print("| | min | median | max |")
    print("| --- | ---: | ---: | ---: |")
    print(f"| fault to finish, s | {min(after):.1f} | {statistics.median(after):.1f} | {max(after):.1f} |")
    downs = [r["referee_down"] for r in results]
    print(f"| referee down (kill to answering again), s | {min(downs):.1f} | {statistics.median(downs):.1f} | "
          f"{max(downs):.1f} |")
    print(f"| longest stall, s | {min(stalls):.1f} | {statistics.median(stalls):.1f} | {max(stalls):.1f} |")
    print(f"| every game recorded once and rated | {sum(r['ok'] for r in results)} of {len(results)} runs | | |")


if __name__ == "__main__":
    main()
