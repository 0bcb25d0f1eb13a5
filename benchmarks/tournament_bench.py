"""Tournament recording benchmark: what does storing games cost next to playing them?

Measured side by side in one run, alternating, on the same kind of table (4 house bots,
secret deals; a table of 4 entrants is its own deal group in every format):

The referee runs in its own process, as deployed; the worker is a thread of this process.

* referee only: the organiser client consumes PlayTable's stream and throws games away;
* through the worker: a Celery worker (real broker: CELERY_BROKER_URL, else in-memory)
  runs `table_play_task`, which records every game (seats, zlib replay, Elo updates under
  the pool lock) into PostgreSQL as it streams in.

Also: replay bytes per game (JSON, zlib, on disk in PostgreSQL), `recompute_ratings`
over 100,000 stored games, and **recording alone**: synthetic game results of a rated
8-bot round robin stored straight through `tournaments.services.recording.table_games_record` in batches, the
tables in plan order (every game can be rated at once) and in reverse order (every game
waits until the tables before it are closed, then is rated in plan order), with CPU and
wall time per game and queries per batch. Uses its own database `tienlen_bench` (created
and migrated).

    .venv/bin/python benchmarks/tournament_bench.py [--games-per-table 32] [--rounds 3]
        [--recompute-games 100000] [--record-games-per-table 64] [--record-batch 8]
        [--skip-referee]
"""

from __future__ import annotations

import argparse
import os
import random
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "platform")]
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tienlen_site.settings")
BENCH_DB = os.environ.get("TIENLEN_BENCH_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/tienlen_bench")
os.environ["DATABASE_URL"] = BENCH_DB

ORGANIZER_TOKEN = "bench-organizer-token"


def ensure_database() -> None:
    import psycopg

    base, _, name = BENCH_DB.rpartition("/")
    with psycopg.connect(f"{base}/postgres", autocommit=True) as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone():
            conn.execute(f'CREATE DATABASE "{name}"')


def setup_django() -> None:
    import django
    from django.core.management import call_command

    ensure_database()
    django.setup()
    call_command("migrate", verbosity=0)
    call_command("flush", interactive=False, verbosity=0)


class RefereeProcess:
    """The referee in its own process, as deployed (house bots need no token store)."""

    def __init__(self) -> None:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        self.target = f"127.0.0.1:{port}"
        env = {**os.environ, "TIENLEN_BOT_TOKENS": ""}
        self.popen = subprocess.Popen(
            [sys.executable, "-m", "referee_service", "--listen", self.target,
             "--organizer-token", ORGANIZER_TOKEN, "--token-store", "env", "--log-level", "WARNING"],
            cwd=ROOT, env=env,
        )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                return
            except OSError:
                time.sleep(0.1)
        self.stop()
        raise RuntimeError("the referee did not start")

    def stop(self) -> None:
        self.popen.terminate()
        try:
            self.popen.wait(10)
        except subprocess.TimeoutExpired:
            self.popen.kill()


