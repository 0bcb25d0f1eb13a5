"""The SDK's bot client against the referee, next to a lean bot on the raw stubs.

One run plays the same tables with three kinds of bot process (4 processes each, over
real gRPC on loopback): the lean random bot of `referee_bench.py` (generated stubs only,
the floor), `tienlen-bot run random` (the SDK client; the example bots play on the event
loop, `Bot.threaded = False`), and the same bot with `threaded = True` (every move through
the client's worker thread, the default for a plain `play`). For each: the referee's wall
time per move at 1 table, moves per second at 16 tables, and the bot processes' CPU per
move (from /proc).

    .venv/bin/python benchmarks/sdk_client_bench.py [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import grpc

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))

import referee_bench as rb  # noqa: E402

TICKS = os.sysconf("SC_CLK_TCK")
THREADED_BOT = '''
from bots_sdk.examples.random_bot import RandomBot


class ThreadedRandom(RandomBot):
    name = "random-threaded"
    threaded = True
'''


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def start_bots(kind: str, target: str, workdir: str) -> list[subprocess.Popen]:
    if kind == "lean stub bot":
        return [rb.spawn("bot", target, b, "64") for b in rb.BOTS]
    spec = "random" if kind.endswith("event loop)") else f"{workdir}/threaded.py:ThreadedRandom"
    cli = str(Path(sys.executable).with_name("tienlen-bot"))
    return [subprocess.Popen([cli, "run", spec, "--server", target, "--token", b,
                              "--max-tables", "64", "--log-level", "WARNING"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            for b in rb.BOTS]


async def measure(kind: str, quick: bool, workdir: str) -> dict:
    out: dict = {"kind": kind}
    started: list[subprocess.Popen] = []

    def start(target: str) -> list[subprocess.Popen]:
        started.extend(start_bots(kind, target, workdir))
        return started

    async with rb.referee_with_bots(start) as (_referee, stub):
        await rb.referee_run(stub, 1, 2, "warmup")
        for tables, games in ((1, 8 if quick else 20), (16, 2 if quick else 5)):
            before = sum(cpu_seconds(b.pid) for b in started)
            run = await rb.referee_run(stub, tables, games, f"t{tables}")
            spent = sum(cpu_seconds(b.pid) for b in started) - before
            out[tables] = {"us_per_move": run["elapsed"] / run["moves"] * 1e6 * tables,
                           "moves_per_s": run["moves"] / run["elapsed"],
                           "bot_cpu_us": spent / run["moves"] * 1e6}
    return out


async def main(quick: bool) -> None:
    kinds = ["lean stub bot", "SDK client, random (event loop)", "SDK client, random (threaded)"]
    with tempfile.TemporaryDirectory() as workdir:
        Path(workdir, "threaded.py").write_text(THREADED_BOT)
        rows = [await measure(kind, quick, workdir) for kind in kinds]
    print(f"grpc {grpc.__version__}, {os.cpu_count()} cores, 4 bot processes, "
          f"{'quick' if quick else 'full'} run\n")
    print("| bots | time per move, 1 table | moves/s, 16 tables | bot CPU per move, 1 table "
          "| bot CPU per move, 16 tables |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for row in rows:
        print(f"| {row['kind']} | {row[1]['us_per_move']:.0f} µs | {row[16]['moves_per_s']:.0f} "
              f"| {row[1]['bot_cpu_us']:.0f} µs | {row[16]['bot_cpu_us']:.0f} µs |")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="shorter runs")
    asyncio.run(main(parser.parse_args().quick))
