"""Hosted bots: what the sandbox costs a move, a start and memory.

One run, side by side, against one referee process on loopback (as deployed: the referee,
the runner with its relay, which is this process, and each bot are processes of their
own, so the relay never shares an interpreter with the referee): the same Python bot
(the weakest legal play, an SDK bot on the Python runtime's own interpreter) three ways,

- **direct**: unsandboxed, its own process on the referee's TCP port (a remote bot);
- **relay**: unsandboxed, but through the relay's unix socket (the development mode),
  so the relay's share is visible on its own;
- **sandboxed**: bubblewrap as a slot uid, cgroups, through the relay (a hosted bot),

(the relay as a runner runs it: in a process of its own, tournaments.hosting.relay_process;
`--nohop` adds **sandboxed-nohop**: the same sandboxed bot on a runner that shares the
referee's host, straight on the referee's own unix socket (`--unix-dir`,
tournaments.hosting.nohop); `--candidates` adds it and the other ways measured against it,
CANDIDATES below),

playing tables in turn (round-robin, so load drifts hit every variant alike; each table
played by an organiser client in a process of its own, as a worker would, so the relay's
loop never shares this process's interpreter lock with a table's stream), each round
twice: once as the machine is ("idle": no load of the benchmark's own) and once with
`--load N` busy loops (default 2: one per core here) running beside it, so the bar is
shown both with and without CPU contention in the same run. Per move: the referee's
measured time for the bot's seat (request sent -> answer read, from the games' timing
records), mean and median, and their ratios to direct (the bar: <= 1.2x; on a loaded
machine the median's ratio is the steadier one).
Then the start-up time of a hosted bot (start -> runtime up -> connected to the referee)
for the Python and the Node runtime, and its memory (the cgroup's peak and its current
charge after a table, and the RSS of its processes).

First, the relay alone: round trips of a 200-byte message to a TCP echo server, direct
and through the relay (its loop on asyncio, on uvloop, and socat when installed), each
side a process of its own, so the relay's event loop is what is compared.

Needs root and bubblewrap (a host that passes `python -m tournaments.hosting.check`) and
the built runtimes (`python -m tournaments.hosting.runtimes`).

    .venv/bin/python benchmarks/hosting_bench.py [--quick] [--rounds N] [--games N] [--load N] [--nohop]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

from bots_sdk.client import referee_socket_name  # noqa: E402
from bots_sdk.protocol.tienlen.v1 import organizer_pb2 as org  # noqa: E402
from referee_service.organizer_client import OrganizerClient  # noqa: E402
from tournaments.hosting import BotSpec, Host, HostingConfig  # noqa: E402
from tournaments.hosting import runtimes as rt  # noqa: E402
from tournaments.hosting.check import problems  # noqa: E402
from tournaments.hosting.relay import RelayHub  # noqa: E402

ORGANIZER = "bench-organizer"
BOT = '''
from bots_sdk import Bot


class Shedder(Bot):
    name = "shedder"
    threaded = False  # answers in well under a millisecond: on the event loop

    def play(self, view):
        plays = view.legal_plays()
        if view.can_pass and view.offer:
            return view.pass_turn()
        return min(plays, key=lambda p: (max(p), -len(p))) if plays else view.pass_turn()
'''
VARIANTS = ("direct", "relay", "sandboxed")
NOHOP = "sandboxed-nohop"  # sandboxed, straight on the referee's own unix socket (--nohop)
#: --candidates: ways of crossing to the referee measured against each other (the bar
#: under contention, benchmarks/README.md)
CANDIDATES = {
    "direct-own": "unsandboxed on the TCP port, in a session of its own (as started from a shell)",
    "sbx-thread-ns": "sandboxed, the relay in a thread of the runner, default slice (before)",
    "socat": "unsandboxed, through socat (a C relay, a process of its own) to the TCP port",
    "unix": "unsandboxed, on the referee's own unix socket (no hop)",
    "unix-own": "unsandboxed, on the referee's own unix socket (no hop), in a session of its own",
    "relay-proc-own": "unsandboxed, through a relay process, in a session of its own",
}
TOKENS = {v: f"bench-token-{v}-0123456789" for v in (*VARIANTS, NOHOP, *CANDIDATES)}


BUSY = "while True: pass"


class Busy:
    """`n` busy loops (processes of their own) while inside: CPU contention for the bots."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.procs: list[subprocess.Popen[bytes]] = []

    def __enter__(self) -> Busy:
        self.procs = [subprocess.Popen([sys.executable, "-c", BUSY]) for _ in range(self.n)]
        if self.n:
            time.sleep(1)  # the scheduler's load tracking sees them before the tables start
        return self

    def __exit__(self, *_: object) -> None:
        for proc in self.procs:
            proc.kill()
            proc.wait(10)