def process_cpu_s(pid: int) -> float:
    """User + system CPU seconds of a process (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def start_referee_process() -> RefereeProcess:
    return RefereeProcess()


def referee_only(target: str, *, table_id: str, seats: list[str], sets: int, seed: str, keep: list | None = None) -> int:
    """The referee draws the deals (no deal_seeds): what the worker sends costs nothing there.
    The game records are thrown away (or kept in `keep`, outside the timed loop's work)."""
    from bots_sdk.protocol.tienlen.v1 import organizer_pb2 as org
    from referee_service.organizer_client import OrganizerClient

    games = 0
    with OrganizerClient(target, ORGANIZER_TOKEN) as client:
        for event in client.play_table(table_id=table_id, seats=seats, games=sets * len(seats), seed=seed, move_time_ms=1000):
            if isinstance(event, org.GameRecord):
                games += 1
                if keep is not None:
                    keep.append(event)
    return games


def record_reading(records: list, rounds: int = 5) -> dict[str, float]:
    """CPU per game, in microseconds, of what the worker does with each GameRecord before
    the database: read it once (FinishedGame.from_record: its typed fields, no JSON), the
    per-seat timing totals as stored, and the zlib of the replay and timing texts as received (best of
    `rounds` passes over real records)."""
    import zlib

    from tournaments.play.referee import FinishedGame
    from tournaments.services.recording import _timing_summary

    parts = {"read (from_record)": 0.0, "timing totals": 0.0, "zlib of both texts": 0.0}
    best = {name: float("inf") for name in parts}
    for _ in range(rounds):
        c0 = time.process_time()
        results = [FinishedGame.from_record(r) for r in records]
        c1 = time.process_time()
        for result in results:
            _timing_summary(result)
        c2 = time.process_time()
        for result in results:
            zlib.compress(result.replay_text.encode("utf-8"), 6)
            zlib.compress(result.timing_text.encode("utf-8"), 6)
        c3 = time.process_time()
        for name, spent in zip(parts, (c1 - c0, c2 - c1, c3 - c2), strict=True):
            best[name] = min(best[name], 1e6 * spent / len(records))
    return best


def through_worker(organiser, bots, *, sets: int, seed: str, number: int) -> int:
    from tournaments.models import Game, Tournament
    from tournaments.services.tournaments import (
        tournament_create,
        tournament_entrant_add,
        tournament_start,
    )

    tournament = tournament_create(
        organiser=organiser, name=f"bench {number}", format="round_robin", seats_per_table=4,
        duplicate_sets=sets, move_time_ms=1000,
    )
    for bot in bots:
        tournament_entrant_add(tournament=tournament, bot=bot)
    tournament_start(tournament=tournament)
    deadline = time.monotonic() + 600
    while Tournament.objects.filter(pk=tournament.pk).values_list("status", flat=True)[0] != "finished":
        if time.monotonic() > deadline:
            raise RuntimeError("the worker did not finish the table")
        time.sleep(0.02)
    return Game.objects.filter(table__tournament=tournament).count()


def replay_sizes() -> tuple[float, float, float]:
    from django.db import connection

    from tournaments.models import Replay

    rows = list(Replay.objects.values_list("raw_size", "data"))
    raw = statistics.fmean(r[0] for r in rows)
    packed = statistics.fmean(len(bytes(r[1])) for r in rows)
    with connection.cursor() as cursor:
        cursor.execute("SELECT avg(pg_column_size(data)) FROM tournaments_replay")
        on_disk = float(cursor.fetchone()[0])
    return raw, packed, on_disk


def build_rated_games(count: int, organiser, bots) -> None:
    """Store `count` rated 4-player games (seats, rating history) for recompute to replay."""
    from tournaments.deals import deals_create
    from tournaments.models import Deal, Game, GameSeat, Rating, RatingChange, Table
    from tournaments.ratings.elo import elo_deltas
    from tournaments.services.ratings import rating_pool_get
    from tournaments.services.tournaments import tournament_create, tournament_entrant_add

    pool = rating_pool_get(preset="bench", seats=4)
    tournament = tournament_create(organiser=organiser, name="recompute", format="ladder", seats_per_table=4, rated=False)
    entrants = [tournament_entrant_add(tournament=tournament, bot=b) for b in bots]
    table = Table.objects.create(tournament=tournament, round=1, number=1, deal_group=1, games_planned=count)
    # Recompute reads places only: the games share one deal row.
    deals_create(tournament=tournament, group=1, count=1)
    deal = Deal.objects.get(tournament=tournament, group=1, index=0)
    rng = random.Random(9)
    ratings = {b.pk: 1500.0 for b in bots}
    batch = 5000
    for start in range(0, count, batch):
        games = Game.objects.bulk_create(
            Game(table=table, index=start + i, deal=deal, players=4, pool=pool, rating_seq=pool.games_rated + start + i + 1,
                 finishing_order=[0, 1, 2, 3], points=[2, 1, -1, -2])
            for i in range(min(batch, count - start))
        )
        seats, changes = [], []
        for game in games:
            chosen = rng.sample(entrants, 4)
            ids = [e.bot_id for e in chosen]
            deltas = elo_deltas([ratings[b] for b in ids], [1, 2, 3, 4], pool.k_factor)
            for s, (entrant, d) in enumerate(zip(chosen, deltas, strict=True)):
                seats.append(GameSeat(game=game, seat=s, bot_id=entrant.bot_id, entrant=entrant, place=s + 1, points=[2, 1, -1, -2][s]))
                old = ratings[entrant.bot_id]
                ratings[entrant.bot_id] = old + d
                changes.append(RatingChange(pool=pool, bot_id=entrant.bot_id, game=game, seq=game.rating_seq, rating_before=old, rating_after=old + d))
        GameSeat.objects.bulk_create(seats, batch_size=5000)
        RatingChange.objects.bulk_create(changes, batch_size=5000)
    Rating.objects.bulk_create(Rating(pool=pool, bot_id=b, rating=r, games=0) for b, r in ratings.items())
    pool.games_rated += count
    pool.save(update_fields=["games_rated"])


def synthetic_result(index: int, order: list[int], rotation: int, moves: list, seed: str):
    """A finished 4-player game as the referee streams it (a GameRecord about a real
    replay's size), read by the worker's own path."""
    import json

    from bots_sdk.protocol.tienlen.v1 import game_pb2 as pb
    from bots_sdk.protocol.tienlen.v1 import organizer_pb2 as org
    from referee_service.wire import game_timing
    from tournaments.play.referee import FinishedGame

    points = [0] * 4
    for place, seat in enumerate(order):
        points[seat] = (2, 1, -1, -2)[place]
    replay = {"schema": "tienlen.replay/1", "seed": seed, "moves": moves, "result": {"finishing_order": order, "points": points}}
    timing = {"schema": "tienlen.timing/1", "moves": [{"seat": s % 4, "elapsed_ms": 0.4, "fallback": None} for s in range(40)]}
    return FinishedGame.from_record(org.GameRecord(
        game_index=index, seat_participants=[(s + rotation) % 4 for s in range(4)],
        replay_json=json.dumps(replay, separators=(",", ":")), timing_json=json.dumps(timing, separators=(",", ":")),
        result=pb.GameResult(finishing_order=order, points=points), seed=seed,
        replay_schema=replay["schema"], timing=game_timing(timing["moves"], 4),
    ))


def record_only(organiser, *, games_per_table: int, batch: int, reverse: bool, number: int) -> dict[str, float]:
    """Record a rated 8-bot round robin's games through the service, batch by batch."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from tournaments.deals import table_deal_seeds
    from tournaments.models import RatingChange, Tournament
    from tournaments.services.accounts import bot_create
    from tournaments.services.recording import table_games_record
    from tournaments.services.tables import table_complete
    from tournaments.services.tournaments import (
        tournament_create,
        tournament_entrant_add,
        tournament_schedule,
    )

    bots = [bot_create(owner=organiser, name=f"rec-{number}-{i}", house_bot="random")[0] for i in range(8)]
    tournament = tournament_create(
        organiser=organiser, name=f"record {number}", format="round_robin", seats_per_table=4,
        games_per_table=games_per_table, preset="south",
    )
    for bot in bots:
        tournament_entrant_add(tournament=tournament, bot=bot)
    Tournament.objects.filter(pk=tournament.pk).update(status=Tournament.Status.SCHEDULED)
    tournament_schedule(tournament_id=tournament.pk)
    tables = list(tournament.tables.order_by("round", "number"))
    if reverse:
        tables.reverse()
    rng = random.Random(number)
    moves = [{"seat": s % 4, "cards": ["10H", "JH"]} for s in range(110)]  # a real replay's size (~3.4 KB)
    batches = queries = games = 0
    wall = cpu = 0.0
    for table in tables:
        # Each game names its committed deal's seed, as the referee's records do.
        seeds = table_deal_seeds(tournament=tournament, table=table, first_game_index=0)
        results = []
        for i in range(games_per_table):
            order = [0, 1, 2, 3]
            rng.shuffle(order)
            results.append(synthetic_result(i, order, i % 4, moves, seeds[i]))
        for start in range(0, len(results), batch):
            chunk = results[start : start + batch]
            t0, c0 = time.perf_counter(), time.process_time()
            with CaptureQueriesContext(connection) as ctx:
                games += len(table_games_record(table_id=table.pk, results=chunk))
            wall += time.perf_counter() - t0
            cpu += time.process_time() - c0
            queries += len(ctx.captured_queries)
            batches += 1
        t0, c0 = time.perf_counter(), time.process_time()
        table_complete(table_id=table.pk)
        wall += time.perf_counter() - t0
        cpu += time.process_time() - c0
    rated = RatingChange.objects.filter(game__table__tournament=tournament).count()
    if rated != 4 * games:
        raise RuntimeError(f"{rated} rating changes for {games} games")
    return {"games": games, "wall_ms": 1000 * wall / games, "cpu_ms": 1000 * cpu / games, "queries": queries / batches}


def main() -> None:
    parser = argparse.ArgumentParser(description="Tournament recording benchmark")
    parser.add_argument("--games-per-table", type=int, default=32, help="a multiple of 4 (duplicate sets)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--recompute-games", type=int, default=100_000)
    parser.add_argument("--record-games-per-table", type=int, default=64)
    parser.add_argument("--record-batch", type=int, default=8, help="games per recording batch")
    parser.add_argument("--record-rounds", type=int, default=3)
    parser.add_argument("--skip-referee", action="store_true", help="only recording alone and recompute")
    args = parser.parse_args()
    setup_django()

    from celery.contrib.testing.worker import start_worker
    from django.conf import settings
    from django.contrib.auth.models import User

    from tienlen_site.celery import app
    from tournaments.models import RatingPool
    from tournaments.services.accounts import bot_create
    from tournaments.services.ratings import ratings_recompute

    broker = os.environ.get("CELERY_BROKER_URL") or "memory://"
    if broker.startswith("filesystem"):
        broker = "memory://"
    app.conf.broker_url = broker
    app.conf.broker_transport_options = {}
    # A private queue: other workers sharing the broker never take these tasks.
    queue = f"tournament-bench-{os.getpid()}"
    app.conf.task_default_queue = queue
    sets = max(1, args.games_per_table // 4)
    staff = User.objects.create_user("bench-house", is_staff=True)
    bots = [bot_create(owner=staff, name=f"bench-{p}-{i}", house_bot=p)[0]
            for i, p in enumerate(["random", "greedy", "heuristic", "greedy"])]
    seats = [f"house:{b.house_bot}" for b in bots]

    plain, recorded, records = [], [], []
    cpu: dict[str, list[float]] = {"client": [], "referee": [], "worker": []}
    raw = packed = on_disk = 0.0
    if not args.skip_referee:
        referee = start_referee_process()
        settings.REFEREE_TARGET = referee.target
        settings.REFEREE_ORGANIZER_TOKEN = ORGANIZER_TOKEN
        try:
            with start_worker(app, pool="threads", concurrency=1, perform_ping_check=False, shutdown_timeout=60, queues=[queue]):
                for r in range(args.rounds):
                    seed = f"bench-{r}"
                    t0, c0, rc0 = time.perf_counter(), time.process_time(), process_cpu_s(referee.popen.pid)
                    n = referee_only(referee.target, table_id=f"plain-{r}", seats=seats, sets=sets, seed=f"{seed}/r1/t1",
                                     keep=records if r == 0 else None)
                    plain.append(n / (time.perf_counter() - t0))
                    cpu["client"].append((time.process_time() - c0) / n)
                    cpu["referee"].append((process_cpu_s(referee.popen.pid) - rc0) / n)
                    t0, c0 = time.perf_counter(), time.process_time()
                    n = through_worker(staff, bots, sets=sets, seed=seed, number=r)
                    recorded.append(n / (time.perf_counter() - t0))
                    cpu["worker"].append((time.process_time() - c0) / n)
        finally:
            referee.stop()
        raw, packed, on_disk = replay_sizes()
        reading = record_reading(records)

    # Recording alone, alternating plan order and reverse order.
    record: dict[str, list[dict[str, float]]] = {"plan order": [], "reverse order": []}
    for r in range(args.record_rounds):
        for name, reverse in (("plan order", False), ("reverse order", True)):
            record[name].append(record_only(
                staff, games_per_table=args.record_games_per_table, batch=args.record_batch,
                reverse=reverse, number=2 * r + reverse,
            ))

    build_start = time.perf_counter()
    build_rated_games(args.recompute_games, staff, bots)
    build_s = time.perf_counter() - build_start
    pool = RatingPool.objects.get(preset="bench", seats=4)
    t0 = time.perf_counter()
    report = ratings_recompute(pool=pool)
    recompute_s = time.perf_counter() - t0

    print("| measurement | value |")
    print("| --- | ---: |")
    if plain:
        print(f"(tables of 4 house bots, {sets * 4} games each (secret deals), {args.rounds} alternating rounds, broker {broker.split(':')[0]})")
        p, w = statistics.median(plain), statistics.median(recorded)
        print(f"| referee only, games/s (median; runs {', '.join(f'{x:.1f}' for x in plain)}) | {p:.1f} |")
        print(f"| through the worker into PostgreSQL, games/s (median; runs {', '.join(f'{x:.1f}' for x in recorded)}) | {w:.1f} |")
        ratios = [1 - b / a for a, b in zip(plain, recorded, strict=True)]
        print(f"| recording cost, 1 - worker/referee per round (median; rounds {', '.join(f'{100 * r:.0f}%' for r in ratios)}) | {100 * statistics.median(ratios):.1f}% |")
        ref_ms = 1000 * statistics.median(cpu["referee"])
        rec_ms = 1000 * (statistics.median(cpu["worker"]) - statistics.median(cpu["client"]))
        print(f"| referee process CPU per game | {ref_ms:.2f} ms |")
        print(f"| recording CPU per game in the worker (worker minus bare client) | {rec_ms:.2f} ms |")
        print(f"| recording CPU / referee CPU | {100 * rec_ms / ref_ms:.1f}% |")
        worker_ms = 1000 * statistics.median(cpu["worker"])
        print(f"| worker CPU per game, all of it (task, organiser client, recording, this process) | {worker_ms:.2f} ms |")
        total = sum(reading.values())
        detail = ", ".join(f"{name} {us:.0f}" for name, us in reading.items())
        print(f"| worker CPU per game from GameRecord to stored bytes, best of 5 over {len(records)} real records ({detail}) | {total:.0f} µs |")
        print(f"| replay JSON bytes per game | {raw:,.0f} |")
        print(f"| replay zlib bytes per game (stored) | {packed:,.0f} |")
        print(f"| replay bytes per game on disk (pg_column_size) | {on_disk:,.0f} |")
    for name, runs in record.items():
        label = f"recording alone, {name} (14 tables x {args.record_games_per_table} games, batches of {args.record_batch})"
        wall = statistics.median(x["wall_ms"] for x in runs)
        cpu_ms = statistics.median(x["cpu_ms"] for x in runs)
        q = statistics.median(x["queries"] for x in runs)
        print(f"| {label}: wall / CPU per game, queries per batch (median of {len(runs)}) | {wall:.2f} ms / {cpu_ms:.2f} ms, {q:.1f} |")
    print(f"| recompute_ratings: {report.games:,} games, {report.bots} bots | {recompute_s:.1f} s ({report.games / recompute_s:,.0f} games/s) |")
    print(f"| recompute max difference from stored | {report.max_difference:g} |")
    print(f"(building the {args.recompute_games:,} stored games took {build_s:.1f} s)")


if __name__ == "__main__":
    main()
