"""A canary table's games/s with and without one bot token flooding through many streams.

The attack the per-bot limits answer: one token opens many streams (60 by default) and sends pings on
each just under the old per-stream limit (190/s each, 11,400/s in all), reading the
pongs; refused streams retry every second. The referee runs in its own process
(`python -m referee_service`, as deployed), the canary's two remote bots in another and
the flooder in a third; the canary table is those two bots and two house bots. Rounds
alternate: canary alone, then canary while the flood runs. The flooder runs at nice 10:
its own CPU would be the attacker's, not the referee machine's, and on 2 shared cores it
would otherwise count against the canary (its achieved rates are in the table).

    .venv/bin/python benchmarks/flood_bench.py [--quick] [--json]
    .venv/bin/python benchmarks/flood_bench.py --referee-root /path/to/old/checkout

`--referee-root` runs the referee of another checkout (e.g. a worktree of the commit
before the per-bot limits) with the same canary and flooder, for a before/after table.
tests/referee/test_fair_load.py runs this script's parts with a 20 % bar.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(1, str(ROOT / "benchmarks"))

import grpc  # noqa: E402
from referee_bench import random_bot  # noqa: E402

from bots_sdk.protocol.tienlen.v1 import bot_gateway_pb2 as gw  # noqa: E402
from bots_sdk.protocol.tienlen.v1 import organizer_pb2 as org  # noqa: E402
from bots_sdk.protocol.tienlen.v1 import organizer_pb2_grpc as org_grpc  # noqa: E402

CONNECT = "/tienlen.v1.BotGateway/Connect"
ORGANIZER_TOKEN = "flood-bench-organizer"
TOKENS = {"canary_a": "tok-canary-a-1", "canary_b": "tok-canary-b-2", "flood": "tok-flood-3"}


# ---------------------------------------------------------------- child processes

async def canary_bot(target: str, token: str) -> None:
    """A lean remote bot on the generated stubs (the referee benchmark's), four tables."""
    await random_bot(target, token, 4)


async def canaries(target: str) -> None:
    await asyncio.gather(canary_bot(target, TOKENS["canary_a"]),
                         canary_bot(target, TOKENS["canary_b"]))


async def flood(target: str, token: str, streams: int, rate: float, seconds: float,
                retry_s: float) -> dict[str, Any]:
    """`streams` streams of one token, each sending `rate` pings/s and reading the pongs;
    a refused or closed stream is opened again after `retry_s`."""
    channel = grpc.aio.insecure_channel(target)
    stats = {"accepted": 0, "open": 0, "max_open": 0, "refused": 0, "pings": 0, "pongs": 0,
             "rate_limited": 0}
    refusals: dict[str, int] = {}
    stop = time.monotonic() + seconds

    started = time.monotonic()

    def report() -> dict[str, Any]:
        elapsed = time.monotonic() - started
        return {**stats, "refusals": refusals, "seconds": elapsed,
                "pongs_per_s": stats["pongs"] / elapsed, "pings_per_s": stats["pings"] / elapsed,
                "streams_per_s": (stats["accepted"] + stats["refused"]) / elapsed,
                "cpu_s": time.process_time()}

    def end_now() -> None:
        # SIGTERM: report at once and go. Winding 60 streams down first could outlast the
        # parent's wait on a loaded machine (the flooder runs at nice 10), losing the report.
        print(json.dumps(report()), flush=True)
        os._exit(0)

    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, end_now)
    print("ready", flush=True)
    batch = max(1, round(rate / 10))  # pings per 100 ms
    ping = gw.BotMessage(ping=gw.Ping(nonce=1)).SerializeToString()

    async def one() -> None:
        while time.monotonic() < stop:
            call = channel.stream_stream(CONNECT, request_serializer=None,
                                         response_deserializer=gw.RefereeMessage.FromString)()
            welcomed: list[bool] = []

            async def read(call: Any = call, welcomed: list[bool] = welcomed) -> None:
                async for message in call:
                    kind = message.WhichOneof("body")
                    if kind == "pong":
                        stats["pongs"] += 1
                    elif kind == "welcome":
                        stats["accepted"] += 1
                        stats["open"] += 1
                        stats["max_open"] = max(stats["max_open"], stats["open"])
                        welcomed.append(True)
                    elif kind == "error" and message.error.code == gw.ERROR_CODE_RATE_LIMITED:
                        stats["rate_limited"] += 1

            reader = asyncio.ensure_future(read())
            try:
                await call.write(gw.BotMessage(hello=gw.Hello(
                    token=token, bot_name="flood", protocol_version=1)).SerializeToString())
                while time.monotonic() < stop and not reader.done():
                    tick = time.monotonic()
                    for _ in range(batch):
                        await call.write(ping)
                        stats["pings"] += 1
                    await asyncio.sleep(max(0.0, 0.1 - (time.monotonic() - tick)))
            except (grpc.aio.AioRpcError, asyncio.InvalidStateError, asyncio.CancelledError):
                pass  # refused or closed
            call.cancel()
            with contextlib.suppress(grpc.aio.AioRpcError, asyncio.CancelledError):
                await reader
            if welcomed:
                stats["open"] -= 1
            code = await call.code()
            if code != grpc.StatusCode.CANCELLED and not welcomed:
                stats["refused"] += 1
                name = code.name
                refusals[name] = refusals.get(name, 0) + 1
            if time.monotonic() < stop:
                await asyncio.sleep(retry_s)

    started = time.monotonic()
    await asyncio.gather(*[one() for _ in range(streams)])
    result = report()
    await channel.close()
    return result


