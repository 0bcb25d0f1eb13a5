"""Many idle bots connected to a pool of referees: time to `Welcome`, a canary's games/s, memory.

`--bots` idle bots (10,000 by default, one token each) connect to `--referees` referee
processes (2; `python -m referee_service`, as deployed, tokens in a file store): bot i
goes to referee i mod R, the fair split a pool gives. The bots are raw streams (Hello,
then read) spread over `--clients` client processes (8) at `--client-nice` (10: on the
shared 2 cores the bots' CPU is theirs, not the referee machine's; it is reported), with
`--per-channel` streams per connection (1: a bot process has its own connection). A stream
that ends before its Welcome is opened again after a second, as the SDK does.

A canary table of four house bots plays 10-game tables on the first referee throughout:
before the bots connect (baseline), while they connect and while they sit idle. Printed:
the Welcome latencies, refusals, the canary's games/s per phase, each referee's RSS and
open files before and after (memory per connected bot) and the CPU seconds of every
process over each phase against its wall time (each referee's gRPC core threads apart,
and this process: the canary's client).

    .venv/bin/python benchmarks/connections_bench.py [--bots 10000] [--referees 2]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(1, str(ROOT / "benchmarks"))

import grpc  # noqa: E402
from flood_bench import cpu_seconds, free_port, wait_serving  # noqa: E402

from bots_sdk.keepalive import client_keepalive_options  # noqa: E402
from bots_sdk.protocol.tienlen.v1 import bot_gateway_pb2 as gw  # noqa: E402
from bots_sdk.protocol.tienlen.v1 import organizer_pb2 as org  # noqa: E402
from bots_sdk.protocol.tienlen.v1 import organizer_pb2_grpc as org_grpc  # noqa: E402

CONNECT = "/tienlen.v1.BotGateway/Connect"
ORGANIZER_TOKEN = "connections-bench-organizer"


def token_of(i: int) -> str:
    return f"tok-idle-{i:06d}-bench"


# ---------------------------------------------------------------- client processes

async def idle_clients(targets: list[str], first: int, count: int, per_channel: int,
                       retry_s: float, ramp_s: float, total: int, follow: bool) -> None:
    """Bots first..first+count-1, bot i on targets[i % len]; waits for "go T0" on stdin,
    then connects them all; prints a JSON report on "report", exits on EOF. With `follow`
    a bot opens a stream to every referee its RefereePool messages list, as the SDK's
    client does (bots_sdk/client.py: one stream per live referee)."""
    loop = asyncio.get_running_loop()
    channels: dict[tuple[str, int], grpc.aio.Channel] = {}
    welcomed_at: dict[tuple[int, str], float] = {}  # (bot, referee address) -> seconds
    following: set[tuple[int, str]] = set()
    errors: dict[str, int] = {}
    details: dict[str, int] = {}
    attempts = 0
    streams: list[asyncio.Task[None]] = []
    print("ready", flush=True)
    line = await loop.run_in_executor(None, sys.stdin.readline)
    t0 = float(line.split()[1])

    def channel_for(i: int, target: str) -> grpc.aio.Channel:
        key = (target, i // per_channel)
        if key not in channels:
            # A subchannel pool of its own: channels to one target with the same
            # arguments would otherwise share one TCP connection (gRPC's global pool),
            # and a bot process has a connection of its own.
            channels[key] = grpc.aio.insecure_channel(
                target, options=[("grpc.use_local_subchannel_pool", 1),
                                 *client_keepalive_options()])
        return channels[key]

    async def stream(i: int, target: str, hello: bytes) -> None:
        nonlocal attempts
        while True:
            attempts += 1
            call = channel_for(i, target).stream_stream(
                CONNECT, request_serializer=None,
                response_deserializer=gw.RefereeMessage.FromString)()
            try:
                await call.write(hello)
                async for message in call:
                    kind = message.WhichOneof("body")
                    if kind == "welcome" and (i, target) not in welcomed_at:
                        welcomed_at[(i, target)] = time.time() - t0
                    elif kind == "pool" and follow:
                        for referee in message.pool.referees:
                            if (i, referee.address) not in following:
                                following.add((i, referee.address))
                                streams.append(loop.create_task(
                                    stream(i, referee.address, hello)))
                return  # the referee ended a welcomed stream: an idle bot stops
            except grpc.aio.AioRpcError as exc:
                errors[exc.code().name] = errors.get(exc.code().name, 0) + 1
                key = f"{exc.code().name}: {exc.details()} {exc.debug_error_string()}"[:300]
                details[key] = details.get(key, 0) + 1
            except (asyncio.InvalidStateError, grpc.aio.UsageError):
                errors["write_failed"] = errors.get("write_failed", 0) + 1
            if (i, target) in welcomed_at:
                return
            await asyncio.sleep(retry_s)

    async def bot(i: int) -> None:
        hello = gw.BotMessage(hello=gw.Hello(token=token_of(i), bot_name=f"idle-{i}",
                                             max_tables=1, protocol_version=1))
        # spread over the ramp: bot i starts at i/total of it (0: all at once)
        await asyncio.sleep(max(0.0, t0 + ramp_s * i / max(1, total) - time.time()))
        target = targets[i % len(targets)]
        following.add((i, target))
        await stream(i, target, hello.SerializeToString())

    tasks = [loop.create_task(bot(i)) for i in range(first, first + count)]
    while True:
        line = await loop.run_in_executor(None, sys.stdin.readline)
        if not line:
            break
        if line.strip() == "report":
            first_welcome: dict[int, float] = {}
            for (i, _), at in welcomed_at.items():
                first_welcome[i] = min(at, first_welcome.get(i, at))
            print(json.dumps({"welcomed": list(first_welcome.values()),
                              "streams": list(welcomed_at.values()), "errors": errors,
                              "details": dict(sorted(details.items(), key=lambda d: -d[1])[:5]),
                              "attempts": attempts, "count": count,
                              "cpu_s": time.process_time()}), flush=True)
    for task in [*tasks, *streams]:
        task.cancel()
    os._exit(0)  # never wait on gRPC's shutdown of thousands of calls


# ---------------------------------------------------------------- the referees

def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def grpc_thread_cpu(pid: int) -> float:
    """CPU seconds of a process's gRPC core threads (`event_engine`: connections, HTTP/2,
    TCP), outside the GIL; the rest of a referee's CPU is its Python threads (the event
    loop with gRPC's Cython layer, our handlers, the tables; the token checks and the
    pool heartbeat in worker threads)."""
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(OSError):
            stat = (task / "stat").read_text()
            name, rest = stat.split("(", 1)[1].rsplit(")", 1)
            if name.startswith("event_engine"):
                fields = rest.split()
                total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


def open_files(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


REFEREE_LOG: Path | None = None  # --referee-log: the referees' logs appended there
CHILDREN: list[subprocess.Popen[Any]] = []  # every process started, killed at the end


def start_referee(root: Path, store: list[str], log_level: str,
                  extra: list[str]) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(root), "TIENLEN_ORGANIZER_TOKEN": ORGANIZER_TOKEN,
           "TIENLEN_LOG_LEVEL": log_level}
    proc = subprocess.Popen(
        [sys.executable, "-m", "referee_service", "--listen", f"127.0.0.1:{port}",
         "--advertise", f"127.0.0.1:{port}", *store, "--shutdown-grace", "0",
         *extra], cwd=root, env=env,
        stderr=open(REFEREE_LOG, "ab") if REFEREE_LOG else subprocess.DEVNULL)  # noqa: SIM115
    CHILDREN.append(proc)
    target = f"127.0.0.1:{port}"
    wait_serving(target, proc)
    return proc, target


# ---------------------------------------------------------------- the canary

class Canary:
    """House-bot tables of `games` games, one after another, on one referee."""

    def __init__(self, target: str, games: int) -> None:
        self.target = target
        self.games = games
        self.tables: list[tuple[float, float, int]] = []  # (start, end, games) wall clock
        self.stop = False

    async def run(self) -> None:
        auth = (("authorization", f"Bearer {ORGANIZER_TOKEN}"),)
        async with grpc.aio.insecure_channel(self.target) as channel:
            stub = org_grpc.OrganizerStub(channel)
            n = 0
            while not self.stop:
                n += 1
                request = org.PlayTableRequest(
                    table_id=f"canary-{n}", games=self.games, move_time_ms=5000,
                    seats=[org.SeatSpec(house_bot="random") for _ in range(4)])
                started, played = time.time(), 0
                async for event in stub.PlayTable(request, metadata=auth):
                    if event.WhichOneof("event") == "game":
                        played += 1
                self.tables.append((started, time.time(), played))

    def rate(self, start: float, end: float) -> float | None:
        """Games/s of the tables that started in [start, end)."""
        inside = [t for t in self.tables if start <= t[0] < end]
        if not inside:
            return None
        return sum(t[2] for t in inside) / sum(t[1] - t[0] for t in inside)


# ---------------------------------------------------------------- the run

def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def file_store(bots: int) -> list[str]:
    """The bots' tokens in a JSON file; no pool (the referees are told nothing of each other)."""
    token_file = Path(tempfile.mkdtemp(prefix="connbench-")) / "tokens.json"
    token_file.write_text(json.dumps({"bots": [
        {"bot_id": f"idle-{i}", "token": token_of(i)} for i in range(bots)]}))
    return ["--token-store", f"file:{token_file}", "--pool", "none"]


