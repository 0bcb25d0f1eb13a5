"""A soak: a ladder of 40 bots playing for a long time through faults, then checked.

The whole stack as deployed, in real processes: `--referees` referees in the platform's
pool (2), `--workers` Celery workers (2, concurrency 2), Celery beat ticking the ladder,
`--sdk-bots` SDK bot processes (8; each given one referee's address, following the pool as
the SDK does) and house bots for the rest of the 40 entrants, on PostgreSQL and Redis.
Every `--fault-every` seconds one fault, in turn: a worker killed (SIGKILL) and another
started; a referee killed and restarted; an SDK bot process killed and restarted;
PostgreSQL restarted (`pg_ctl restart -m fast`).

PostgreSQL is, by default, an instance of its own that the soak creates (initdb into a
temporary directory, as the `postgres` user when run as root) and serves on `--pg-port`
(55432): restarting it never touches the cluster anything else on the machine uses.
`--database-url` runs on an existing database instead (it is then never restarted).

At the end beat stops, the running tables drain, and the checks: every game recorded
once (no table with a duplicate or missing game index), ratings equal to a full recompute,
no table stuck (all closed within `--drain-timeout`, none failed), the games/s per window
after warm-up, the RSS of every referee and worker instance after warm-up (least-squares
slope, MB/min, over all of it and over its later half), and the time from each fault to the next recorded game.

    .venv/bin/python benchmarks/soak.py [--duration 1200] [--fault-every 180] [--json] [--debug]

Every process runs as deployed, `DJANGO_DEBUG=0` (`--debug`: the development default).
Exit status 0 when every check passed, 1 otherwise. tests/e2e/test_soak.py runs a
2-minute version.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import secrets
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
for _path in (str(ROOT), str(ROOT / "platform")):
    if _path not in sys.path:
        sys.path.insert(0, _path)

HOUSE_KINDS = ("random", "greedy", "heuristic")
SDK_KINDS = ("greedy", "random")
FAULTS = ("worker", "referee", "bot", "postgres")


# ---------------------------------------------------------------- PostgreSQL of its own

def pg_bin(name: str) -> str:
    found = shutil.which(name)
    if found:
        return found
    candidates = sorted(Path("/usr/lib/postgresql").glob(f"*/bin/{name}"))
    if not candidates:
        raise RuntimeError(f"{name} not found (PostgreSQL server binaries)")
    return str(candidates[-1])


class OwnPostgres:
    """A throwaway PostgreSQL instance in a temporary directory, on its own port."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.dir = Path(tempfile.mkdtemp(prefix="tienlen-soak-pg-"))
        self.data = self.dir / "data"
        self.log = self.dir / "postgres.log"
        self.as_postgres: list[str] = []
        if os.geteuid() == 0:  # initdb refuses root: the cluster belongs to `postgres`
            shutil.chown(self.dir, "postgres")
            self.as_postgres = ["runuser", "-u", "postgres", "--"]

    def run(self, *argv: str) -> None:
        subprocess.run([*self.as_postgres, *argv], check=True, capture_output=True,
                       cwd=self.dir, timeout=120)

    def start(self) -> str:
        self.run(pg_bin("initdb"), "-D", str(self.data), "-A", "trust", "-U", "postgres",
                 "--no-sync")
        self.pg_ctl("start")
        subprocess.run([pg_bin("createdb"), "-h", "127.0.0.1", "-p", str(self.port),
                        "-U", "postgres", "tienlen_soak"], check=True, capture_output=True)
        return f"postgres://postgres@127.0.0.1:{self.port}/tienlen_soak"

    def pg_ctl(self, action: str, *extra: str) -> None:
        # fsync off: this instance is thrown away; a restart is a clean shutdown either way
        options = (f"-p {self.port} -k {self.dir} -c listen_addresses=127.0.0.1 "
                   "-c fsync=off -c max_connections=200")
        self.run(pg_bin("pg_ctl"), "-D", str(self.data), "-l", str(self.log), "-w",
                 "-t", "60", "-o", options, action, *extra)

    def restart(self) -> None:
        self.pg_ctl("restart", "-m", "fast")

    def stop(self) -> None:
        with contextlib.suppress(subprocess.SubprocessError, OSError):
            self.pg_ctl("stop", "-m", "immediate")
        shutil.rmtree(self.dir, ignore_errors=True)