def referee_start(tokens: dict[str, str], unix_dir: Path) -> tuple[subprocess.Popen[bytes], str]:
    """A referee process on a free loopback port knowing `tokens` (bot id: token), and its
    address; the organiser token is ORGANIZER. It also listens on its own unix socket in
    `unix_dir` (`--unix-dir`: no hop)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        target = f"127.0.0.1:{s.getsockname()[1]}"
    args = ["--listen", target, "--pool", "none", "--token-store", "env", "--log-level", "warning",
            "--unix-dir", str(unix_dir)]
    referee = subprocess.Popen(
        [sys.executable, "-m", "referee_service", *args], cwd=ROOT,
        env={**os.environ, "TIENLEN_ORGANIZER_TOKEN": ORGANIZER, "PYTHONPATH": str(ROOT),
             "TIENLEN_BOT_TOKENS": ",".join(f"{b}:{t}" for b, t in tokens.items())})
    return referee, target


def referee_ready(client: OrganizerClient, timeout: float = 60) -> None:
    """Until the referee answers its organiser (it is still starting)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            client.list_bots()
            return
        except Exception:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def wait_connected(client: OrganizerClient, bot_id: str, timeout: float = 60) -> float:
    start = time.monotonic()
    while bot_id not in {b.bot_id for b in client.list_bots()}:
        if time.monotonic() - start > timeout:
            raise SystemExit(f"{bot_id} did not connect within {timeout} s")
        time.sleep(0.01)
    return time.monotonic()


def seat_ms(events: list, bot_id_seat: int = 0) -> list[float]:
    out = []
    for event in events:
        if isinstance(event, org.GameRecord):
            seat = list(event.seat_participants).index(bot_id_seat)
            out += [m["elapsed_ms"] for m in json.loads(event.timing_json)["moves"]
                    if m["seat"] == seat and m["fallback"] is None]
    return out


def proc_cpu_s(pid: int | None) -> float:
    """CPU seconds (user + system) of process `pid`, all its threads."""
    if pid is None:
        return 0.0
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_kib(pids: list[int]) -> int:
    total = 0
    for pid in pids:
        try:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        except OSError:
            pass
    return total


def tree(pid: int) -> list[int]:
    out = [pid]
    try:
        for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split():
            out += tree(int(child))
    except OSError:
        pass
    return out


def _echo(port: int) -> None:
    import threading

    server = socket.create_server(("127.0.0.1", port))
    while True:
        conn, _ = server.accept()
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

        def serve(c: socket.socket = conn) -> None:
            while data := c.recv(65536):
                c.sendall(data)

        threading.Thread(target=serve, daemon=True).start()


def _relay(directory: str, address: str, loop: str) -> None:
    import asyncio

    import tournaments.hosting.relay as relay

    if loop == "asyncio":
        relay._new_loop = asyncio.new_event_loop  # type: ignore[assignment]
    relay.RelayHub(short_slice=loop != "uvloop-noslice").open(Path(directory), [address])
    time.sleep(3600)