def child_main(argv: list[str]) -> None:
    if argv[0] == "canary":
        asyncio.run(canaries(argv[1]))
    elif argv[0] == "flood":
        # The attacker's CPU is on the attacker's machine: here, on the same 2 cores, the
        # flooder yields to the referee and the canary, so what is measured is what the
        # referee spends on the flood (its achieved rates are reported).
        target, streams, rate, seconds, retry_s, nice = argv[1:7]
        os.nice(int(nice))
        result = asyncio.run(flood(target, TOKENS["flood"], int(streams), float(rate),
                                   float(seconds), float(retry_s)))
        print(json.dumps(result), flush=True)
        os._exit(0)  # never wait on gRPC's shutdown of cancelled calls


def spawn(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, __file__, "--child", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)


# ---------------------------------------------------------------- the referee

def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_serving(target: str, proc: subprocess.Popen[bytes], timeout: float = 30) -> None:
    from grpc_health.v1 import health_pb2, health_pb2_grpc

    deadline = time.monotonic() + timeout
    with grpc.insecure_channel(target) as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        while True:
            try:
                if stub.Check(health_pb2.HealthCheckRequest(), timeout=1).status == 1:
                    return
            except grpc.RpcError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"the referee did not start on {target}") from None
            time.sleep(0.1)


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


REFEREE_PIDS: dict[str, int] = {}  # target -> referee process id


@contextlib.contextmanager
def referee_process(root: Path = ROOT, *flags: str) -> Iterator[str]:
    """`python -m referee_service` of the checkout `root`, on a free port."""
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(root),
           "TIENLEN_BOT_TOKENS": ",".join(f"{b}:{t}" for b, t in TOKENS.items()),
           "TIENLEN_ORGANIZER_TOKEN": ORGANIZER_TOKEN, "TIENLEN_LOG_LEVEL": "warning"}
    env.pop("TIENLEN_MAX_TABLES_PER_STREAM", None)
    proc = subprocess.Popen([sys.executable, "-m", "referee_service", "--listen",
                             f"127.0.0.1:{port}", "--shutdown-grace", "0", *flags],
                            cwd=root, env=env, stderr=subprocess.DEVNULL)
    target = f"127.0.0.1:{port}"
    REFEREE_PIDS[target] = proc.pid
    try:
        wait_serving(target, proc)
        yield target
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


async def wait_for_bots(stub: org_grpc.OrganizerStub, bots: set[str],
                        timeout: float = 30) -> None:
    auth = (("authorization", f"Bearer {ORGANIZER_TOKEN}"),)
    deadline = time.monotonic() + timeout
    while True:
        try:
            listed = await stub.ListBots(org.ListBotsRequest(), metadata=auth, timeout=2)
            if bots <= {b.bot_id for b in listed.bots}:
                return
        except grpc.aio.AioRpcError:
            pass
        if time.monotonic() > deadline:
            raise RuntimeError(f"bots {sorted(bots)} did not connect")
        await asyncio.sleep(0.1)


async def canary_run(stub: org_grpc.OrganizerStub, games: int, name: str,
                     referee_pid: int | None = None) -> float:
    """Play the canary table to the end; its games per second (and, with the referee's
    process id, the referee's CPU ms per canary game in CANARY_CPU[name])."""
    cpu = cpu_seconds(referee_pid) if referee_pid else 0.0
    auth = (("authorization", f"Bearer {ORGANIZER_TOKEN}"),)
    request = org.PlayTableRequest(
        table_id=name, games=games, move_time_ms=5000, connect_deadline_ms=20_000,
        seats=[org.SeatSpec(bot_id="canary_a"), org.SeatSpec(house_bot="random"),
               org.SeatSpec(bot_id="canary_b"), org.SeatSpec(house_bot="random")])
    started = time.perf_counter()
    played = 0
    async for event in stub.PlayTable(request, metadata=auth):
        if event.WhichOneof("event") == "game":
            played += 1
        elif (event.WhichOneof("event") == "result"
              and event.result.status != org.TABLE_STATUS_COMPLETED):
            raise RuntimeError(f"canary table {name}: {event.result.detail}")
    if referee_pid:
        CANARY_CPU[name] = (cpu_seconds(referee_pid) - cpu) * 1000 / max(1, played)
    return played / (time.perf_counter() - started)


CANARY_CPU: dict[str, float] = {}


