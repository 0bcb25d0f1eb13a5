"""Hosted bots: the capacity model of a runner, measured (docs/deployment.md, "Runners").

Per hosted bot, on the real sandbox (bubblewrap as a slot uid, cgroups, the relay) against
one referee process on loopback, with an SDK example bot (greedy) on the Python runtime:

- **start-up, on demand**: a cold start (claim a slot, copy the code, cgroups, relay,
  bwrap, the runtime's interpreter and the SDK) until the referee has its Welcome (it
  lists the bot), in wall time, and the CPU it costs: the bot's cgroup and the runner
  process (this one: bwrap's set-up; and its relay process);
- **memory, warm**: RSS and PSS of the sandbox's processes (bwrap, the bot; PSS shares
  the interpreter's and libraries' pages between the bots that map them) with `--bots`
  bots resident at once, and what each one's cgroup is charged;
- **CPU per move and per game**: the bot's cgroup CPU over its tables, divided by its
  moves (the referee's timing records) and by the games, plus the relay's share (the
  runner's relay process's CPU over the same tables);
- **idle, warm**: the CPU a connected bot with no table uses per second (the SDK's pool
  following and keepalives);
- **bots per core** at a game rate (`--game-rate`, games per second per bot): one core's
  second divided by what a bot costs in that second — warm: idle CPU + rate x CPU per
  game; on demand: rate x (CPU per game + start CPU / games per table).

    .venv/bin/python benchmarks/hosting_capacity.py [--quick] [--bots 4] [--games 20] [--game-rate 0.5]

Needs root and bubblewrap (a host that passes `python -m tournaments.hosting.check`) and
the built python3.11 runtime (`make hosting-runtimes`).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))

from hosting_bench import (  # noqa: E402
    ORGANIZER,
    referee_ready,
    referee_start,
    rss_kib,
    tree,
    wait_connected,
)

from bots_sdk.protocol.tienlen.v1 import organizer_pb2 as org  # noqa: E402
from referee_service.organizer_client import OrganizerClient  # noqa: E402
from tournaments.hosting import BotSpec, Host, HostingConfig  # noqa: E402
from tournaments.hosting import runtimes as rt  # noqa: E402
from tournaments.hosting.check import problems  # noqa: E402

BOT = '''
from bots_sdk.examples import GreedyBot


class Capacity(GreedyBot):
    """The SDK's greedy example, hosted."""