def round_trips(sock: socket.socket, n: int) -> list[float]:
    out = []
    for _ in range(n):
        start = time.perf_counter()
        sock.sendall(b"x" * 200)
        sock.recv(65536)
        out.append((time.perf_counter() - start) * 1e6)
    return out


def relay_table(n: int) -> None:
    import shutil

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    address = f"127.0.0.1:{port}"
    work = Path(tempfile.mkdtemp(prefix="tlhr-", dir="/tmp"))
    me = [sys.executable, __file__]
    procs = [subprocess.Popen([*me, "--_echo", str(port)])]
    for loop in ("asyncio", "uvloop"):
        (work / loop).mkdir()
        procs.append(subprocess.Popen([*me, "--_relay", str(work / loop), address, loop]))
    socat = shutil.which("socat")
    if socat:
        procs.append(subprocess.Popen([socat, f"UNIX-LISTEN:{work}/socat.sock,fork",
                                       f"TCP:{address},nodelay"]))
    try:
        paths = {"asyncio relay": work / "asyncio" / "seed.sock",
                 "uvloop relay": work / "uvloop" / "seed.sock"}
        if socat:
            paths["socat"] = work / "socat.sock"
        deadline = time.monotonic() + 60
        while not all(p.exists() for p in paths.values()) or not _listening(port):
            if time.monotonic() > deadline:
                raise SystemExit("the relays did not start")
            time.sleep(0.05)
        socks = {"direct TCP": socket.create_connection(("127.0.0.1", port))}
        for name, path in paths.items():
            socks[name] = socket.socket(socket.AF_UNIX)
            socks[name].connect(str(path))
        results: dict[str, list[float]] = {name: [] for name in socks}
        for _ in range(3):  # interleaved, so load drifts hit each alike
            for name, sock in socks.items():
                results[name] += round_trips(sock, n)
        print(f"relay alone: {3 * n} round trips of 200 bytes each (microseconds)")
        print(f"{'path':<15} {'median':>7} {'mean':>7} {'p90':>7}")
        for name, xs in results.items():
            print(f"{name:<15} {statistics.median(xs):>7.0f} {statistics.fmean(xs):>7.0f} "
                  f"{statistics.quantiles(xs, n=10)[-1]:>7.0f}")
    finally:
        for proc in procs:
            proc.kill()
            proc.wait(10)
        shutil.rmtree(work, ignore_errors=True)


