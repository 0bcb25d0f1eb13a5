"""Rating games in a canonical order: each tournament's plan order, not completion order.

Elo depends on the order games are applied. Workers finish tables in whatever order the
machine's load gives, so rating games as they were recorded made the same seeded
tournament end with different ratings on different runs (issue 14: up to 2.8 Elo between
identical runs). Here a tournament's games are rated in its **plan order** — round, table
number, game index — and each game is rated as soon as its deal is revealed and every game
planned before it is rated or never will be (its table is closed: done, failed or
cancelled). The same games therefore give the same ratings and the same rating history
whichever worker recorded them first; a table played ahead of its turn waits, and is rated
in one go when the tables before it close.

The reveal is part of the rule because a rating change is a result: a game on a deal that
another table of its deal group has still to play is sealed (docs/fair-play.md), and its
rating change would tell those tables who did well with the cards they are about to be
dealt. So a recorded game waits for its deal's reveal, and the games planned after it wait
with it: the order stays the plan order.

Ladders plan nothing ahead: their tables are numbered as they are created, so a ladder's
games are rated in table-creation order, each table's games in order (a table's games wait
until every older table is closed).

Tournaments sharing a pool keep their own order; how two tournaments running at once
interleave is the order in which their games became due. Every rated game takes its pool's
next `rating_seq`, and `recompute_ratings` replays exactly that sequence.

Locks, always in this order: the tournament's row (the caller holds it: one writer decides
what is due), then the pools' rows in id order (one sequence per pool across tournaments).
Nothing takes a tournament lock while holding a pool lock, so writers cannot deadlock.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from django.db import connection
from django.utils import timezone

from tournaments.bulk import insert_rows, model_columns, model_from_row
from tournaments.models import (
    START_RATING,
    Deal,
    Game,
    GameSeat,
    Rating,
    RatingChange,
    RatingPool,
    Table,
    Tournament,
)
from tournaments.ratings.elo import elo_deltas

CLOSED = (Table.Status.DONE, Table.Status.FAILED, Table.Status.CANCELLED)


@dataclass
class DueGame:
    """A recorded game waiting for its turn to be rated."""

    table_id: int
    index: int
    pool_id: int
    bots: list[int]
    places: list[int]
    revealed: bool  # its deal is revealed: its result is public, so it may be rated
    game: Game | None = None  # a game of the batch being recorded (saved after the plan)
    game_id: int | None = None  # a game stored earlier
    seq: int = 0

    @property
    def pk(self) -> int:
        return self.game_id if self.game is None else self.game.pk


@dataclass
class RatingBatch:
    """Games to rate now, in plan order, with their pool sequence numbers assigned."""

    due: list[DueGame] = field(default_factory=list)
    pools: dict[int, RatingPool] = field(default_factory=dict)
    table_rated: dict[int, int] = field(default_factory=dict)  # table id -> games_rated


def ratings_take_due(
    *, tournament: Tournament, new: Sequence[DueGame] = (), new_table_id: int | None = None
) -> RatingBatch:
    """Which recorded games are due now, in plan order; locks their pools and numbers them.

    A game is due once its deal is revealed and every game planned before it is rated or
    never will be, so reveal first (tournaments.deals), then take what is due.
    `new` are the games of `new_table_id` being recorded in this transaction (not saved
    yet: each due one gets its `rating_seq` set before it is saved). The caller holds the
    tournament's row lock and calls `ratings_apply` once the new games are saved.
    """
    batch = RatingBatch()
    if not tournament.rated:
        return batch
    rows = _tables_waiting(tournament.pk, new_table_id)
    wanted: list[tuple[int, int, bool, list[DueGame]]] = []
    stored_tables: list[int] = []
    for table_id, status, planned, recorded, rated in rows:
        fresh = list(new) if table_id == new_table_id else []
        if recorded > rated:
            stored_tables.append(table_id)
        recorded += len(fresh)
        finished = status in CLOSED or recorded >= planned
        if recorded > rated:
            wanted.append((table_id, rated, finished, fresh))
        if not finished:
            break  # the games of later tables wait for this one's
    if not wanted:
        return batch
    stored = _stored_unrated(stored_tables) if stored_tables else {}
    for table_id, rated, finished, fresh in wanted:
        games = sorted([*stored.get(table_id, []), *fresh], key=lambda g: g.index)
        run: list[DueGame] = []
        for game in games:
            if not game.revealed:
                break  # sealed: it, and every game planned after it, wait for the reveal
            if not finished and game.index != rated + len(run):
                break  # an open table: only the games that follow its rated ones without a gap
            run.append(game)
        if run:
            batch.due.extend(run)
            batch.table_rated[table_id] = rated + len(run)
        if len(run) < len(games):
            break
    if not batch.due:
        return batch
    counts: dict[int, int] = {}
    for game in batch.due:
        counts[game.pool_id] = counts.get(game.pool_id, 0) + 1
    # Each pool's sequence numbers are taken with one UPDATE, which also locks its row until
    # commit (pools in id order: see the lock order above).
    with connection.cursor() as cursor:
        for pool_id in sorted(counts):
            cursor.execute(
                f"UPDATE {RatingPool._meta.db_table} SET games_rated = games_rated + %s WHERE id = %s "
                "RETURNING preset, seats, k_factor, games_rated",
                [counts[pool_id], pool_id],
            )
            row = cursor.fetchone()
            if row is None:
                raise RuntimeError(f"rating pool {pool_id} is missing")
            preset, seats, k_factor, games_rated = row
            batch.pools[pool_id] = RatingPool(
                pk=pool_id, preset=preset, seats=seats, k_factor=k_factor, games_rated=games_rated - counts[pool_id]
            )
    for game in batch.due:
        pool = batch.pools[game.pool_id]
        pool.games_rated += 1
        game.seq = pool.games_rated
        if game.game is not None:
            game.game.rating_seq = game.seq
    return batch


def _tables_waiting(tournament_id: int, new_table_id: int | None) -> list[tuple[int, str, int, int, int]]:
    """The tournament's tables with games not rated yet or still to play (and the table
    being recorded), in plan order: (id, status, planned, recorded, rated). Plain SQL: the
    recorder runs it on every batch, and building it with the ORM cost more than running it."""
    table = connection.ops.quote_name(Table._meta.db_table)
    closed = ", ".join(["%s"] * len(CLOSED))
    new = " OR id = %s" if new_table_id is not None else ""
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT id, status, games_planned, games_recorded, games_rated FROM {table} "
            f"WHERE tournament_id = %s AND (games_rated < games_recorded "
            f"OR (status NOT IN ({closed}) AND games_recorded < games_planned){new}) "
            f"ORDER BY {connection.ops.quote_name('round')}, {connection.ops.quote_name('number')}",
            [tournament_id, *CLOSED, *([new_table_id] if new_table_id is not None else [])],
        )
        return cursor.fetchall()


def _stored_unrated(table_ids: list[int]) -> dict[int, list[DueGame]]:
    """The recorded, not yet rated games of these tables, each with whether its deal is
    revealed (1 query, plain SQL for the same reason as `_tables_waiting`)."""
    q = connection.ops.quote_name
    placeholders = ", ".join(["%s"] * len(table_ids))
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT s.game_id, g.table_id, g.{q('index')}, g.pool_id, d.revealed_at, s.bot_id, s.place "
            f"FROM {q(GameSeat._meta.db_table)} s JOIN {q(Game._meta.db_table)} g ON g.id = s.game_id "
            f"LEFT JOIN {q(Deal._meta.db_table)} d ON d.id = g.deal_id "
            f"WHERE g.table_id IN ({placeholders}) AND g.rating_seq IS NULL AND g.pool_id IS NOT NULL "
            f"ORDER BY g.table_id, g.{q('index')}, s.seat",
            table_ids,
        )
        rows = cursor.fetchall()
    games: dict[int, DueGame] = {}
    for game_id, table_id, index, pool_id, revealed_at, bot_id, place in rows:
        due = games.get(game_id)
        if due is None:
            due = games[game_id] = DueGame(
                table_id, index, pool_id, [], [], revealed=revealed_at is not None, game_id=game_id
            )
        due.bots.append(bot_id)
        due.places.append(place)
    by_table: dict[int, list[DueGame]] = {}
    for due in games.values():
        by_table.setdefault(due.table_id, []).append(due)
    return by_table


def ratings_apply(batch: RatingBatch, *, skip_table: int | None = None) -> None:
    """Write the batch's rating updates (the new games are saved by now).

    `skip_table`: the caller writes that table's `games_rated` itself (recording folds it
    into the UPDATE it runs anyway).
    """
    if not batch.due:
        return
    stored = [(g.seq, g.game_id) for g in batch.due if g.game is None]
    tables = [(rated, table_id) for table_id, rated in batch.table_rated.items() if table_id != skip_table]
    with connection.cursor() as cursor:
        if stored:
            cursor.executemany(f"UPDATE {Game._meta.db_table} SET rating_seq = %s WHERE id = %s", stored)
        if tables:
            cursor.executemany(f"UPDATE {Table._meta.db_table} SET games_rated = %s WHERE id = %s", tables)
    for pool in batch.pools.values():
        _rate_games(pool, [g for g in batch.due if g.pool_id == pool.pk])


def ratings_advance(*, tournament: Tournament) -> int:
    """Rate whatever became due (a table closed, so the games after it may follow);
    the caller holds the tournament's row lock. Returns how many games were rated."""
    batch = ratings_take_due(tournament=tournament)
    ratings_apply(batch)
    return len(batch.due)


