"""Recording finished games: seats, the replay as the referee sent it, rating updates,
all in one transaction per batch and idempotent (a game is unique by table and index);
revealing the deals played everywhere, and their luck baselines (off the recording path)."""

from __future__ import annotations

import zlib
from collections.abc import Callable, Sequence
from typing import NamedTuple

from django.db import IntegrityError, transaction
from django.db.models import OuterRef, Subquery
from django.utils import timezone

from tournaments.deals import (
    deals_reveal,
    deals_reveal_recording,
    games_per_deal,
)
from tournaments.jobs import Job, enqueue_on_commit
from tournaments.models import (
    BotVersion,
    Deal,
    Entrant,
    Game,
    GameSeat,
    Replay,
    Table,
    TableSeat,
    Tournament,
)
from tournaments.play.lifecycle import table_progress, table_progress_save
from tournaments.play.referee import FinishedGame
from tournaments.rating_order import DueGame, ratings_apply, ratings_take_due
from tournaments.sealing import deals_revealed, is_revealed
from tournaments.services.ratings import rating_pool_get
from tournaments.statements import Insert, Names, marks, models_insert, statement
from tournaments.table_rows import table_with_tournament


def table_game_record(*, table_id: int, result: FinishedGame) -> Game | None:
    """Record one finished game exactly once; None when it was already recorded."""
    games = table_games_record(table_id=table_id, results=[result])
    return games[0] if games else None


def table_games_record(
    *, table_id: int, results: Sequence[FinishedGame], lease_owner: str | None = None,
    then: Callable[[Table, Tournament], None] | None = None,
) -> list[Game]:
    """Record finished games (seats, replay, rating updates) in one transaction.

    Games already recorded (a retried task, a table replayed from its seeds) are skipped,
    so this is idempotent; the new games are returned. A batch costs about the queries of
    one game, which is how recording keeps up with the referee. With the `lease_owner` of
    the attempt playing the table, a batch is recorded only while that attempt holds the
    table's lease: else nothing of it is, and LeaseLost is raised (the fence costs no query).
    `then(table, tournament)` runs in the same transaction, under the same lock, once the
    whole batch was recorded and the fence held (new games, none malformed): the table's
    close after its last batch (`tournaments.services.tables.LastBatchClose`); it does
    not run when the batch recorded nothing new or raced a concurrent attempt.
    """
    if not results:
        return []
    try:
        with transaction.atomic():
            games, error, rows = _record_batch(table_id, results, lease_owner)
            if then is not None and games and error is None:
                then(*rows)
    except IntegrityError:
        # A concurrent attempt recorded some of these first: go one by one.
        games, error = [], None
        for result in results:
            try:
                with transaction.atomic():
                    one, error, _ = _record_batch(table_id, [result], lease_owner)
                games += one
            except IntegrityError:
                if not Game.objects.filter(table_id=table_id, index=result.game_index).exists():
                    raise
            if error:
                break
    if error:
        # The good games before it are committed; the caller learns what was wrong.
        raise error
    return games


def _pool_ids(tournament: Tournament, sizes: set[int]) -> dict[int, int]:
    """The rating pool of each game size (a knockout's short tables rate in smaller pools)."""
    ids = {}
    for size in sizes:
        if size == tournament.seats_per_table and tournament.pool_id is not None:
            ids[size] = tournament.pool_id
        else:
            ids[size] = rating_pool_get(preset=tournament.preset, seats=size).pk
    return ids


def _timing_summary(result: FinishedGame) -> tuple[dict, list[int], int]:
    """The stored per-seat totals of the referee's per-move timing (summed by the referee:
    the full log goes with the replay, unparsed), the fallbacks per seat and the duration."""
    per_seat = [
        {"moves": t.moves, "thinking_ms": round(t.thinking_ms, 1), "max_ms": round(t.max_ms, 1), "fallbacks": t.fallbacks}
        for t in result.seat_timing
    ] or [{"moves": 0, "thinking_ms": 0.0, "max_ms": 0.0, "fallbacks": 0} for _ in range(result.players)]
    summary = {"moves": result.moves, "elapsed_ms": round(result.elapsed_ms, 1), "per_seat": per_seat}
    return summary, [row["fallbacks"] for row in per_seat], int(result.elapsed_ms)