@contextlib.asynccontextmanager
async def canary_setup(target: str) -> Any:
    """The canary bots connected to the referee at `target`; yields the organiser stub."""
    bots = spawn("canary", target)
    channel = grpc.aio.insecure_channel(target)
    try:
        stub = org_grpc.OrganizerStub(channel)
        await wait_for_bots(stub, {"canary_a", "canary_b"})
        yield stub
    finally:
        bots.kill()
        bots.wait()
        await channel.close()


async def measure(target: str, *, rounds: int, games: int, streams: int, rate: float,
                  ramp_s: float = 1.5, nice: int = 10) -> dict[str, Any]:
    """Alternating rounds of the canary alone and during the flood, in one referee."""
    alone, flooded, floods = [], [], []
    pid = REFEREE_PIDS.get(target)
    async with canary_setup(target) as stub:
        await canary_run(stub, max(2, games // 4), "warmup")
        for r in range(rounds):
            alone.append(await canary_run(stub, games, f"alone-{r}", pid))
            # the flood runs from before the canary starts until after it ends
            seconds = ramp_s + 3 * games / max(alone) + 5
            flooder = spawn("flood", target, str(streams), str(rate), str(seconds), "1.0",
                            str(nice))
            assert flooder.stdout is not None
            await asyncio.to_thread(flooder.stdout.readline)  # "ready"
            await asyncio.sleep(ramp_s)
            flooded.append(await canary_run(stub, games, f"flooded-{r}", pid))
            flooder.terminate()
            try:
                out, _ = await asyncio.to_thread(flooder.communicate, timeout=30)
            except subprocess.TimeoutExpired:
                flooder.kill()
                out, _ = flooder.communicate()
            lines = [line for line in out.splitlines() if line.startswith("{")]
            floods.append(json.loads(lines[-1]) if lines else {})
    cpu = {"alone": [CANARY_CPU.get(f"alone-{r}") for r in range(rounds)],
           "flooded": [CANARY_CPU.get(f"flooded-{r}") for r in range(rounds)]}
    return {"alone": alone, "flooded": flooded, "floods": floods, "referee_cpu_ms": cpu,
            "best_ratio": max(flooded) / max(alone),
            "median_ratio": statistics.median(f / a for a, f in zip(alone, flooded, strict=True))}


async def main(args: argparse.Namespace) -> None:
    rounds = args.rounds or (2 if args.quick else 3)
    games = args.games or (60 if args.quick else 150)
    root = Path(args.referee_root).resolve() if args.referee_root else ROOT
    with referee_process(root) as target:
        result = await measure(target, rounds=rounds, games=games, streams=args.streams,
                               rate=args.rate, nice=args.flooder_nice)
    if args.json:
        print(json.dumps(result))
        return
    print(f"referee from {root}; {rounds} rounds of {games} canary games; flood: "
          f"{args.streams} streams of one token x {args.rate:g} pings/s, flooder at nice "
          f"{args.flooder_nice}\n")
    print("| round | canary alone, games/s | canary during the flood, games/s | ratio "
          "| referee CPU ms per canary game, alone / flood | flood streams open at once "
          "| flood streams refused (retries included) | streams opened/s | pings written/s "
          "| pongs/s to the flood | flooder CPU s |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    cpu = result["referee_cpu_ms"]
    for r, (a, f, fl) in enumerate(zip(result["alone"], result["flooded"], result["floods"],
                                       strict=True)):
        refused = ", ".join(f"{n} {c}" for n, c in fl.get("refusals", {}).items()) or "0"
        print(f"| {r + 1} | {a:.1f} | {f:.1f} | {f / a:.2f} "
              f"| {cpu['alone'][r]:.1f} / {cpu['flooded'][r]:.1f} "
              f"| {fl.get('max_open', '?')} | {refused} | {fl.get('streams_per_s', 0):.0f} "
              f"| {fl.get('pings_per_s', 0):.0f} | {fl.get('pongs_per_s', 0):.0f} "
              f"| {fl.get('cpu_s', 0):.1f} |")
    print(f"\nbest during the flood / best alone: {result['best_ratio']:.2f}; "
          f"median of the rounds' ratios: {result['median_ratio']:.2f}")
    print("(a refusal shows as INTERNAL when it cuts short the flooder's own writes: "
          "gRPC's client reports it so)")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child_main(sys.argv[2:])
    else:
        parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
        parser.add_argument("--quick", action="store_true", help="fewer, shorter rounds")
        parser.add_argument("--rounds", type=int, help="alternating rounds (default 3)")
        parser.add_argument("--games", type=int, help="canary games per measure (default 150)")
        parser.add_argument("--streams", type=int, default=60, help="flood streams (60)")
        parser.add_argument("--rate", type=float, default=190.0,
                            help="pings/s per flood stream (190: under the old 200/s limit)")
        parser.add_argument("--referee-root", help="run the referee of this checkout")
        parser.add_argument("--flooder-nice", type=int, default=10,
                            help="niceness of the flooder process (default 10; 0: compete "
                                 "with the referee for the cores as an equal)")
        parser.add_argument("--json", action="store_true", help="print the result as JSON")
        asyncio.run(main(parser.parse_args()))