def _ratings_of(pool_id: int, bot_ids: list[int]) -> list[Rating]:
    """The pool's ratings of these bots (written out: read on every rating batch)."""
    quote = connection.ops.quote_name
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT {model_columns(Rating, 'r')} FROM {quote(Rating._meta.db_table)} r "
            f"WHERE r.{quote('pool_id')} = %s AND r.{quote('bot_id')} IN ({', '.join(['%s'] * len(bot_ids))})",
            [pool_id, *bot_ids],
        )
        return [model_from_row(Rating, row) for row in cursor.fetchall()]


def _rate_games(pool: RatingPool, games: list[DueGame]) -> None:
    """Apply the games' Elo updates in order. Caller holds the pool row lock."""
    if not games:
        return
    bot_ids = sorted({b for g in games for b in g.bots})
    ratings = {r.bot_id: r for r in _ratings_of(pool.pk, bot_ids)}
    missing = [b for b in bot_ids if b not in ratings]
    if missing:
        Rating.objects.bulk_create([Rating(pool=pool, bot_id=b, rating=START_RATING) for b in missing])
        ratings.update({r.bot_id: r for r in _ratings_of(pool.pk, missing)})
    changes = []
    for game in games:
        before = [ratings[b].rating for b in game.bots]
        deltas = elo_deltas(before, game.places, pool.k_factor)
        for bot_id, old, delta in zip(game.bots, before, deltas, strict=True):
            row = ratings[bot_id]
            row.rating = old + delta
            row.games += 1
            changes.append((pool.pk, bot_id, game.pk, game.seq, old, row.rating))
    now = timezone.now()
    # One prepared statement run per row (psycopg pipelines it): far cheaper than
    # bulk_update's CASE expression for the handful of bots a batch touches.
    with connection.cursor() as cursor:
        cursor.executemany(
            f"UPDATE {Rating._meta.db_table} SET rating = %s, games = %s, updated_at = %s WHERE id = %s",
            [(row.rating, row.games, now, row.pk) for row in ratings.values()],
        )
    insert_rows(RatingChange, ["pool_id", "bot_id", "game_id", "seq", "rating_before", "rating_after"], changes)
    # The pool's games_rated was advanced when its sequence numbers were taken.