def _listening(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), 1).close()
        return True
    except OSError:
        return False


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "--_echo":
        _echo(int(sys.argv[2]))
    if len(sys.argv) > 1 and sys.argv[1] == "--_relay":
        _relay(*sys.argv[2:5])
    if len(sys.argv) > 1 and sys.argv[1] == "--_play":
        target, variant, table, games, seed = sys.argv[2:7]
        with OrganizerClient(target, ORGANIZER, timeout=600) as client:
            events = list(client.play_table(table_id=table, games=int(games), seed=seed,
                                            seats=[variant, "house:greedy", "house:random", "house:heuristic"]))
        print(json.dumps({"ms": seat_ms(events), "strikes": int(events[-1].strikes[0])}))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a short run (does it work?)")
    parser.add_argument("--rounds", type=int, default=8, help="tables per variant (default 8)")
    parser.add_argument("--games", type=int, default=25, help="games per table (default 25)")
    parser.add_argument("--starts", type=int, default=5, help="start-ups timed per runtime")
    parser.add_argument("--load", type=int, default=2,
                        help="busy loops beside the loaded half of each round (default 2; 0: no loaded half)")
    parser.add_argument("--candidates", action="store_true",
                        help="also the other ways to the referee: " + "; ".join(
                            f"{k}: {v}" for k, v in CANDIDATES.items()))
    parser.add_argument("--nohop", action="store_true",
                        help=f"also {NOHOP}: sandboxed, straight on the referee's own unix socket")
    parser.add_argument("--no-startup", action="store_true", help="per move only")
    args = parser.parse_args()
    variants: tuple[str, ...] = VARIANTS
    if args.nohop or args.candidates:
        variants = (*variants, NOHOP)
    if args.candidates:
        variants = (*variants, *CANDIDATES)
    if args.quick:
        args.rounds, args.games, args.starts = 2, 5, 2
    print(f"load before: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f}"
          f" (1/5/15 min) on {os.cpu_count()} cores\n")
    relay_table(300 if args.quick else 3000)
    state = Path(tempfile.mkdtemp(prefix="tlhb-", dir="/tmp"))
    config = HostingConfig(state_dir=state, runtimes_dir=rt.default_dir(),
                           uid_base=1_650_000, slots=6, cgroup_base="tienlen-sandbox-bench")
    found = problems(config)
    if found:
        print("hosting_bench: this host cannot sandbox bots: " + "; ".join(found))
        return 1
    runtimes = {name: rt.ensure(name, config.runtimes_dir) for name in ("python3.11", "node20")}
    python = runtimes["python3.11"]
    code = state / "code"
    code.mkdir()
    (code / "bot.py").write_text(BOT)
    os.chmod(state, 0o711)
    os.chmod(code, 0o755)
    os.chmod(code / "bot.py", 0o644)
    js = state / "js"
    js.mkdir()
    (js / "bot.js").write_text((ROOT / "bots_sdk/examples/javascript/bot.js").read_text())

    tokens = {**TOKENS, "starter": "bench-start-token-0123456789"}
    sockets = state / "referees"
    referee, target = referee_start(tokens, sockets)
    unix = sockets / referee_socket_name(target)
    host = Host(config)
    dev = Host(dataclasses.replace(config, unsandboxed=True))
    extra_hosts = []
    if NOHOP in variants:
        nohop_host = Host(dataclasses.replace(config, referee_sockets=sockets))
        extra_hosts.append(nohop_host)
    if args.candidates:
        thread_ns = Host(config)
        thread_ns.hub = RelayHub(short_slice=False)
        extra_hosts.append(thread_ns)
    procs: list[subprocess.Popen[bytes]] = []
    bots = []
    try:
        with OrganizerClient(target, ORGANIZER, timeout=600) as client:
            referee_ready(client)
            # ---- per move, side by side
            def unsandboxed(variant: str, server: str) -> None:
                procs.append(subprocess.Popen(start_new_session=variant.endswith("-own"), args=
                    [*python.launcher(rt.Layout(runtime=str(python.root))), "run", str(code / "bot.py"),
                     "--server", server, "--max-tables", "1"],
                    env={"PATH": "/usr/bin:/bin", "TIENLEN_TOKEN": TOKENS[variant], "TIENLEN_STATUS_FD": ""},
                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))

            def hosted(variant: str, on: Host) -> Any:
                return on.start(BotSpec(runtime="python3.11", code_dir=code, token=TOKENS[variant],
                                        referees=[target], max_tables=1))

            unsandboxed("direct", target)
            bots.append(dev.start(BotSpec(runtime="python3.11", code_dir=code, token=TOKENS["relay"],
                                          referees=[target], max_tables=1)))
            bots.append(hosted("sandboxed", host))
            if NOHOP in variants:
                bots.append(hosted(NOHOP, nohop_host))
                if not bots[-1].local:
                    raise SystemExit(f"{NOHOP}: the runner found no referee socket in {sockets}")
            if args.candidates:
                bots.append(hosted("sbx-thread-ns", thread_ns))
                unsandboxed("direct-own", target)
                unsandboxed("unix-own", f"unix:{unix}")
                socat_sock = state / "socat.sock"
                procs.append(subprocess.Popen(["socat", f"UNIX-LISTEN:{socat_sock},fork",
                                               f"TCP:{target},nodelay"]))
                while not socat_sock.exists():
                    time.sleep(0.05)
                unsandboxed("socat", f"unix:{socat_sock}")
                unsandboxed("unix", f"unix:{unix}")
                (state / "rp").mkdir()
                procs.append(subprocess.Popen([sys.executable, __file__, "--_relay", str(state / "rp"),
                                               target, "uvloop"]))
                while not (state / "rp" / "seed.sock").exists():
                    time.sleep(0.05)
                unsandboxed("relay-proc-own", f"unix:{state / 'rp' / 'seed.sock'}")
            for variant in variants:
                wait_connected(client, variant)
            relay_pids = [getattr(h.hub, "pid", None) for h in (dev, host)]  # "relay", "sandboxed"
            print(f"the runner's relay: {'processes of their own' if all(relay_pids) else 'a thread'}")
            relay_cpu0, wall0 = sum(map(proc_cpu_s, relay_pids)), time.monotonic()
            phases = [0, args.load] if args.load else [0]
            samples: dict[tuple[int, str], list[float]] = {(p, v): [] for p in phases for v in variants}
            strikes = dict.fromkeys(samples, 0)
            loads: dict[int, list[float]] = {p: [] for p in phases}
            for r in range(args.rounds + 1):
                for phase in phases:  # alternating: idle, loaded, idle, loaded, ...
                    with Busy(phase):
                        # each round in another order: no variant always first after the
                        # busy loops start (the scheduler's load tracking takes a moment)
                        for variant in variants[r % len(variants):] + variants[:r % len(variants)]:
                            # played from a process of its own: the organiser's stream never
                            # shares an interpreter (and its lock) with the relay's loop,
                            # as on a platform (the workers are not the runners)
                            out = subprocess.run(
                                [sys.executable, __file__, "--_play", target, variant, f"{variant}-{phase}-{r}",
                                 str(args.games), f"bench-{r}"], capture_output=True, text=True, check=True)
                            played = json.loads(out.stdout.strip().splitlines()[-1])
                            strikes[phase, variant] += played["strikes"]
                            if r:  # the first round warms every path up
                                samples[phase, variant] += played["ms"]
                        loads[phase].append(os.getloadavg()[0])
            for phase in phases:
                what = f"with {phase} busy loops beside it" if phase else "as the machine is (no load of its own)"
                print(f"\nper move, {what}: {args.rounds} tables x {args.games} games per variant, "
                      f"4 seats, round-robin; load average {min(loads[phase]):.1f}-{max(loads[phase]):.1f}")
                print(f"{'variant':<15} {'moves':>7} {'mean ms':>8} {'median':>8} {'p90':>8} "
                      f"{'mean vs direct':>15} {'median vs direct':>17} {'strikes':>8}")
                base = statistics.fmean(samples[phase, "direct"])
                base_median = statistics.median(samples[phase, "direct"])
                for variant in variants:
                    ms = samples[phase, variant]
                    p90 = statistics.quantiles(ms, n=10)[-1]
                    print(f"{variant:<15} {len(ms):>7} {statistics.fmean(ms):>8.3f} "
                          f"{statistics.median(ms):>8.3f} {p90:>8.3f} "
                          f"{statistics.fmean(ms) / base:>14.2f}x "
                          f"{statistics.median(ms) / base_median:>16.2f}x {strikes[phase, variant]:>8}")
                for hosted_variant in ("sandboxed", NOHOP):
                    if hosted_variant in variants:
                        ratio = statistics.median(samples[phase, hosted_variant]) / base_median
                        print(f"bar ({hosted_variant} vs direct, median <= 1.2x): {ratio:.2f}x, "
                              f"{'met' if ratio <= 1.2 else 'NOT met'}")
            relayed = sum(len(samples[p, v]) for p in phases for v in ("relay", "sandboxed"))
            relay_cpu = sum(map(proc_cpu_s, relay_pids)) - relay_cpu0
            print(f"\nthe relay processes: {relay_cpu:.2f} CPU s in {time.monotonic() - wall0:.0f} s of wall time "
                  f"({1e3 * relay_cpu / max(1, relayed):.3f} ms per move it relayed, two variants' tables; "
                  f"the first round's not counted in the moves)")
            if NOHOP in variants:
                print(f"\n{NOHOP}: sandboxed, straight on the referee's own unix socket (no hop); "
                      f"through its relay: {bots[2].relay.stats.accepted if bots[2].relay else 0} connections "
                      "(every move straight)")
            if args.candidates:
                print("\n" + "\n".join(f"{k}: {v}" for k, v in CANDIDATES.items()))
            sandboxed = bots[1]
            usage = sandboxed.usage()
            rss = rss_kib(tree(sandboxed.sandbox_pid)) if sandboxed.sandbox_pid else 0
            memory = [("python3.11", usage, rss)]
            for bot in bots:
                bot.stop(0)
            bots.clear()
            if args.no_startup:
                return 0

            # ---- start-up
            print(f"\nstart-up of a hosted bot ({args.starts} starts each; median, min-max)")
            print(f"{'runtime':<11} {'to runtime up':>14} {'to connected':>14}")
            for name, folder in (("python3.11", code), ("node20", js)):
                up, conn = [], []
                for i in range(args.starts):
                    t0 = time.monotonic()
                    bot = host.start(BotSpec(runtime=name, code_dir=folder,
                                             token="bench-start-token-0123456789",
                                             referees=[target]))
                    if not bot.wait_started(60):
                        raise SystemExit(f"{name} did not start: {bot.stop(0).detail}")
                    up.append(time.monotonic() - t0)
                    conn.append(wait_connected(client, "starter") - t0)
                    if name == "node20" and i == args.starts - 1:
                        client_events = list(client.play_table(
                            table_id="node-mem", games=args.games,
                            seats=["starter", "house:greedy", "house:random", "house:heuristic"]))
                        assert client_events[-1].status == org.TABLE_STATUS_COMPLETED
                        memory.append(("node20", bot.usage(),
                                       rss_kib(tree(bot.sandbox_pid)) if bot.sandbox_pid else 0))
                    bot.stop(0)
                    while "starter" in {b.bot_id for b in client.list_bots()}:
                        time.sleep(0.01)

                def fmt(xs: list[float]) -> str:
                    return f"{1000 * statistics.median(xs):.0f} ({1000 * min(xs):.0f}-{1000 * max(xs):.0f}) ms"

                print(f"{name:<11} {fmt(up):>14} {fmt(conn):>14}")
            # the sandbox's own share: a session that runs /usr/bin/true and ends
            alone = []
            for _ in range(args.starts):
                t0 = time.monotonic()
                bot = host.start(BotSpec(runtime="python3.11", code_dir=code,
                                         command=["/usr/bin/true"], referees=[target]))
                bot.wait(60)
                alone.append(time.monotonic() - t0)
            print(f"{'the sandbox alone (start, run /usr/bin/true, end, clean up)':<40} {fmt(alone)}")

            print("\nmemory of a hosted bot after a table (its cgroup; RSS of its processes)")
            print(f"{'runtime':<11} {'cgroup peak':>12} {'cgroup now':>11} {'RSS':>9}")
            for name, use, rss_k in memory:
                assert use is not None
                print(f"{name:<11} {(use.memory_peak_bytes or 0) / 2**20:>9.1f} MiB "
                      f"{(use.memory_current_bytes or 0) / 2**20:>7.1f} MiB {rss_k / 1024:>5.1f} MiB")
    finally:
        for bot in bots:
            bot.stop(0)
        for proc in [*procs, referee]:
            proc.terminate()
            proc.wait(10)
        host.close()
        dev.close()
        for extra in extra_hosts:
            extra.close()
        import shutil

        shutil.rmtree(state, ignore_errors=True)
        for h in host.cgroups.used():
            base = host.cgroups.base_dir(h)
            if base.exists():
                base.rmdir()
    print(f"\nload after: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
