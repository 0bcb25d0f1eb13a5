"""Rating games in a canonical order: each tournament's plan order, not completion order.

Elo depends on the order games are applied. Workers finish tables in whatever order the
machine's load gives, so rating games as they were recorded made the same seeded
tournament end with different ratings on different runs (up to 2.8 Elo between
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

from django.utils import timezone

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
from tournaments.play.lifecycle import CLOSED
from tournaments.ratings.elo import elo_deltas
from tournaments.sealing import is_revealed
from tournaments.statements import Insert, Names, marks, model_from_row, statement

# The rating path's statements, written out (tournaments.statements): each runs on every
# recorded batch, and building it with the ORM cost more than running it.


@statement("ratings.pool-take-seq")
def _pool_take_seq() -> str:
    """Take a pool's next sequence numbers; locks its row until commit."""
    p = Names(RatingPool)
    return (f"UPDATE {p.TABLE} SET {p.games_rated} = {p.games_rated} + %s WHERE {p.id} = %s "
            f"RETURNING {p.preset}, {p.seats}, {p.k_factor}, {p.games_rated}")


@statement("ratings.tables-waiting", {"with_new": True}, {"with_new": False})
def _tables_waiting_sql(with_new: bool) -> str:
    t = Names(Table)
    new = f" OR {t.id} = %s" if with_new else ""
    return (f"SELECT {t.id}, {t.status}, {t.games_planned}, {t.games_recorded}, {t.games_rated} FROM {t} "
            f"WHERE {t.tournament_id} = %s AND ({t.games_rated} < {t.games_recorded} "
            f"OR ({t.status} NOT IN ({marks(len(CLOSED))}) AND {t.games_recorded} < {t.games_planned}){new}) "
            f"ORDER BY {t.round}, {t.number}")


@statement("ratings.stored-unrated", {"tables": 1}, {"tables": 2})
def _stored_unrated_sql(tables: int) -> str:
    s, g, d = Names(GameSeat, "s"), Names(Game, "g"), Names(Deal, "d")
    return (f"SELECT {s.game_id}, {g.table_id}, {g.index}, {g.pool_id}, {d.revealed_at}, {s.bot_id}, {s.place} "
            f"FROM {s} JOIN {g} ON {g.id} = {s.game_id} LEFT JOIN {d} ON {d.id} = {g.deal_id} "
            f"WHERE {g.table_id} IN ({marks(tables)}) AND {g.rating_seq} IS NULL AND {g.pool_id} IS NOT NULL "
            f"ORDER BY {g.table_id}, {g.index}, {s.seat}")


@statement("ratings.game-seq")
def _game_seq() -> str:
    g = Names(Game)
    return f"UPDATE {g.TABLE} SET {g.rating_seq} = %s WHERE {g.id} = %s"


@statement("ratings.table-rated")
def _table_rated() -> str:
    t = Names(Table)
    return f"UPDATE {t.TABLE} SET {t.games_rated} = %s WHERE {t.id} = %s"


@statement("ratings.of-bots", {"bots": 1}, {"bots": 4})
def _ratings_sql(bots: int) -> str:
    r = Names(Rating, "r")
    return f"SELECT {r.ALL} FROM {r} WHERE {r.pool_id} = %s AND {r.bot_id} IN ({marks(bots)})"


@statement("ratings.update")
def _rating_update() -> str:
    """One prepared statement run per row (psycopg pipelines it): far cheaper than
    bulk_update's CASE expression for the handful of bots a batch touches."""
    r = Names(Rating)
    return f"UPDATE {r.TABLE} SET {r.rating} = %s, {r.games} = %s, {r.updated_at} = %s WHERE {r.id} = %s"


_INSERT_CHANGES = Insert("ratings.changes", RatingChange,
                         ["pool_id", "bot_id", "game_id", "seq", "rating_before", "rating_after"],
                         copy=True)  # a batch's 16+ rows: COPY measured faster than the INSERT


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
    for pool_id in sorted(counts):
        row = _pool_take_seq.row([counts[pool_id], pool_id])
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
    params = [tournament_id, *CLOSED, *([new_table_id] if new_table_id is not None else [])]
    return _tables_waiting_sql.rows(params, with_new=new_table_id is not None)


def _stored_unrated(table_ids: list[int]) -> dict[int, list[DueGame]]:
    """The recorded, not yet rated games of these tables, each with whether its deal is
    revealed (1 query, plain SQL for the same reason as `_tables_waiting`)."""
    rows = _stored_unrated_sql.rows(table_ids, tables=len(table_ids))
    games: dict[int, DueGame] = {}
    for game_id, table_id, index, pool_id, revealed_at, bot_id, place in rows:
        due = games.get(game_id)
        if due is None:
            due = games[game_id] = DueGame(
                table_id, index, pool_id, [], [], revealed=is_revealed(revealed_at), game_id=game_id
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
    _game_seq.run_many(stored)
    _table_rated.run_many(tables)
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
    return [model_from_row(Rating, row) for row in _ratings_sql.rows([pool_id, *bot_ids], bots=len(bot_ids))]


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
    _rating_update.run_many([(row.rating, row.games, now, row.pk) for row in ratings.values()])
    _INSERT_CHANGES.run(changes)
    # The pool's games_rated was advanced when its sequence numbers were taken.