'''
HOUSE = ["house:greedy", "house:random", "house:heuristic"]


def pss_kib(pids: list[int]) -> int:
    total = 0
    for pid in pids:
        try:
            for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
                if line.startswith("Pss:"):
                    total += int(line.split()[1])
        except OSError:
            pass
    return total


def relay_process_cpu_s(host: Host) -> float:
    """CPU seconds of the Host's relay process (0 when it relays in a thread: that is in
    this process's own time already)."""
    return thread_cpu_s(host) if getattr(host.hub, "pid", None) is not None else 0.0


def thread_cpu_s(host: Host) -> float:
    """CPU seconds (user + system) of the Host's relay: its process (tournaments.hosting.
    relay_process), or its thread when it relays in one."""
    pid = getattr(host.hub, "pid", None)
    if pid is not None:
        stat = Path(f"/proc/{pid}/stat")
    else:
        thread = getattr(host.hub, "_thread", None)
        if thread is None or thread.native_id is None:
            return 0.0
        stat = Path(f"/proc/self/task/{thread.native_id}/stat")
    fields = stat.read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def moves_of(events: list, seat_bot: int = 0) -> tuple[int, int]:
    """(moves of seat 0 the bot answered, games) in a table's events."""
    moves = games = 0
    for event in events:
        if isinstance(event, org.GameRecord):
            games += 1
            seat = list(event.seat_participants).index(seat_bot)
            moves += sum(1 for m in json.loads(event.timing_json)["moves"]
                         if m["seat"] == seat and m["fallback"] is None)
    return moves, games


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a short run (does it work?)")
    parser.add_argument("--bots", type=int, default=4, help="hosted bots resident at once (default 4)")
    parser.add_argument("--games", type=int, default=20, help="games per table (default 20)")
    parser.add_argument("--starts", type=int, default=5, help="cold starts timed (default 5)")
    parser.add_argument("--idle-s", type=float, default=10.0, help="seconds of idle measured (default 10)")
    parser.add_argument("--game-rate", type=float, default=0.5,
                        help="games per second per bot for the bots-per-core line (default 0.5)")
    args = parser.parse_args()
    if args.quick:
        args.bots, args.games, args.starts, args.idle_s = 2, 4, 2, 3.0
    load = os.getloadavg()
    print(f"load before: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} (1/5/15 min) on {os.cpu_count()} cores")
    state = Path(tempfile.mkdtemp(prefix="tlhc-", dir="/tmp"))
    config = HostingConfig(state_dir=state, runtimes_dir=rt.default_dir(), uid_base=1_660_000,
                           slots=args.bots + 1, cgroup_base="tienlen-sandbox-capacity")
    found = problems(config)
    if found:
        print("hosting_capacity: this host cannot sandbox bots: " + "; ".join(found))
        return 1
    rt.ensure("python3.11", config.runtimes_dir)
    code = state / "code"
    code.mkdir()
    (code / "bot.py").write_text(BOT)
    for path, mode in ((state, 0o711), (code, 0o755), (code / "bot.py", 0o644)):
        os.chmod(path, mode)
    tokens = {f"cap{i}": f"capacity-token-{i}-0123456789" for i in range(args.bots)}
    tokens["cold"] = "capacity-cold-token-0123456789"
    referee, target = referee_start(tokens)
    host = Host(config)
    bots = []
    try:
        with OrganizerClient(target, ORGANIZER, timeout=600) as client:
            referee_ready(client)

            # ---- on demand: cold starts until the referee lists the bot
            starts_wall, starts_bot_cpu, starts_runner_cpu = [], [], []
            for _ in range(args.starts):
                cpu0, t0 = time.process_time() + relay_process_cpu_s(host), time.monotonic()
                bot = host.start(BotSpec(runtime="python3.11", code_dir=code, token=tokens["cold"],
                                         referees=[target], max_tables=1))
                wait_connected(client, "cold")
                starts_wall.append(time.monotonic() - t0)
                starts_runner_cpu.append(time.process_time() + relay_process_cpu_s(host) - cpu0)
                usage = bot.usage()
                starts_bot_cpu.append((usage.cpu_seconds or 0.0) if usage else 0.0)
                bot.stop(0)
                while "cold" in {b.bot_id for b in client.list_bots()}:
                    time.sleep(0.01)

            # ---- warm: args.bots resident, each plays a table (in turn), then idles
            for i in range(args.bots):
                bots.append(host.start(BotSpec(runtime="python3.11", code_dir=code, token=tokens[f"cap{i}"],
                                               referees=[target], max_tables=1)))
            for i in range(args.bots):
                wait_connected(client, f"cap{i}")
            time.sleep(1.0)
            cpu_before = [(b.usage().cpu_seconds or 0.0) for b in bots]
            relay_before = thread_cpu_s(host)
            counted: list[tuple[int, int]] = []
            wall0 = time.monotonic()
            errors: list[str] = []

            def play(i: int) -> None:
                try:
                    with OrganizerClient(target, ORGANIZER, timeout=600) as own:
                        events = list(own.play_table(table_id=f"cap-{i}", games=args.games, seed=f"cap-{i}",
                                                     seats=[f"cap{i}", *HOUSE]))
                    if events[-1].status != org.TABLE_STATUS_COMPLETED:
                        errors.append(f"table cap-{i}: {events[-1]}")
                    counted.append(moves_of(events))
                except Exception as exc:  # reported below
                    errors.append(f"table cap-{i}: {exc}")

            threads = [threading.Thread(target=play, args=(i,)) for i in range(args.bots)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            wall = time.monotonic() - wall0
            moves, games = sum(m for m, _ in counted), sum(g for _, g in counted)
            if errors:
                raise SystemExit("; ".join(errors))
            relay_cpu = thread_cpu_s(host) - relay_before
            bot_cpu = sum((b.usage().cpu_seconds or 0.0) - c for b, c in zip(bots, cpu_before, strict=True))
            rss = [rss_kib(tree(b.sandbox_pid)) for b in bots if b.sandbox_pid]
            pss = [pss_kib(tree(b.sandbox_pid)) for b in bots if b.sandbox_pid]
            charged = [(b.usage().memory_current_bytes or 0) / 2**20 for b in bots]
            idle_before = [(b.usage().cpu_seconds or 0.0) for b in bots]
            relay_idle0 = thread_cpu_s(host)
            time.sleep(args.idle_s)
            idle = (sum((b.usage().cpu_seconds or 0.0) - c for b, c in zip(bots, idle_before, strict=True))
                    + thread_cpu_s(host) - relay_idle0) / (args.bots * args.idle_s)
    finally:
        for bot in bots:
            bot.stop(0)
        referee.terminate()
        referee.wait(10)
        host.close()
        shutil.rmtree(state, ignore_errors=True)
        for h in host.cgroups.used():
            base = host.cgroups.base_dir(h)
            if base.exists():
                base.rmdir()

    per_move_ms = 1000 * bot_cpu / moves
    per_game_ms = 1000 * (bot_cpu + relay_cpu) / games
    relay_game_ms = 1000 * relay_cpu / games
    start_cpu = statistics.median(starts_bot_cpu) + statistics.median(starts_runner_cpu)

    def ms(xs: list[float]) -> str:
        return f"{1000 * statistics.median(xs):.0f} ({1000 * min(xs):.0f}-{1000 * max(xs):.0f})"

    print(f"\n{args.bots} hosted bots (the SDK's greedy example, python3.11), each at a table of {args.games} "
          f"games with 3 house bots, the tables at once ({wall:.1f} s)\n")
    rows = [
        ("cold start to Welcome, wall ms: median (min-max)", ms(starts_wall)),
        ("cold start, CPU ms: the bot's cgroup", ms(starts_bot_cpu)),
        ("cold start, CPU ms: the runner (bwrap set-up, relay)", ms(starts_runner_cpu)),
        ("memory per warm bot: RSS of its processes, MiB", f"{statistics.fmean(rss) / 1024:.1f}"),
        ("memory per warm bot: PSS (shared pages split), MiB", f"{statistics.fmean(pss) / 1024:.1f}"),
        ("memory per warm bot: charged to its cgroup, MiB", f"{statistics.fmean(charged):.1f}"),
        ("CPU per move of the bot (its cgroup), ms", f"{per_move_ms:.2f}"),
        ("moves per game of the bot", f"{moves / games:.1f}"),
        ("CPU per game: the bot + its relay share, ms", f"{per_game_ms:.1f}"),
        ("  of which the relay (the runner's relay process), ms", f"{relay_game_ms:.1f}"),
        ("CPU of a warm idle bot (with its relay), ms per s", f"{1000 * idle:.2f}"),
    ]
    width = max(len(r[0]) for r in rows)
    for name, value in rows:
        print(f"{name:<{width}}  {value:>14}")
    rate = args.game_rate
    warm = 1.0 / (idle + rate * per_game_ms / 1000)
    demand = 1.0 / (rate * (per_game_ms / 1000 + start_cpu / args.games))
    print(f"\nbots per core at {rate:g} games/s per bot ({args.games}-game tables):")
    print(f"  warm (resident, idle cost + games):           {warm:8.0f}")
    print(f"  on demand (a start per table + games):        {demand:8.0f}")
    print(f"  saturated (games only, no idle, no start):    {1.0 / (rate * per_game_ms / 1000):8.0f}")
    print(f"  memory for 100 warm bots (PSS):               {100 * statistics.fmean(pss) / 1024:8.0f} MiB")
    load = os.getloadavg()
    print(f"\nload after: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