def django_store(bots: int) -> list[str]:
    """The referees as deployed: the platform's token store (a Bot row per bot, its token's
    SHA-256 in PostgreSQL, in a database emptied and migrated for the run) and its pool
    (`--pool auto`: every referee's heartbeat writes its row with its connected bots)."""
    db_url = os.environ.get("DATABASE_URL", "")
    if not db_url.startswith("postgres"):
        sys.exit("--store django needs PostgreSQL: set DATABASE_URL=postgres://...")
    sys.path.insert(0, str(ROOT / "platform"))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tienlen_site.settings")
    from bench_db import fresh_database

    fresh_database(db_url, os.environ.get("CELERY_BROKER_URL", "redis://127.0.0.1:6379/4"))
    from django.contrib.auth.models import User
    from django.db import connections
    from django.utils import timezone

    from tournaments.models import Bot
    from tournaments.tokens import token_hash

    owner = User.objects.create_user("connections-bench")
    now = timezone.now()
    Bot.objects.bulk_create([
        Bot(owner=owner, name=f"idle-{i}", token_hash=token_hash(token_of(i)),
            token_prefix=token_of(i)[:8], token_created_at=now) for i in range(bots)],
        batch_size=2000)
    connections.close_all()
    return ["--token-store", "tournaments.token_store:DjangoTokenStore", "--pool", "auto"]


