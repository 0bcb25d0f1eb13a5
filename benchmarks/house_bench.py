"""What a house `search` bot costs the referee's other tables, on and off the event loop.

One in-process referee plays `--tables` tables of fast house bots (greedy, heuristic;
their moves never wait on a network, so how many they make per second is how much of the
event loop they get), alone and next to one table of house `search` bots, which think
`--budget-ms` a move:

- `none`: the fast tables alone;
- `on the loop`: search's `play()` run on the referee's event loop (what a house bot did
  before `house_offload`);
- `worker process`: as shipped, in the house worker pool (referee_service/house.py).

Per scenario: the fast tables' moves per second, and the event loop's lag measured by a
probe that sleeps 5 ms in a loop (median, 99th percentile, worst), i.e. how late any other
table's or bot stream's work would start.

    .venv/bin/python benchmarks/house_bench.py [--seconds 20] [--tables 4] [--budget-ms 50]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import time
from pathlib import Path

import grpc

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bots_sdk.protocol.tienlen.v1 import organizer_pb2 as org  # noqa: E402
from bots_sdk.protocol.tienlen.v1 import organizer_pb2_grpc as org_grpc  # noqa: E402

ORGANIZER = "house-bench"
FAST = ("greedy", "heuristic", "greedy", "heuristic")
SEARCH = ("search", "heuristic", "search", "heuristic")


async def table(stub: org_grpc.OrganizerStub, table_id: str, seats: tuple[str, ...],
                stop: asyncio.Event, moves: list[int]) -> None:
    """Play tables of these house bots one after another until `stop`; count moves."""
    n = 0
    while not stop.is_set():
        n += 1
        request = org.PlayTableRequest(table_id=f"{table_id}-{n}", seed=f"{table_id}-{n}",
                                       games=4, move_time_ms=5000,
                                       seats=[org.SeatSpec(house_bot=s) for s in seats])
        call = stub.PlayTable(request, metadata=(("authorization", f"Bearer {ORGANIZER}"),))
        async for event in call:
            if event.WhichOneof("event") == "game" and not stop.is_set():
                moves[0] += len(json.loads(event.game.timing_json)["moves"])


async def scenario(name: str, seconds: float, tables: int, with_search: bool,
                   offload: bool) -> dict:
    from bots_sdk.examples.search import SearchBot
    from referee_service import house
    from referee_service.server import running_referee

    SearchBot.house_offload = offload
    async with running_referee(organizer_token=ORGANIZER) as referee:
        loop = asyncio.get_running_loop()
        if with_search and offload:  # the pool starts once per referee, not per move
            await loop.run_in_executor(house._pool(), int)
        async with grpc.aio.insecure_channel(referee.target) as channel:
            stub = org_grpc.OrganizerStub(channel)
            stop = asyncio.Event()
            moves = [0]
            tasks = [asyncio.create_task(table(stub, f"fast{i}", FAST, stop, moves))
                     for i in range(tables)]
            if with_search:
                tasks.append(asyncio.create_task(table(stub, "search", SEARCH, stop, [0])))
            lags: list[float] = []
            await asyncio.sleep(1.0)  # warm-up
            moves[0] = 0
            start = time.perf_counter()
            while time.perf_counter() - start < seconds:
                t = loop.time()
                await asyncio.sleep(0.005)
                lags.append((loop.time() - t - 0.005) * 1000)
            elapsed = time.perf_counter() - start
            done = moves[0]
            stop.set()
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
    lags.sort()
    return {"name": name, "moves_per_s": done / elapsed,
            "lag_p50": statistics.median(lags), "lag_p99": lags[int(len(lags) * 0.99)],
            "lag_max": lags[-1]}


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--tables", type=int, default=4, help="tables of fast house bots")
    parser.add_argument("--budget-ms", type=float, default=50.0, help="search's budget")
    args = parser.parse_args()
    os.environ["TIENLEN_SEARCH_MS"] = str(args.budget_ms)  # the worker processes read it
    from bots_sdk.examples.search import SearchBot

    SearchBot.budget_ms = args.budget_ms
    import logging

    logging.disable(logging.INFO)
    rows = [
        await scenario("none", args.seconds, args.tables, False, True),
        await scenario("search table, on the loop", args.seconds, args.tables, True, False),
        await scenario("search table, worker process", args.seconds, args.tables, True, True),
    ]
    base = rows[0]["moves_per_s"]
    print(f"{args.tables} tables of fast house bots; one table of search bots thinking "
          f"{args.budget_ms:g} ms a move; {args.seconds:g} s each; cpus: {os.cpu_count()}\n")
    print("| scenario | fast tables' moves/s | vs none | loop lag p50 ms | p99 ms | max ms |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for r in rows:
        print(f"| {r['name']} | {r['moves_per_s']:,.0f} | {r['moves_per_s'] / base:.0%} | "
              f"{r['lag_p50']:.1f} | {r['lag_p99']:.1f} | {r['lag_max']:.1f} |")


if __name__ == "__main__":
    asyncio.run(main())
