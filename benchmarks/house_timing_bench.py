"""Does a house bot's timing tell a remote bot what is in its hand?

The audit's measurement, from a remote bot's side of the wire at real tables on the real
referee: the referee runs as deployed (`python -m referee_service` of the checkout under
test, in its own process, house bots in its worker pool), and two remote bots of this
process (raw gRPC stubs, as a bot in any language) sit at tables `[remote, house, remote,
house]`, answering every request at once (the weakest legal play, pass when none). A gap
is the time from one remote seat's answer leaving this process to the next move request
arriving here; the gaps with exactly one public move between them time one house
decision, which the game record (its replay, once the table is over) classifies:

- **passes**: voluntary (the house seat held a legal play) or forced (it held none). The
  AUC is the probability that a voluntary pass's gap is longer than a forced pass's (0.5:
  the gap says nothing; 1.0: it tells them apart every time). The bar: AUC <= 0.65 against
  every house bot. `greedy` never passes by choice (no voluntary passes to compare).
- **plays** (a second look at the same channel): the house seat's plays when following,
  those with more legal plays than the median against the others.

Row `remote (paced)`: the referee's own work that depends on a seat's hand (its legal plays,
computed and encoded into that seat's request) seen by another remote seat. Tables
`[remote, paced, remote]`: the middle seat is an SDK bot (`BotClient`) with
`min_answer_ms = --remote-pace-ms`, passing by choice a third of the times it may, so what
is left in the gap is the referee's work for that seat and the message's size: its forced
passes (no legal play to encode) against its voluntary ones, and its plays with many legal
plays against few.

    .venv/bin/python benchmarks/house_timing_bench.py [--bots random,greedy,heuristic,search] \
        [--tables 8] [--games 8] [--concurrency 4] [--search-ms 50] [--remote-pace-ms 5] \
        [--tree before=/work/main --tree after=.]

Each `--tree LABEL=PATH` runs the referee of that checkout (benchmarks/trees.py), one after
the other for every bot, so a before/after comparison is side by side in one run.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bots_sdk.protocol.tienlen.v1 import bot_gateway_pb2 as gw  # noqa: E402
from bots_sdk.protocol.tienlen.v1 import organizer_pb2 as org  # noqa: E402
from bots_sdk.protocol.tienlen.v1 import organizer_pb2_grpc as org_grpc  # noqa: E402

ORGANIZER_TOKEN = "timing-bench-organizer"
OBSERVERS = ("obs0", "obs1")
PACED = "paced"  # the third remote bot of the `remote (paced)` row
TOKENS = {b: f"timing-bench-{b}-0123456789" for b in (*OBSERVERS, PACED)}
CONNECT = "/tienlen.v1.BotGateway/Connect"
AUTH = (("authorization", f"Bearer {ORGANIZER_TOKEN}"),)
BOTS = ("random", "greedy", "heuristic", "search")


# ------------------------------------------------------------------ the referee process

def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_serving(target: str, proc: subprocess.Popen[bytes], timeout: float = 60) -> None:
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


@contextlib.contextmanager
def referee_process(root: Path = ROOT, env: dict[str, str] | None = None) -> Iterator[str]:
    """`python -m referee_service` of the checkout `root` on a free loopback port, as
    deployed (its own process, house bots in its own worker pool)."""
    port = free_port()
    environ = {**os.environ, "PYTHONPATH": str(root),
               "TIENLEN_BOT_TOKENS": ",".join(f"{b}:{t}" for b, t in TOKENS.items()),
               "TIENLEN_ORGANIZER_TOKEN": ORGANIZER_TOKEN, "TIENLEN_LOG_LEVEL": "warning",
               **(env or {})}
    proc = subprocess.Popen([sys.executable, "-m", "referee_service", "--listen",
                             f"127.0.0.1:{port}", "--shutdown-grace", "0"],
                            cwd=root, env=environ, stderr=subprocess.DEVNULL)
    target = f"127.0.0.1:{port}"
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


# ------------------------------------------------------------------ the remote bots

@dataclass
class Stamp:
    """One request received or one answer sent by a remote seat, with the public moves
    the game had then (the request's history length)."""

    kind: str  # "request" or "answer"
    history: int
    at: float
    seat: int
    bot: str


@dataclass
class Observer:
    """A remote bot on the raw stubs that answers at once and stamps every request and
    answer of every table."""

    target: str
    bot_id: str
    max_tables: int
    stamps: dict[tuple[str, int], list[Stamp]] = field(default_factory=dict)
    outgoing: asyncio.Queue[tuple[bytes, Stamp] | None] = field(default_factory=asyncio.Queue)
    welcomed: asyncio.Event = field(default_factory=asyncio.Event)
    task: asyncio.Task[None] | None = None

    async def _requests(self) -> AsyncIterator[bytes]:
        yield gw.BotMessage(hello=gw.Hello(
            token=TOKENS[self.bot_id], bot_name=self.bot_id, bot_version="1",
            max_tables=self.max_tables, protocol_version=1)).SerializeToString()
        while True:
            item = await self.outgoing.get()
            if item is None:
                return
            data, stamp = item
            stamp.at = time.perf_counter()  # as close to the wire as this side gets
            yield data

    async def run(self) -> None:
        async with grpc.aio.insecure_channel(self.target) as channel:
            call = channel.stream_stream(
                CONNECT, request_serializer=None,
                response_deserializer=gw.RefereeMessage.FromString)(self._requests())
            with contextlib.suppress(grpc.aio.AioRpcError):
                async for message in call:
                    kind = message.WhichOneof("body")
                    if kind == "welcome":
                        self.welcomed.set()
                    elif kind == "move_request":
                        self._answer(message.move_request, time.perf_counter())

    def _answer(self, request: gw.MoveRequest, arrived: float) -> None:
        view = request.view
        key = (request.table_id, request.game_index)
        stamps = self.stamps.setdefault(key, [])
        history = len(view.history)
        stamps.append(Stamp("request", history, arrived, view.seat, self.bot_id))
        plays = [list(p.cards) for p in view.legal_plays]
        move = gw.Move(table_id=request.table_id, game_index=request.game_index,
                       move_id=request.move_id)
        if plays:  # the weakest play: more plays on the table, more passes
            move.cards.extend(min(plays, key=lambda p: (max(p), len(p))))
        else:
            setattr(move, "pass", True)
        answer = Stamp("answer", history, 0.0, view.seat, self.bot_id)
        stamps.append(answer)
        self.outgoing.put_nowait((gw.BotMessage(move=move).SerializeToString(), answer))

    def start(self) -> Observer:
        self.task = asyncio.get_running_loop().create_task(self.run())
        return self

    async def close(self) -> None:
        self.outgoing.put_nowait(None)
        if self.task is not None:
            try:
                await asyncio.wait_for(self.task, 10)
            except TimeoutError:
                self.task.cancel()


def paced_bot() -> type:
    from bots_sdk import Bot

    class Paced(Bot):
        """The weakest play, or a pass by choice a third of the times it may pass (so
        that its voluntary and forced passes can be compared)."""

        threaded = False

        def __init__(self) -> None:
            self.rng = random.Random(7)

        def play(self, view: Any) -> Any:
            plays = view.legal_plays()
            if not plays or (view.can_pass and self.rng.random() < 0.3):
                return view.pass_turn()
            return min(plays, key=lambda p: (max(c.index for c in p), len(p)))

    return Paced


# ------------------------------------------------------------------ what the gaps say

def public_moves(replay: dict[str, Any]) -> list[dict[str, Any]]:
    """The game's public moves (what a seat's history shows: declined offers left out),
    each with how many legal plays its seat had when it moved."""
    from bots_sdk.rules import Game

    game = Game(replay["hands"], preset=replay["preset"], starting=replay["starting"],
                leader=replay.get("leader"), options=replay.get("options") or None)
    out = []
    for move in replay["moves"]:
        legal = len(game.legal_plays())
        following = game.table_key is not None
        if move.get("pass"):
            game.pass_turn(seat=move["seat"])
        else:
            game.play(move["cards"], seat=move["seat"])
        if move.get("offer") and move.get("pass"):
            continue  # a declined offer: never in a seat's history
        out.append({"seat": move["seat"], "pass": bool(move.get("pass")), "legal": legal,
                    "following": following})
    return out


def house_gaps(stamps: list[Stamp], moves: list[dict[str, Any]],
               measured_seats: set[int]) -> list[dict[str, Any]]:
    """Each gap from a remote answer to the next request at the table with exactly one
    public move between them, made by one of `measured_seats`."""
    out = []
    last_answer: Stamp | None = None
    for stamp in sorted(stamps, key=lambda s: s.at):
        if stamp.kind == "answer":
            last_answer = stamp
            continue
        if last_answer is not None and stamp.history == last_answer.history + 2:
            move = moves[last_answer.history + 1]
            if move["seat"] in measured_seats:
                out.append({**move, "gap_ms": (stamp.at - last_answer.at) * 1000})
        last_answer = None
    return out


def auc(high: list[float], low: list[float]) -> float | None:
    """P(a value of `high` > a value of `low`) + P(tie) / 2: the Mann-Whitney AUC."""
    if not high or not low:
        return None
    ranked = sorted([(v, 0) for v in high] + [(v, 1) for v in low])
    ranks: list[float] = [0.0] * len(ranked)
    i = 0
    while i < len(ranked):
        j = i
        while j + 1 < len(ranked) and ranked[j + 1][0] == ranked[i][0]:
            j += 1
        for k in range(i, j + 1):
            ranks[k] = (i + j) / 2 + 1
        i = j + 1
    r_high = sum(r for r, (_, group) in zip(ranks, ranked, strict=True) if group == 0)
    n1, n0 = len(high), len(low)
    return (r_high - n1 * (n1 + 1) / 2) / (n1 * n0)


def auc_interval(high: list[float], low: list[float]) -> tuple[float, float] | None:
    """A 95 % interval for the AUC (Hanley & McNeil's standard error)."""
    a = auc(high, low)
    if a is None:
        return None
    n1, n0 = len(high), len(low)
    q1, q2 = a / (2 - a), 2 * a * a / (1 + a)
    se = ((a * (1 - a) + (n1 - 1) * (q1 - a * a) + (n0 - 1) * (q2 - a * a)) / (n1 * n0)) ** 0.5
    return max(0.0, a - 1.96 * se), min(1.0, a + 1.96 * se)


def summarize(gaps: list[dict[str, Any]]) -> dict[str, Any]:
    passes = [g for g in gaps if g["pass"]]
    voluntary = [g["gap_ms"] for g in passes if g["legal"]]
    forced = [g["gap_ms"] for g in passes if not g["legal"]]
    plays = [g for g in gaps if not g["pass"] and g["following"]]
    cut = statistics.median([g["legal"] for g in plays]) if plays else 0
    many = [g["gap_ms"] for g in plays if g["legal"] > cut]
    few = [g["gap_ms"] for g in plays if g["legal"] <= cut]

    def median(xs: list[float]) -> float | None:
        return statistics.median(xs) if xs else None

    return {"voluntary": len(voluntary), "forced": len(forced),
            "voluntary_ms": median(voluntary), "forced_ms": median(forced),
            "auc": auc(voluntary, forced), "auc_ci": auc_interval(voluntary, forced),
            "plays": len(plays), "plays_auc": auc(many, few),
            "gap_ms": median([g["gap_ms"] for g in gaps])}


# ------------------------------------------------------------------ one measurement

async def play_tables(target: str, seats: list[org.SeatSpec], tables: int, games: int,
                      concurrency: int, seed: str,
                      observers: list[Observer]) -> tuple[list[dict[str, Any]], float]:
    """Play the tables (`concurrency` at a time); the gaps of the seats marked house or
    paced, and the games per second of one table."""
    records: dict[tuple[str, int], org.GameRecord] = {}
    table_seconds: list[float] = []
    queue = list(range(tables))

    async with grpc.aio.insecure_channel(target) as channel:
        stub = org_grpc.OrganizerStub(channel)

        async def worker() -> None:
            while queue:
                n = queue.pop(0)
                table_id = f"{seed}-{n}"
                request = org.PlayTableRequest(
                    table_id=table_id, seed=table_id, games=games, move_time_ms=5000,
                    connect_deadline_ms=10_000, seats=seats,
                    deal_seeds=[f"{table_id}/{i}" for i in range(games)])
                started = time.perf_counter()
                async for event in stub.PlayTable(request, metadata=AUTH, timeout=900):
                    if event.WhichOneof("event") == "game":
                        records[(table_id, event.game.game_index)] = event.game
                table_seconds.append((time.perf_counter() - started) / games)

        await asyncio.gather(*(worker() for _ in range(concurrency)))
    # the participants (indices into `seats`) whose decisions are timed
    measured = {i for i, s in enumerate(seats)
                if s.WhichOneof("player") == "house_bot" or s.bot_id == PACED}
    gaps = []
    for key, record in records.items():
        stamps = [s for o in observers if o.bot_id in OBSERVERS for s in o.stamps.get(key, [])]
        seats_measured = {seat for seat, p in enumerate(record.seat_participants)
                          if p in measured}  # seats rotate between games
        gaps.extend(house_gaps(stamps, public_moves(json.loads(record.replay_json)),
                               seats_measured))
    return gaps, 1 / statistics.mean(table_seconds)


async def measure(target: str, bot: str, tables: int, games: int, concurrency: int,
                  remote_pace_ms: float, seed: str) -> dict[str, Any]:
    """One row: tables of `bot` (a house policy, or "remote (paced)") between two
    observers, on the referee at `target`."""
    gaps, games_per_s = await collect(target, bot, tables, games, concurrency,
                                      remote_pace_ms, seed)
    return {"bot": bot, **summarize(gaps), "table_games_per_s": games_per_s}


async def collect(target: str, bot: str, tables: int, games: int, concurrency: int,
                  remote_pace_ms: float, seed: str) -> tuple[list[dict[str, Any]], float]:
    """The timed gaps of `measure` (and the games per second of one table)."""
    from bots_sdk.client import BotClient

    paced = bot == "remote (paced)"
    observers = [Observer(target, b, max_tables=concurrency).start() for b in OBSERVERS]
    client = client_task = None
    if paced:
        client = BotClient(paced_bot(), target=target, token=TOKENS[PACED],
                           max_tables=concurrency, min_answer_ms=round(remote_pace_ms))
        client_task = asyncio.create_task(client.run())
    try:
        for o in observers:
            await asyncio.wait_for(o.welcomed.wait(), 30)
        other = (org.SeatSpec(bot_id=PACED) if paced else org.SeatSpec(house_bot=bot))
        seats = ([org.SeatSpec(bot_id=OBSERVERS[0]), other, org.SeatSpec(bot_id=OBSERVERS[1])]
                 if paced else
                 [org.SeatSpec(bot_id=OBSERVERS[0]), other,
                  org.SeatSpec(bot_id=OBSERVERS[1]), other])
        return await play_tables(target, seats, tables, games, concurrency, seed, observers)
    finally:
        for o in observers:
            await o.close()
        if client is not None and client_task is not None:
            client.stop(force=True)
            await asyncio.wait_for(client_task, 10)


def house_only_cpu(games: int = 30, repeats: int = 5) -> dict[str, float]:
    """CPU per move of a table of house bots only (`random, greedy, heuristic, greedy`,
    fixed deals), played by the referee's own TableRunner in this process: what the
    pacing code costs a table nobody observes (it must play at full speed). Best of
    `repeats`, microseconds of process CPU time per move. Run in each tree by
    `--house-only` (benchmarks/trees.py)."""
    from bots_sdk.protocol.tienlen.v1 import organizer_pb2 as org_pb
    from referee_service.house import house_bot_names
    from referee_service.sessions import SessionRegistry
    from referee_service.spec import table_spec
    from referee_service.table import TableRunner

    async def one(n: int) -> float:
        spec = table_spec(org_pb.PlayTableRequest(
            table_id=f"house-only-{n}", games=games, seed="house-only",
            deal_seeds=[f"house-only/{i}" for i in range(games)],
            seats=[org_pb.SeatSpec(house_bot=b)
                   for b in ("random", "greedy", "heuristic", "greedy")]), house_bot_names())
        runner = TableRunner(spec, SessionRegistry())
        cpu = time.process_time()
        runner.start()
        moves = 0
        while True:
            event = await runner.events.get()
            kind = event.WhichOneof("event")
            if kind == "game":
                moves += len(json.loads(event.game.timing_json)["moves"])
            elif kind == "result":
                return (time.process_time() - cpu) / moves * 1e6

    async def best() -> float:
        await one(-1)  # warm-up: caches, imports
        return min([await one(n) for n in range(repeats)])

    return {"us_per_move": asyncio.run(best())}


def _fmt(value: float | None, spec: str = ".2f") -> str:
    return "—" if value is None else format(value, spec)


async def main() -> None:
    from trees import add_tree_argument, parse_trees

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bots", default=",".join(BOTS),
                        help="house bots to measure (comma-separated; 'remote' adds the "
                             "remote (paced) row)")
    parser.add_argument("--tables", type=int, default=8, help="tables per bot")
    parser.add_argument("--games", type=int, default=8, help="games per table")
    parser.add_argument("--concurrency", type=int, default=1,
                        help="tables at once (1: a quiet referee, the clearest signal)")
    parser.add_argument("--search-ms", type=float, default=50.0, help="search's budget")
    parser.add_argument("--remote-pace-ms", type=float, default=5.0,
                        help="the paced remote bot's answer time")
    parser.add_argument("--house-only", type=int, default=0, metavar="ROUNDS",
                        help="instead: CPU per move of a house-only table in each tree, "
                             "ROUNDS alternating rounds")
    add_tree_argument(parser)
    args = parser.parse_args()
    trees = parse_trees(args.tree, ROOT, "referee_service/house.py")
    if args.house_only:
        from trees import measure_in_tree

        results: dict[str, list[float]] = {label: [] for label, _, _ in trees}
        for _ in range(args.house_only):
            for label, root, python in trees:
                results[label].append(measure_in_tree(
                    root, python, "house_timing_bench", "house_only_cpu()")["us_per_move"])
        print(f"house-only table (random, greedy, heuristic, greedy), 30 games, best of 5 a "
              f"round, {args.house_only} alternating rounds; load {os.getloadavg()[0]:.2f}\n")
        print("| tree | CPU µs per move, each round | best |")
        print("| --- | --- | ---: |")
        for label, values in results.items():
            print(f"| {label} | {', '.join(f'{v:.0f}' for v in values)} | {min(values):.0f} |")
        return
    bots = [b.strip() for b in args.bots.split(",") if b.strip()]
    bots = ["remote (paced)" if b == "remote" else b for b in bots]
    rows = []
    seed = f"timing-{random.randrange(1 << 30)}"
    for bot in bots:  # each bot on every tree in turn: side by side under the same load
        for label, root, _python in trees:
            with referee_process(root, {"TIENLEN_SEARCH_MS": f"{args.search_ms:g}"}) as target:
                row = await measure(target, bot, args.tables, args.games, args.concurrency,
                                    args.remote_pace_ms, f"{seed}-{bot.split()[0]}")
            rows.append({"tree": label, **row})
            print(json.dumps(rows[-1]), file=sys.stderr)
    print(f"tables [remote, house, remote, house] ('remote (paced)': [remote, paced remote, "
          f"remote], answers held to {args.remote_pace_ms:g} ms), {args.tables} tables x "
          f"{args.games} games per bot and tree, {args.concurrency} at a time; search "
          f"{args.search_ms:g} ms; cpus {os.cpu_count()}; load before: "
          f"{os.getloadavg()[0]:.2f}\n")
    print("| bot | tree | voluntary passes | forced passes | median gap voluntary ms | "
          "forced ms | AUC voluntary vs forced [95 %] | plays AUC many vs few legal | "
          "games/s of a table |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for r in rows:
        ci = r["auc_ci"]
        interval = f" [{ci[0]:.2f}, {ci[1]:.2f}]" if ci else ""
        print(f"| {r['bot']} | {r['tree']} | {r['voluntary']} | {r['forced']} | "
              f"{_fmt(r['voluntary_ms'])} | {_fmt(r['forced_ms'])} | "
              f"{_fmt(r['auc'])}{interval} | {_fmt(r['plays_auc'])} | "
              f"{r['table_games_per_s']:.1f} |")


if __name__ == "__main__":
    import logging

    logging.disable(logging.INFO)
    asyncio.run(main())