def _record_batch(
    table_id: int, results: Sequence[FinishedGame], lease_owner: str | None = None
) -> tuple[list[Game], ValueError | None, tuple[Table, Tournament]]:
    """Record the results up to the first malformed one; return it as the error, and the
    table and its tournament as read under the lock."""
    # The tournament's row lock makes one writer at a time decide which games are due for
    # rating (tournaments.rating_order); recording already queued behind the pool lock.
    table, tournament = table_with_tournament(table_id, lock="tournament")
    # Each seat with the version its bot reported when it last connected (the referee's
    # ListBots): the newest BotVersion, read in the same query.
    seats = _seats_with_versions(table_id)
    per_deal = games_per_deal(tournament=tournament, games_planned=table.games_planned)
    rows = _deals_of(tournament.pk, table.deal_group, {r.game_index // per_deal for r in results})
    deals = {index: (pk, seed) for pk, index, seed, _ in rows}
    revealed = {index for _, index, _, revealed_at in rows if is_revealed(revealed_at)}
    unique: dict[int, FinishedGame] = {}
    error = None
    for result in results:
        error = _record_problem(result, len(seats)) or _deal_problem(result, deals.get(result.game_index // per_deal))
        if error:
            break  # record the good games before it, then report it
        unique.setdefault(result.game_index, result)
    if not unique:
        return [], error, (table, tournament)
    # A table's games are recorded in order from 0, so only indices below its count can
    # exist already (a retried task, a replayed table); the unique (table, index) constraint
    # is the last word either way.
    existing = set(
        Game.objects.filter(table_id=table_id, index__in=list(unique)).values_list("index", flat=True)
    ) if min(unique) < table.games_recorded else set()
    new = [unique[i] for i in sorted(unique) if i not in existing]
    if not new:
        return [], error, (table, tournament)
    versions = {s.bot_id: s.version_id for s in seats}
    pool_ids = _pool_ids(tournament, {r.players for r in new}) if tournament.rated else {}
    games, game_seats, replays, placed = [], [], [], []
    for result in new:
        summary, fallbacks, duration = _timing_summary(result)
        pool_id = pool_ids.get(result.players)
        game = Game(
            table_id=table_id, index=result.game_index, deal_id=deals[result.game_index // per_deal][0],
            players=result.players,
            finishing_order=result.finishing_order, points=result.points, strikes=result.strikes,
            forfeits=result.forfeited, timing=summary, duration_ms=duration, pool_id=pool_id,
        )
        games.append(game)
        entrants = [seats[p] for p in result.seat_participants]
        places = result.places()
        if pool_id is not None:
            placed.append(DueGame(table_id, result.game_index, pool_id, [e.bot_id for e in entrants], places,
                                  revealed=False, game=game))
        for s, entrant in enumerate(entrants):
            game_seats.append((
                game, s, entrant.bot_id, entrant.entrant_id, versions.get(entrant.bot_id), places[s],
                result.points[s], fallbacks[s],
                result.seat_participants[s] in result.forfeited or seats[result.seat_participants[s]].forfeited,
            ))
        # The JSON as the referee sent it: compressed, never re-encoded.
        raw = result.replay_text.encode("utf-8")
        timing_raw = result.timing_text.encode("utf-8")
        replays.append(Replay(
            game=game, schema=result.schema[:40], data=zlib.compress(raw, 6),
            raw_size=len(raw), timing=zlib.compress(timing_raw, 6) if timing_raw else None,
        ))
    # Reveal the deals this batch finishes everywhere, then take the games due for rating
    # now (revealed, in plan order), numbered before they are saved.
    revealed |= _deals_reveal_recording(tournament, table, len(new))
    for due in placed:
        due.revealed = due.index // per_deal in revealed
    rating = ratings_take_due(tournament=tournament, new=placed, new_table_id=table_id)
    models_insert(_INSERT_GAMES, games)
    for replay in replays:
        replay.game_id = replay.game.pk
    # Seats and rating changes are plain rows: a pipelined prepared INSERT costs a fraction
    # of building model instances (recording must stay far cheaper than playing).
    _INSERT_SEATS.run([(g.pk, *rest) for g, *rest in game_seats])
    _INSERT_REPLAYS.run([(r.game_id, r.schema, r.encoding, r.data, r.raw_size, r.timing) for r in replays])
    table_fields = table_progress(table=table, now=timezone.now())
    if table_id in rating.table_rated:
        table_fields["games_rated"] = rating.table_rated[table_id]
    # Fenced by the lease: a taken-over attempt's games roll back with this transaction.
    table_progress_save(table_id=table_id, fields=table_fields, owner=lease_owner, increments={"games_recorded": len(new)})
    # A seat the referee forfeited mid-table (strikes, a long disconnect) forfeits the
    # table: recorded as soon as a game shows it, so a later resume cannot lose it.
    forfeited = {p for r in new for p in r.forfeited if 0 <= p < len(seats)}
    if forfeited:
        TableSeat.objects.filter(table_id=table_id, seat__in=sorted(forfeited), forfeited=False).update(forfeited=True)
    ratings_apply(rating, skip_table=table_id)
    return games, error, (table, tournament)


# The recorder's statements, written out (tournaments.statements): the ORM spent more
# building them on every batch than PostgreSQL spent running them (docs/architecture.md).
_INSERT_GAMES = Insert("recording.games", Game, [f.name for f in Game._meta.concrete_fields if not f.primary_key],
                       returning=True)
_INSERT_SEATS = Insert(
    "recording.seats", GameSeat,
    ["game_id", "seat", "bot_id", "entrant_id", "version_id", "place", "points", "strikes", "forfeited"],
    copy=True,  # a batch's 16+ seat rows: COPY measured faster than the INSERT
)
_INSERT_REPLAYS = Insert("recording.replays", Replay, ["game_id", "schema", "encoding", "data", "raw_size", "timing"])


class _Seat(NamedTuple):
    seat: int
    forfeited: bool
    entrant_id: int
    bot_id: int
    version_id: int | None


@statement("recording.seats-with-versions")
def _seats_sql() -> str:
    s, e, v = Names(TableSeat, "s"), Names(Entrant, "e"), Names(BotVersion, "v")
    newest = (f"SELECT {v.id} FROM {v} WHERE {v.bot_id} = {e.bot_id} "
              f"ORDER BY {v.first_seen_at} DESC, {v.id} DESC LIMIT 1")
    return (f"SELECT {s.seat}, {s.forfeited}, {e.id}, {e.bot_id}, ({newest}) "
            f"FROM {s} JOIN {e} ON {e.id} = {s.entrant_id} WHERE {s.table_id} = %s ORDER BY {s.seat}")


def _seats_with_versions(table_id: int) -> list[_Seat]:
    return [_Seat(seat, bool(forfeited), entrant, bot, version)
            for seat, forfeited, entrant, bot, version in _seats_sql.rows([table_id])]


@statement("recording.deals", {"indices": 1}, {"indices": 3})
def _deals_sql(indices: int) -> str:
    d = Names(Deal)
    return (f"SELECT {d.id}, {d.index}, {d.seed}, {d.revealed_at} FROM {d} "
            f"WHERE {d.tournament_id} = %s AND {d.group} = %s AND {d.index} IN ({marks(indices)})")


def _deals_of(tournament_id: int, group: int, indices: set[int]) -> list[tuple]:
    """(pk, index, seed, revealed_at) of these deals of a deal group."""
    return _deals_sql.rows([tournament_id, group, *sorted(indices)], indices=len(indices))


def deals_reveal_played(*, tournament: Tournament, groups: list[int] | None = None) -> int:
    """Reveal the deals played everywhere (of these deal groups; None: all); their luck
    baselines are computed after commit by their own task, off the recording path (about
    5 ms of simulation per deal). Call under the tournament's lock."""
    revealed = deals_reveal(tournament=tournament, groups=groups)
    if revealed:
        _baselines_after_commit(tournament)
    return revealed


def _deals_reveal_recording(tournament: Tournament, table: Table, new_games: int) -> set[int]:
    """The recording path's reveal, before its games are saved: the indices revealed now."""
    revealed = deals_reveal_recording(
        tournament=tournament, group=table.deal_group, table_id=table.pk, new_games=new_games
    )
    if revealed:
        _baselines_after_commit(tournament)
    return revealed


def _baselines_after_commit(tournament: Tournament) -> None:
    enqueue_on_commit(Job.COMPUTE_BASELINES, tournament.pk)


#: Deals a baselines task claims at a time (each takes a few ms of simulation).
BASELINE_CHUNK = 16


def deal_baselines_compute(*, tournament_id: int, limit: int = 500) -> int:
    """Compute the house-bot baseline of up to `limit` revealed deals that have games and no
    baseline yet; returns how many were computed.

    Recording enqueues a task after every batch that reveals deals, so several run at once:
    each claims a few deals at a time (row locks, skipping deals another task holds) and
    computes only those, instead of every task simulating every pending deal. A row is only
    written while its baseline is empty, so a duplicated task is harmless."""
    from tournaments.scoring.baseline import deal_baseline

    tournament = Tournament.objects.get(pk=tournament_id)
    players = Game.objects.filter(deal=OuterRef("pk")).values("players")[:1]
    done = 0
    while done < limit:
        with transaction.atomic():
            claimed = list(
                Deal.objects.select_for_update(skip_locked=True)
                .filter(deals_revealed(), tournament_id=tournament_id, baseline__isnull=True)
                .annotate(players=Subquery(players))
                .filter(players__isnull=False)
                .order_by("pk")
                .values_list("pk", "seed", "players")[: min(BASELINE_CHUNK, limit - done)]
            )
            for deal_id, seed, seats in claimed:
                baseline = deal_baseline(seed, seats, preset=tournament.preset, options=tournament.options or None)
                Deal.objects.filter(pk=deal_id, baseline__isnull=True).update(baseline=[round(b, 4) for b in baseline])
        if not claimed:
            break
        done += len(claimed)
    return done


def _deal_problem(result: FinishedGame, deal: tuple[int, str] | None) -> ValueError | None:
    """The game must have been dealt from the deal committed for it (the messages are
    public table errors: they never show a seed)."""
    if deal is None:
        return ValueError(f"game {result.game_index}: no deal was committed for it")
    if result.seed and result.seed != deal[1]:
        return ValueError(f"game {result.game_index}: it was not dealt from the deal committed for it")
    return None


def _record_problem(result: FinishedGame, seats: int) -> ValueError | None:
    problem = result.problem(seats)
    return ValueError(f"game {result.game_index}: {problem}") if problem else None
