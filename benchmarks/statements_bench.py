"""Hand-written statements against what the ORM (or psycopg's COPY) would run instead.

For each statement the recording path writes out (tournaments.statements; the list is in
docs/architecture.md, "Hand-written SQL"), the median wall time of one call, in
microseconds, of the statement as the app runs it, next to the ORM's way of doing the same
(built and run each time, as the ORM does) and, for the INSERTs, psycopg's COPY (which the
app uses for the seats). On real
rows in PostgreSQL: an 8-bot rated round robin with two tables recorded (4 games each),
alternating the variants call by call; every write runs in a transaction rolled back after
it. Uses its own database (`TIENLEN_BENCH_DATABASE_URL`, default tienlen_statements_bench:
created, migrated and flushed).

    .venv/bin/python benchmarks/statements_bench.py [--repeat 500]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "platform")]
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tienlen_site.settings")
BENCH_DB = os.environ.get("TIENLEN_BENCH_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/tienlen_statements_bench")
os.environ["DATABASE_URL"] = BENCH_DB


class Rollback(Exception):
    pass


def setup_django() -> None:
    import django
    import psycopg
    from django.core.management import call_command

    base, _, name = BENCH_DB.rpartition("/")
    with psycopg.connect(f"{base}/postgres", autocommit=True) as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone():
            conn.execute(f'CREATE DATABASE "{name}"')
    django.setup()
    call_command("migrate", verbosity=0)
    call_command("flush", interactive=False, verbosity=0)


def recorded_tables() -> list[int]:
    from django.contrib.auth import get_user_model

    from tests.tournaments.local_play import table_play_locally
    from tournaments.models import Tournament
    from tournaments.services.accounts import bot_create
    from tournaments.services.tournaments import (
        tournament_create,
        tournament_entrant_add,
        tournament_schedule,
    )

    organiser = get_user_model().objects.create(username="bench-organiser", is_staff=True)
    tournament = tournament_create(organiser=organiser, name="Statements bench", format="round_robin",
                                   seats_per_table=4, rated=True)
    for number in range(8):
        bot, _ = bot_create(owner=organiser, name=f"bench-{number}", house_bot="random")
        tournament_entrant_add(tournament=tournament, bot=bot)
    Tournament.objects.filter(pk=tournament.pk).update(status=Tournament.Status.SCHEDULED)
    ids = tournament_schedule(tournament_id=tournament.pk)
    for table_id in ids[:2]:
        table_play_locally(table_id=table_id)
    return ids


def in_rollback(call: Callable[[], object]) -> Callable[[], object]:
    from django.db import transaction

    def run() -> object:
        result = None
        try:
            with transaction.atomic():
                result = call()
                raise Rollback
        except Rollback:
            pass
        return result
    return run


def pairs(ids: list[int]) -> dict[str, dict[str, Callable[[], object]]]:
    """{statement: {variant: call}}; each write variant rolls back after itself."""
    from django.db import transaction
    from django.db.models import Count, F, OuterRef, Subquery

    from tournaments import deals, rating_order, table_rows
    from tournaments.models import (
        BotVersion,
        Deal,
        Game,
        GameSeat,
        Rating,
        RatingChange,
        Replay,
        Table,
        TableSeat,
        Tournament,
    )
    from tournaments.play import routing
    from tournaments.play.lifecycle import table_progress_save
    from tournaments.services import recording, tables
    from tournaments.statements import models_insert

    table_id = ids[0]
    table = Table.objects.get(pk=table_id)
    games = list(Game.objects.filter(table_id=table_id).order_by("index"))
    seat_rows = [(g.pk, s.seat, s.bot_id, s.entrant_id, s.version_id, s.place, s.points, s.strikes, s.forfeited)
                 for g in games for s in g.seats.order_by("seat")]
    replay_rows = [(r.game_id, r.schema, r.encoding, bytes(r.data), r.raw_size, bytes(r.timing or b""))
                   for r in Replay.objects.filter(game__in=games)]
    seat_columns = ["game_id", "seat", "bot_id", "entrant_id", "version_id", "place", "points", "strikes", "forfeited"]
    replay_columns = ["game_id", "schema", "encoding", "data", "raw_size", "timing"]
    seats = list(TableSeat.objects.filter(table_id=table_id).order_by("seat"))
    ratings = list(Rating.objects.all()[:4])

    def delete_then(model, rows_of, insert):
        def run() -> float:  # the insert's time only
            model.objects.filter(game__in=games).delete()
            start = time.perf_counter()
            insert(rows_of)
            return time.perf_counter() - start
        return in_rollback(run)

    change_columns = ["pool_id", "bot_id", "game_id", "seq", "rating_before", "rating_after"]
    change_rows = [(c.pool_id, c.bot_id, c.game_id, c.seq, c.rating_before, c.rating_after)
                   for c in RatingChange.objects.filter(game__in=games)]
    assert change_rows, "the benchmark's tables recorded no rating changes"

    def orm_changes(rows) -> None:
        RatingChange.objects.bulk_create([RatingChange(**dict(zip(change_columns, r, strict=True))) for r in rows])

    def orm_seats(rows) -> None:
        GameSeat.objects.bulk_create([GameSeat(**dict(zip(seat_columns, r, strict=True))) for r in rows])

    def orm_replays(rows) -> None:
        Replay.objects.bulk_create([Replay(**dict(zip(replay_columns, r, strict=True))) for r in rows])

    newest = BotVersion.objects.filter(bot_id=OuterRef("entrant__bot_id")).order_by("-first_seen_at", "-id").values("id")[:1]

    def locked(call):
        def run() -> None:
            with transaction.atomic():
                call()
        return run

    def fresh_games() -> list:
        return [Game(table_id=table_id, index=g.index, deal_id=g.deal_id, players=g.players,
                     finishing_order=g.finishing_order, points=g.points, strikes=g.strikes, forfeits=g.forfeits,
                     timing=g.timing, duration_ms=g.duration_ms, pool_id=g.pool_id) for g in games]

    def insert_games(insert) -> Callable[[], object]:
        def run() -> float:
            Game.objects.filter(table_id=table_id).delete()
            objs = fresh_games()
            start = time.perf_counter()
            insert(objs)
            return time.perf_counter() - start
        return in_rollback(run)

    pool_id = ratings[0].pool_id
    bot_ids = [r.bot_id for r in ratings]
    return {
        "table": {
            "hand-written": lambda: table_rows.table_read(table_id),
            "ORM": lambda: Table.objects.get(pk=table_id),
        },
        "tournament-of-table-locked": {
            "hand-written": locked(lambda: table_rows.tournament_of_table_locked(table_id)),
            "ORM": locked(lambda: Tournament.objects.select_for_update().get(
                pk=Subquery(Table.objects.filter(pk=table_id).values("tournament_id")))),
        },
        "recording.games (4 rows)": {
            "hand-written": insert_games(lambda objs: models_insert(recording._INSERT_GAMES, objs)),
            "ORM (bulk_create)": insert_games(Game.objects.bulk_create),
        },
        "tables.seat-results": {
            "hand-written": lambda: tables._table_seat_results.rows([table_id]),
            "ORM": lambda: list(GameSeat.objects.filter(game__table_id=table_id)
                                .values_list("entrant_id", "points", "place", "forfeited")),
        },
        "routing.running-per-referee": {
            "hand-written": lambda: routing._running_per_referee(["r1", "r2"]),
            "ORM": lambda: dict(Table.objects.filter(status=Table.Status.RUNNING, referee__in=["r1", "r2"])
                                .values("referee").annotate(n=Count("id")).values_list("referee", "n")),
        },
        "deals.group-seeds": {
            "hand-written": lambda: deals._group_seeds(table.tournament_id, table.deal_group),
            "ORM": lambda: dict(Deal.objects.filter(tournament_id=table.tournament_id, group=table.deal_group)
                                .values_list("index", "seed")),
        },
        "ratings.of-bots": {
            "hand-written": lambda: rating_order._ratings_of(pool_id, bot_ids),
            "ORM": lambda: list(Rating.objects.filter(pool_id=pool_id, bot_id__in=bot_ids)),
        },
        "table+tournament": {
            "hand-written": locked(lambda: table_rows.table_with_tournament(table_id, lock="tournament")),
            "ORM": locked(lambda: Table.objects.select_related("tournament").select_for_update(of=("tournament",)).get(pk=table_id)),
        },
        "seats+bots": {
            "hand-written": lambda: table_rows.table_seats_with_bots(table_id),
            "ORM": lambda: list(TableSeat.objects.filter(table_id=table_id).select_related("entrant__bot").order_by("seat")),
        },
        "recording.seats-with-versions": {
            "hand-written": lambda: recording._seats_with_versions(table_id),
            "ORM": lambda: list(TableSeat.objects.filter(table_id=table_id).order_by("seat").annotate(v=Subquery(newest))
                                .values_list("seat", "forfeited", "entrant_id", "entrant__bot_id", "v")),
        },
        "recording.deals": {
            "hand-written": lambda: recording._deals_of(table.tournament_id, table.deal_group, {0, 1}),
            "ORM": lambda: list(Deal.objects.filter(tournament_id=table.tournament_id, group=table.deal_group, index__in=[0, 1])
                                .values_list("id", "index", "seed", "revealed_at")),
        },
        "recording.seats (16 rows)": {
            "hand-written": delete_then(GameSeat, seat_rows, recording._INSERT_SEATS.insert),
            "COPY": delete_then(GameSeat, seat_rows, recording._INSERT_SEATS.insert_by_copy),
            "ORM (bulk_create)": delete_then(GameSeat, seat_rows, orm_seats),
        },
        "recording.replays (4 rows)": {
            "hand-written": delete_then(Replay, replay_rows, recording._INSERT_REPLAYS.insert),
            "COPY": delete_then(Replay, replay_rows, recording._INSERT_REPLAYS.insert_by_copy),
            "ORM (bulk_create)": delete_then(Replay, replay_rows, orm_replays),
        },
        "ratings.changes (16 rows)": {
            "hand-written": delete_then(RatingChange, change_rows, rating_order._INSERT_CHANGES.insert),
            "COPY": delete_then(RatingChange, change_rows, rating_order._INSERT_CHANGES.insert_by_copy),
            "ORM (bulk_create)": delete_then(RatingChange, change_rows, orm_changes),
        },
        "tables.seat-close (4 seats)": {
            "hand-written": in_rollback(lambda: tables._seat_close.run_many(
                [(s.forfeited, s.points, s.place, s.advanced, s.pk) for s in seats])),
            "ORM (bulk_update)": in_rollback(lambda: TableSeat.objects.bulk_update(
                seats, ["forfeited", "points", "place", "advanced"])),
        },
        "ratings.update (4 ratings)": {
            "hand-written": in_rollback(lambda: rating_order._rating_update.run_many(
                [(r.rating, r.games, r.updated_at, r.pk) for r in ratings])),
            "ORM (bulk_update)": in_rollback(lambda: Rating.objects.bulk_update(ratings, ["rating", "games", "updated_at"])),
        },
        "ratings.tables-waiting": {
            "hand-written": lambda: rating_order._tables_waiting(table.tournament_id, table_id),
            "ORM": lambda: list(Table.objects.filter(tournament_id=table.tournament_id).order_by("round", "number")
                                .values_list("id", "status", "games_planned", "games_recorded", "games_rated")),
        },
        "lifecycle.progress-save": {
            "hand-written": in_rollback(lambda: table_progress_save(
                table_id=table_id, fields={"progress_at": table.progress_at, "waiting_since": None},
                owner=table.lease_owner, increments={"games_recorded": 1})),
            "ORM": in_rollback(lambda: Table.objects.filter(pk=table_id, lease_owner=table.lease_owner).update(
                progress_at=table.progress_at, waiting_since=None, games_recorded=F("games_recorded") + 1)),
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=500)
    args = parser.parse_args()
    setup_django()
    ids = recorded_tables()
    measured = pairs(ids)
    print(f"{'statement':<32} {'variant':<20} {'µs':>8} {'/ hand-written':>15}")
    for name, variants in measured.items():
        samples: dict[str, list[float]] = {v: [] for v in variants}
        for _ in range(20):  # warm up (statement caches, prepared statements)
            for call in variants.values():
                call()
        for _ in range(args.repeat):
            for variant, call in variants.items():
                start = time.perf_counter()
                result = call()
                samples[variant].append(result if isinstance(result, float) else time.perf_counter() - start)
        base = statistics.median(samples["hand-written"])
        for variant, values in samples.items():
            med = statistics.median(values)
            print(f"{name:<32} {variant:<20} {med * 1e6:>8.0f} {med / base:>15.2f}")


if __name__ == "__main__":
    main()