def postgres_backends() -> list[int]:
    """The PostgreSQL server processes serving this run's database (the referees' token
    checks and heartbeats): their CPU is the database's share of a connect."""
    import psycopg

    url = os.environ["DATABASE_URL"]
    name = url.rpartition("/")[2]
    with psycopg.connect(url, autocommit=True) as conn:
        rows = conn.execute("SELECT pid FROM pg_stat_activity WHERE datname = %s "
                            "AND pid <> pg_backend_pid()", (name,)).fetchall()
    return [int(r[0]) for r in rows]


async def measure(args: argparse.Namespace) -> dict[str, Any]:
    store = args.store_flags
    extra = [f for flag in args.referee_flag for f in flag.split()]
    referees = [start_referee(args.referee_root, store, args.referee_log_level, extra)
                for _ in range(args.referees)]
    targets = [t for _, t in referees]
    pids = {f"referee {n + 1}": p.pid for n, (p, _) in enumerate(referees)}
    clients: list[subprocess.Popen[str]] = []
    share = -(-args.bots // args.clients)
    for c in range(args.clients):
        first, count = c * share, min(share, args.bots - c * share)
        if count <= 0:
            break
        clients.append(subprocess.Popen(
            ["nice", "-n", str(args.client_nice), sys.executable, __file__, "--child",
             json.dumps(targets), str(first), str(count), str(args.per_channel), "1.0",
             str(args.ramp_s), str(args.bots), str(int(args.follow_pool))],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            text=True))
        CHILDREN.append(clients[-1])
    for n, client in enumerate(clients):
        assert client.stdout is not None
        client.stdout.readline()
        pids[f"client {n + 1}"] = client.pid
    canary = Canary(targets[0], args.canary_games)
    canary_task = asyncio.get_running_loop().create_task(
        canary.run() if args.canary_games else asyncio.sleep(0))
    before = {name: (rss_mb(pid), open_files(pid)) for name, pid in pids.items()
              if name.startswith("referee")}
    marks: dict[str, float] = {}
    cpu: dict[str, dict[str, float]] = {}

    last_cpu: dict[str, float] = {}
    backend_cpu: dict[int, float] = {}

    def mark(phase: str) -> None:
        marks[phase] = time.time()
        for name, pid in pids.items():  # a client that left keeps its last figure
            with contextlib.suppress(OSError):
                last_cpu[name] = cpu_seconds(pid)
                if name.startswith("referee"):
                    last_cpu[f"{name}: gRPC core threads"] = grpc_thread_cpu(pid)
        last_cpu["this process (the canary's client)"] = time.process_time()
        if args.store == "django":  # backends live as long as the referees' threads
            for pid in postgres_backends():
                with contextlib.suppress(OSError):
                    backend_cpu[pid] = cpu_seconds(pid)
            last_cpu["postgres"] = sum(backend_cpu.values())
        cpu[phase] = dict(last_cpu)
        with contextlib.suppress(OSError):
            cpu[phase]["load_1min"] = os.getloadavg()[0]

    mark("baseline")
    await asyncio.sleep(args.baseline_s)
    mark("connect")
    t0 = time.time()
    for client in clients:
        assert client.stdin is not None
        client.stdin.write(f"go {t0}\n")
        client.stdin.flush()

    async def report() -> list[dict[str, Any]]:
        out = []
        for client in clients:
            assert client.stdin is not None and client.stdout is not None
            client.stdin.write("report\n")
            client.stdin.flush()
            out.append(json.loads(await asyncio.to_thread(client.stdout.readline)))
        return out

    # connect phase: until every bot is welcomed or the --connect-timeout passes
    deadline = t0 + args.connect_timeout
    while True:
        await asyncio.sleep(2)
        reports = await report()
        welcomed = sum(len(r["welcomed"]) for r in reports)
        streams = sum(len(r["streams"]) for r in reports)
        expected = args.bots * (args.referees if args.follow_pool else 1)
        if (welcomed >= args.bots and streams >= expected) or time.time() > deadline:
            break
    mark("idle")
    await asyncio.sleep(args.idle_s)
    mark("gone")
    reports = await report()
    after = {name: (rss_mb(pid), open_files(pid)) for name, pid in pids.items()
             if name.startswith("referee")}
    for client in clients:  # the bots leave; the canary alone again, a second baseline
        assert client.stdin is not None
        client.stdin.close()
        client.wait(30)
    await asyncio.sleep(3)
    mark("after")
    await asyncio.sleep(args.baseline_s)
    mark("end")
    canary.stop = True
    with contextlib.suppress(Exception):
        await asyncio.wait_for(canary_task, 30)
    for proc, _ in referees:
        proc.kill()
        proc.wait()
    latencies = [t for r in reports for t in r["welcomed"]]
    stream_latencies = [t for r in reports for t in r["streams"]]
    errors: dict[str, int] = {}
    for r in reports:
        for code, n in r["errors"].items():
            errors[code] = errors.get(code, 0) + n
    phases = ["baseline", "connect", "idle", "gone", "after", "end"]
    spans = {p: (marks[p], marks[q]) for p, q in zip(phases, phases[1:], strict=False)}
    canary_cpu = {p: (cpu[q]["referee 1"] - cpu[p]["referee 1"]) * 1000 / max(1, sum(
        t[2] for t in canary.tables if marks[p] <= t[0] < marks[q]))
        for p, q in zip(phases, phases[1:], strict=False)}
    return {
        "bots": args.bots, "welcomed": len(latencies),
        "within_30s": sum(1 for t in latencies if t <= 30),
        "p50": percentile(latencies, 0.5), "p99": percentile(latencies, 0.99),
        "max": max(latencies, default=float("nan")),
        "streams": len(stream_latencies),
        "streams_within_30s": sum(1 for t in stream_latencies if t <= 30),
        "streams_max": max(stream_latencies, default=float("nan")),
        "attempts": sum(r["attempts"] for r in reports), "errors": errors,
        "details": [r.get("details", {}) for r in reports],
        "canary": {p: canary.rate(*span) for p, span in spans.items()},
        "canary_referee_cpu_ms": canary_cpu,
        "canary_tables": {p: sum(1 for t in canary.tables if span[0] <= t[0] < span[1])
                          for p, span in spans.items()},
        "referees": {name: {"rss_before": before[name][0], "rss_after": after[name][0],
                            "fds_before": before[name][1], "fds_after": after[name][1]}
                     for name in before},
        "cpu": {p: {name: cpu[q].get(name, 0) - cpu[p].get(name, 0)
                    for name in cpu["baseline"] if name != "load_1min"}
                for p, q in zip(phases, phases[1:], strict=False)},
        "load": {p: cpu[p].get("load_1min") for p in phases},
        "wall": {p: span[1] - span[0] for p, span in spans.items()},
    }


def print_table(result: dict[str, Any], args: argparse.Namespace) -> None:
    print(f"{result['bots']} idle bots over {args.referees} referees ({args.store} token store"
          f"{', the pool' if args.store == 'django' else ''}, referee log level "
          f"{args.referee_log_level}), {args.clients} client "
          f"processes at nice {args.client_nice}, {args.per_channel} stream(s) per "
          f"connection, starts spread over {args.ramp_s:g} s; load average at the phases: "
          + ", ".join(f"{p} {v:.2f}" for p, v in result["load"].items() if v is not None))
    print()
    print("| bots | welcomed | within 30 s | Welcome p50 s | p99 s | max s | streams welcomed "
          "(within 30 s, last s) | stream attempts | ended before Welcome |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: | --- |")
    errors = ", ".join(f"{c} {n}" for c, n in sorted(result["errors"].items())) or "none"
    print(f"| {result['bots']} | {result['welcomed']} | {result['within_30s']} "
          f"| {result['p50']:.2f} | {result['p99']:.2f} | {result['max']:.2f} "
          f"| {result['streams']} ({result['streams_within_30s']}, "
          f"{result['streams_max']:.2f}) | {result['attempts']} | {errors} |")
    details: dict[str, int] = {}
    for client in result["details"]:
        for text, n in client.items():
            details[text] = details.get(text, 0) + n
    for text, n in sorted(details.items(), key=lambda d: -d[1])[:4]:
        print(f"\n- {n} x {text}")
    print()
    rates = result["canary"]
    known = [r for r in (rates["baseline"], rates["after"]) if r]
    base = sum(known) / len(known) if known else None
    print("| canary (4 house bots, referee 1) | before the bots | while connecting "
          "| idle, all connected | after they left |")
    print("| --- | ---: | ---: | ---: | ---: |")
    cells = []
    for phase in ("baseline", "connect", "idle", "after"):
        rate = rates[phase]
        ratio = f" ({rate / base:.2f})" if rate and base else ""
        cells.append(f"{rate:.1f}{ratio}" if rate else "-")
    print(f"| games/s (ratio to the mean of before and after) | {' | '.join(cells)} |")
    tables = result["canary_tables"]
    print("| tables | " + " | ".join(str(tables[p]) for p in ("baseline", "connect", "idle",
                                                           "after")) + " |")
    print("| referee 1 CPU ms per canary game | " + " | ".join(
        f"{result['canary_referee_cpu_ms'][p]:.1f}" for p in ("baseline", "connect", "idle",
                                                           "after")) + " |")
    print()
    print("| referee | RSS before MB | RSS after MB | per connected bot KB | open files before "
          "| after |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    # the bots each referee holds: all of them when each follows the pool
    share = result["bots"] / (1 if args.follow_pool else max(1, len(result["referees"])))
    for name, r in result["referees"].items():
        per_bot = (r["rss_after"] - r["rss_before"]) * 1024 / share
        print(f"| {name} | {r['rss_before']:.0f} | {r['rss_after']:.0f} | {per_bot:.1f} "
              f"| {r['fds_before']} | {r['fds_after']} |")
    print()
    print("| CPU s / wall s | " + " | ".join(f"{p} ({result['wall'][p]:.1f} s)"
                                            for p in ("baseline", "connect", "idle")) + " |")
    print("| --- | ---: | ---: | ---: |")
    names = list(result["cpu"]["baseline"])
    for name in names:
        print(f"| {name} | " + " | ".join(
            f"{result['cpu'][p][name]:.2f}" for p in ("baseline", "connect", "idle")) + " |")
    # a referee's gRPC core threads are a part of it, not added again
    total = {p: sum(v for name, v in result["cpu"][p].items() if ":" not in name)
             for p in ("baseline", "connect", "idle")}
    print("| all of these / (2 cores x wall) | " + " | ".join(
        f"{total[p] / (2 * result['wall'][p]):.2f}" for p in ("baseline", "connect", "idle"))
        + " |")


async def main(args: argparse.Namespace) -> None:
    try:
        result = await measure(args)
    finally:  # never leave a referee or a client behind
        for proc in CHILDREN:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    if args.json:
        print(json.dumps(result))
    else:
        print_table(result, args)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        targets_json, first_s, count_s, per_channel_s, retry_s, ramp_s, total_s, follow_s = (
            sys.argv[2:10])
        asyncio.run(idle_clients(json.loads(targets_json), int(first_s), int(count_s),
                                 int(per_channel_s), float(retry_s), float(ramp_s),
                                 int(total_s), follow_s == "1"))
    else:
        parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
        parser.add_argument("--bots", type=int, default=10_000)
        parser.add_argument("--referees", type=int, default=2)
        parser.add_argument("--clients", type=int, default=8, help="client processes (8)")
        parser.add_argument("--client-nice", type=int, default=10)
        parser.add_argument("--per-channel", type=int, default=1,
                            help="streams per client connection (1)")
        parser.add_argument("--ramp-s", type=float, default=0,
                            help="bots start spread over this many seconds (0: all at once)")
        parser.add_argument("--canary-games", type=int, default=10,
                            help="games per canary table (10; 0: no canary)")
        parser.add_argument("--baseline-s", type=float, default=15)
        parser.add_argument("--idle-s", type=float, default=30)
        parser.add_argument("--connect-timeout", type=float, default=60)
        parser.add_argument("--referee-flag", action="append", default=[],
                            help="extra flags for every referee, e.g. '--capacity 8'")
        parser.add_argument("--store", choices=("file", "django"), default="file",
                            help="the referees' token store: file (a JSON file, no pool) or "
                                 "django (as deployed: the platform's DjangoTokenStore, bots "
                                 "in PostgreSQL at DATABASE_URL, and its pool)")
        parser.add_argument("--referee-log-level", default="warning",
                            help="the referees' log level (warning; info as deployed logs "
                                 "every connect)")
        parser.add_argument("--follow-pool", action="store_true",
                            help="each bot also connects to every referee its pool lists, "
                                 "as the SDK does (needs --store django: a pool)")
        parser.add_argument("--referee-root", type=Path, default=ROOT,
                            help="run the referees of this checkout (e.g. an export of the "
                                 "commit before a change, for a before/after side by side)")
        parser.add_argument("--referee-log", type=Path, default=None,
                            help="append the referees' logs (stderr) to this file")
        parser.add_argument("--json", action="store_true")
        arguments = parser.parse_args()
        REFEREE_LOG = arguments.referee_log
        # Django's set-up refuses to run inside an event loop: the bots first, then the run.
        arguments.store_flags = (django_store(arguments.bots) if arguments.store == "django"
                                 else file_store(arguments.bots))
        asyncio.run(main(arguments))