# ---------------------------------------------------------------- measurements

def tree_rss_mb(pid: int) -> float | None:
    """RSS of a process and its descendants (a Celery worker and its pool), MB."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(parent, []).append(int(entry.name))
    total, todo, seen = 0.0, [pid], set()
    while todo:
        p = todo.pop()
        if p in seen:
            continue
        seen.add(p)
        try:
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1]) / 1024
        except OSError:
            if p == pid:
                return None
        todo.extend(children.get(p, []))
    return total


def slope_per_min(points: list[tuple[float, float]]) -> float | None:
    """Least-squares slope of (seconds, MB) points, in MB per minute."""
    if len(points) < 3:
        return None
    xs, ys = [p[0] for p in points], [p[1] for p in points]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    den = sum((x - mx) ** 2 for x in xs)
    return None if den == 0 else 60 * sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / den


@dataclass
class Fault:
    kind: str
    what: str
    at: float  # seconds since the start
    games_before: int
    recovered_after: float | None = None  # seconds from the fault to the next game


@dataclass
class Run:
    started: float = field(default_factory=time.monotonic)
    samples: list[tuple[float, int]] = field(default_factory=list)  # (t, games recorded)
    rss: dict[str, list[tuple[float, float]]] = field(default_factory=dict)  # instance -> points
    faults: list[Fault] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def now(self) -> float:
        return time.monotonic() - self.started


# ---------------------------------------------------------------- the soak

def django_setup(database_url: str, broker: str) -> None:
    os.environ["DATABASE_URL"] = database_url
    os.environ["CELERY_BROKER_URL"] = broker
    os.environ["DJANGO_SETTINGS_MODULE"] = "tests.e2e.settings_e2e"
    import django

    django.setup()


def db_retry(what: Callable[[], Any], attempts: int = 30) -> Any:
    """Run a query, reconnecting while PostgreSQL restarts."""
    from django.db import DatabaseError, InterfaceError, connection

    for n in range(attempts):
        try:
            return what()
        except (DatabaseError, InterfaceError):
            connection.close()
            if n == attempts - 1:
                raise
            time.sleep(1)
    return None


def soak(args: argparse.Namespace) -> dict[str, Any]:
    from demo import processes
    from tests.e2e.stack import MARKER_VARIABLE, broker_clear_stale, kill_marked, new_marker

    pg = None if args.database_url else OwnPostgres(args.pg_port)
    # every process of the soak carries the marker (PostgreSQL too): whoever started the
    # soak with one (tests/e2e/test_soak.py) can kill what is left if the soak is killed
    marker = os.environ.get(MARKER_VARIABLE) or new_marker()
    os.environ[MARKER_VARIABLE] = marker
    log_dir = Path(args.log_dir or tempfile.mkdtemp(prefix="tienlen-soak-logs-"))
    run = Run()
    try:
        database_url = args.database_url or pg.start()  # type: ignore[union-attr]
        organizer_token = secrets.token_urlsafe(24)
        env = {
            "DATABASE_URL": database_url, "CELERY_BROKER_URL": args.broker,
            "DJANGO_SETTINGS_MODULE": "tests.e2e.settings_e2e",
            "REFEREE_ORGANIZER_TOKEN": organizer_token, "TIENLEN_ORGANIZER_TOKEN": organizer_token,
            "TIENLEN_TOKEN_STORE": "tournaments.token_store:DjangoTokenStore",
            "TIENLEN_REFEREE_TIMEOUT_S": "3",
            "TIENLEN_LEASE_SECONDS": "6", "TIENLEN_LEASE_RENEW_SECONDS": "1.5",
            "TIENLEN_LEASE_REAP_SECONDS": "2", "TIENLEN_STALE_TABLE_SECONDS": "20",
            "TIENLEN_TICK_SECONDS": "2", "TIENLEN_LOG_LEVEL": "warning",
            MARKER_VARIABLE: marker,
            # As deployed (docker/compose.yml) unless --debug: with DEBUG on, Django keeps
            # every query's SQL in each long-lived connection's log, which is not what a
            # deployment's memory does (the fixed keeper and reaper logs grew so).
            "DJANGO_DEBUG": "1" if args.debug else "0",
            "DJANGO_SECRET_KEY": secrets.token_urlsafe(50),
        }
        os.environ.update({k: env[k] for k in ("DJANGO_DEBUG", "DJANGO_SECRET_KEY", "REFEREE_ORGANIZER_TOKEN")})  # this process's too
        subprocess.run([sys.executable, "manage.py", "migrate", "--no-input", "-v", "0"],
                       cwd=ROOT, env=processes.child_env(env), check=True, timeout=600)
        django_setup(database_url, args.broker)
        broker_clear_stale(args.broker)
        result = play(args, env, run, pg, log_dir, processes)
    finally:
        kill_marked(marker)
        if pg is not None:
            from django.db import connections

            connections.close_all()
            pg.stop()
    result["log_dir"] = str(log_dir)
    return result


def play(args: argparse.Namespace, env: dict[str, str], run: Run, pg: OwnPostgres | None,
         log_dir: Path, processes: Any) -> dict[str, Any]:
    from django.contrib.auth import get_user_model

    from tournaments.models import Game, Table, Tournament
    from tournaments.play.lifecycle import CLOSED
    from tournaments.services.accounts import bot_create
    from tournaments.services.ratings import ratings_recompute
    from tournaments.services.tournaments import (
        tournament_create,
        tournament_entrant_add,
        tournament_entrant_remove,
        tournament_start,
    )

    users = get_user_model().objects
    organiser = users.create(username="soak-organiser", is_staff=True)
    sdk_bots = []
    for n in range(args.sdk_bots):
        owner = users.create(username=f"soak-owner-{n}")
        bot, token = bot_create(owner=owner, name=f"soak-sdk-{n}")
        sdk_bots.append((bot, token, SDK_KINDS[n % len(SDK_KINDS)]))
    house = [bot_create(owner=organiser, name=f"house-soak-{n}",
                        house_bot=HOUSE_KINDS[n % len(HOUSE_KINDS)])[0]
             for n in range(args.bots - args.sdk_bots)]
    ladder = tournament_create(
        organiser=organiser, name="Soak ladder", format=Tournament.Format.LADDER,
        seats_per_table=4, games_per_table=args.games_per_table, move_time_ms=1000,
        time_bank_ms=3000, connect_deadline_s=600,
        ladder_tables_per_tick=args.tables_per_tick)
    for bot in [b for b, _, _ in sdk_bots] + house:
        tournament_entrant_add(tournament=ladder, bot=bot)

    targets = {f"ref-{n + 1}": f"127.0.0.1:{processes.free_port()}" for n in range(args.referees)}
    group = processes.ProcessGroup(log_dir)
    pids: dict[str, int] = {}  # instance name -> pid, for the RSS series
    restarts: dict[str, int] = {}

    def started(name: str) -> None:
        restarts[name] = restarts.get(name, -1) + 1
        pids[f"{name}#{restarts[name]}"] = group.processes[name].pid

    def start_referee(name: str) -> None:
        group.start(name, processes.python_argv(
            "-m", "referee_service", "--listen", targets[name], "--referee-id", name,
            "--pool-heartbeat", "0.5", "--shutdown-grace", "1"), env=env)
        processes.wait_until(lambda: processes.referee_healthy(targets[name]), timeout=120,
                             what=f"the referee {name}", group=group)
        started(name)

    def start_worker(name: str) -> None:
        group.start(name, processes.celery_worker_argv(concurrency=args.concurrency, name=name),
                    env=env)
        started(name)

    def start_bot(n: int) -> None:
        bot, token, kind = sdk_bots[n]
        group.start(f"bot-{n}", processes.python_argv(
            "-m", "bots_sdk.cli", "run", kind, "--server", list(targets.values())[n % len(targets)],
            "--max-tables", "4"), env={**env, "TIENLEN_TOKEN": token})

    def games() -> int:
        return db_retry(lambda: Game.objects.filter(table__tournament=ladder).count())

    with group:
        for name in targets:
            start_referee(name)
        for n in range(len(sdk_bots)):
            start_bot(n)
        workers = [f"worker-{n + 1}" for n in range(args.workers)]
        for name in workers:
            start_worker(name)
        group.start("beat", processes.python_argv(
            "-m", "celery", "-A", "tienlen_site.celery:app", "beat", "--loglevel", "INFO",
            "-s", str(log_dir / "beat-schedule")), env=env)
        tournament_start(tournament=ladder)
        run.started = time.monotonic()
        next_fault = args.fault_every
        next_sample = 0.0
        fault_no = 0
        def playing() -> bool:
            # The run's duration, then as long as the last faults wait for a game (up to
            # --recovery-timeout): a fault near the end is given its chance to be followed
            # by play, with no new fault meanwhile.
            if run.now() < args.duration:
                return True
            waiting = any(f.recovered_after is None for f in run.faults)
            return waiting and run.now() < args.duration + args.recovery_timeout

        while playing():
            now = run.now()
            if now >= next_sample:
                next_sample = now + args.sample_every
                count = games()
                run.samples.append((run.now(), count))
                for instance, pid in pids.items():
                    rss = tree_rss_mb(pid)
                    if rss is not None:
                        run.rss.setdefault(instance, []).append((now, rss))
                for fault in run.faults:
                    if fault.recovered_after is None and count > fault.games_before:
                        fault.recovered_after = now - fault.at
            if now >= next_fault and args.fault_every > 0 and now < args.duration:
                next_fault = now + args.fault_every
                kind = args.faults[fault_no % len(args.faults)]
                victim = fault_no // len(args.faults)
                fault_no += 1
                before = games()
                if kind == "worker":
                    name = workers[victim % len(workers)]
                    group.kill(name)
                    start_worker(name)
                elif kind == "referee":
                    name = list(targets)[victim % len(targets)]
                    group.kill(name)
                    start_referee(name)
                elif kind == "bot" and sdk_bots:
                    name = f"bot-{victim % len(sdk_bots)}"
                    group.kill(name)
                    start_bot(victim % len(sdk_bots))
                elif kind == "postgres" and pg is not None:
                    name = "postgres"
                    pg.restart()
                else:
                    run.notes.append(f"fault {kind} skipped (nothing to do it to)")
                    continue
                run.faults.append(Fault(kind, name, now, before))
            group.check_alive()
            time.sleep(0.5)
        end_of_play = run.now()
        # drain: every entrant withdrawn, so the ladder seats nobody new, while beat keeps
        # ticking (it also re-enqueues a table whose task died, e.g. on the PostgreSQL
        # restart) and the running tables finish
        for entrant in db_retry(lambda: list(ladder.entrants.select_related("bot"))):
            db_retry(lambda entrant=entrant: tournament_entrant_remove(tournament=ladder,
                                                                       bot=entrant.bot))
        deadline = time.monotonic() + args.drain_timeout

        def open_tables() -> list[tuple[int, str, int]]:
            return db_retry(lambda: list(Table.objects.filter(tournament=ladder).exclude(
                status__in=CLOSED).values_list("number", "status", "games_recorded", "attempts",
                                               "last_error")))

        while open_tables() and time.monotonic() < deadline:
            time.sleep(1)
        stuck = open_tables()
        drain_s = run.now() - end_of_play
        count = games()
        run.samples.append((run.now(), count))
        for fault in run.faults:
            if fault.recovered_after is None and count > fault.games_before:
                fault.recovered_after = run.now() - fault.at

    # ---- checks (every process is gone)
    tables = list(Table.objects.filter(tournament=ladder).values(
        "id", "number", "status", "games_recorded", "attempts"))
    recorded = list(Game.objects.filter(table__tournament=ladder).values_list("table_id", "index"))
    by_table: dict[int, list[int]] = {}
    for table_id, index in recorded:
        by_table.setdefault(table_id, []).append(index)
    bad_tables = [t["number"] for t in tables
                  if sorted(by_table.get(t["id"], [])) != list(range(t["games_recorded"]))
                  or (t["status"] == Table.Status.DONE and t["games_recorded"] != args.games_per_table)]
    failed = [t["number"] for t in tables if t["status"] == Table.Status.FAILED]
    ladder.refresh_from_db()
    report = ratings_recompute(pool=ladder.pool, write=False)

    warmup = args.warmup if args.warmup is not None else min(300.0, args.duration / 4)
    windows = []
    window_s = args.window
    t = warmup
    samples = [s for s in run.samples if s[0] <= end_of_play + 1e-6] or run.samples

    def games_at(when: float) -> float:
        before = [s for s in samples if s[0] <= when]
        return before[-1][1] if before else 0

    while t + window_s <= end_of_play + 1e-6:
        windows.append((games_at(t + window_s) - games_at(t)) / window_s)
        t += window_s
    slopes = {}
    for instance, points in run.rss.items():
        # after the run's warm-up and the instance's own (a restarted worker loads Django
        # and forks its pool: that is start-up, not a leak)
        since = max(warmup, points[0][0] + args.instance_warmup)
        after = [p for p in points if p[0] >= since]
        slope = slope_per_min(after)
        if slope is not None and after[-1][0] - after[0][0] >= args.min_series:
            # the later half alone: a cache filling up makes the whole series slope even
            # when the RSS has levelled off by the end, a leak slopes in both halves
            middle = (after[0][0] + after[-1][0]) / 2
            slopes[instance] = {"slope_mb_per_min": slope, "first_mb": after[0][1],
                                "last_mb": after[-1][1], "minutes": (after[-1][0] - after[0][0]) / 60,
                                "late_slope_mb_per_min": slope_per_min([p for p in after if p[0] >= middle])}
    checks = {
        "every game recorded once": not bad_tables and len(set(recorded)) == len(recorded),
        "ratings equal a full recompute": report.max_difference < 1e-6 and report.games == len(recorded),
        "no table stuck": not stuck,
        "no table failed": not failed,
        "every fault followed by a game": all(f.recovered_after is not None for f in run.faults),
        "games every window": bool(windows) and min(windows) > 0,
    }
    if args.max_slope is not None:
        checks[f"RSS slope under {args.max_slope:g} MB/min"] = all(
            s["slope_mb_per_min"] < args.max_slope for s in slopes.values())
    return {
        "duration_s": end_of_play, "drain_s": drain_s, "games": len(recorded), "tables": len(tables),
        "games_per_s": (games_at(end_of_play) - games_at(warmup)) / max(1e-9, end_of_play - warmup),
        "windows_games_per_s": windows, "window_s": window_s, "warmup_s": warmup,
        "faults": [vars(f) for f in run.faults], "stuck": stuck, "failed": failed,
        "bad_tables": bad_tables, "ratings_max_difference": report.max_difference,
        "rated_games": report.games, "rss": slopes, "checks": checks,
        "ok": all(checks.values()), "notes": run.notes,
        "attempts_over_1": sum(1 for t in tables if t["attempts"] > 1),
        "load_average": os.getloadavg(),
    }


def print_report(result: dict[str, Any], args: argparse.Namespace) -> None:
    print(f"soak: {args.bots} bots ({args.sdk_bots} SDK processes), {args.referees} referees, "
          f"{args.workers} workers x {args.concurrency}; {result['duration_s']:.0f} s of play, "
          f"fault every {args.fault_every:g} s; load average at the end "
          f"{', '.join(f'{v:.2f}' for v in result['load_average'])}")
    print(f"{result['games']} games in {result['tables']} tables "
          f"({result['attempts_over_1']} tables needed more than one attempt); drain "
          f"{result['drain_s']:.0f} s\n")
    print("| fault | at s | games before | next game after s |")
    print("| --- | ---: | ---: | ---: |")
    for f in result["faults"]:
        after = "never" if f["recovered_after"] is None else f"{f['recovered_after']:.1f}"
        print(f"| {f['kind']} ({f['what']}) | {f['at']:.0f} | {f['games_before']} | {after} |")
    w = result["windows_games_per_s"]
    print(f"\ngames/s after {result['warmup_s']:.0f} s of warm-up: {result['games_per_s']:.2f}; "
          f"per {result['window_s']:.0f} s window: "
          + (f"min {min(w):.2f}, median {statistics.median(w):.2f}, max {max(w):.2f}" if w else "none")
          + "\n")
    print("(#n: the n-th start of that process; a worker's RSS includes its pool's)\n")
    print("| process (instance) | RSS after warm-up MB | at the end MB | minutes | slope MB/min "
          "| slope, later half MB/min |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for name, s in sorted(result["rss"].items()):
        late = s["late_slope_mb_per_min"]
        print(f"| {name} | {s['first_mb']:.0f} | {s['last_mb']:.0f} | {s['minutes']:.1f} "
              f"| {s['slope_mb_per_min']:+.2f} | {'-' if late is None else f'{late:+.2f}'} |")
    print("\n| check | |")
    print("| --- | --- |")
    for check, ok in result["checks"].items():
        print(f"| {check} | {'ok' if ok else 'FAILED'} |")
    for number, status, recorded, attempts, error in result["stuck"]:
        print(f"stuck: table {number} {status}, {recorded} games recorded, {attempts} attempts"
              + (f", last error {error[:200]}" if error else ""))
    if result["failed"] or result["bad_tables"]:
        print(f"failed tables {result['failed']}, tables with wrong games {result['bad_tables']}")
    for note in result["notes"]:
        print(note)
    print(f"logs: {result['log_dir']}")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=1200, help="seconds of play (1200)")
    parser.add_argument("--fault-every", type=float, default=180,
                        help="seconds between faults (180; 0: none)")
    parser.add_argument("--faults", type=lambda s: s.split(","), default=list(FAULTS),
                        help="the faults, in turn (worker,referee,bot,postgres)")
    parser.add_argument("--bots", type=int, default=40)
    parser.add_argument("--sdk-bots", type=int, default=8)
    parser.add_argument("--referees", type=int, default=2)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--concurrency", type=int, default=2)
    parser.add_argument("--games-per-table", type=int, default=4)
    parser.add_argument("--tables-per-tick", type=int, default=4)
    parser.add_argument("--pg-port", type=int, default=55432)
    parser.add_argument("--database-url", help="an existing database instead of one of its own "
                                               "(then PostgreSQL is never restarted)")
    parser.add_argument("--broker", default=os.environ.get("CELERY_BROKER_URL")
                        or "redis://127.0.0.1:6379/7")
    parser.add_argument("--sample-every", type=float, default=5)
    parser.add_argument("--warmup", type=float, help="seconds (default: a quarter, at most 300)")
    parser.add_argument("--window", type=float, default=60, help="games/s window, seconds")
    parser.add_argument("--instance-warmup", type=float, default=60,
                        help="seconds of each process instance's RSS left out (its start-up)")
    parser.add_argument("--min-series", type=float, default=60,
                        help="RSS series shorter than this (seconds after warm-up) are left out")
    parser.add_argument("--max-slope", type=float, help="fail when an RSS slope is over this")
    parser.add_argument("--drain-timeout", type=float, default=240)
    parser.add_argument("--recovery-timeout", type=float, default=90,
                        help="after the duration, seconds the play goes on while a fault has had no "
                        "game after it yet (90): past that it counts as not recovered")
    parser.add_argument("--debug", action="store_true",
                        help="every process with DJANGO_DEBUG=1 (the development default) instead of as deployed")
    parser.add_argument("--log-dir")
    parser.add_argument("--json", action="store_true")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))  # finally: clean up
    result = soak(args)
    if args.json:
        print(json.dumps(result, default=str))
    else:
        print_report(result, args)
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    raise SystemExit(main())

