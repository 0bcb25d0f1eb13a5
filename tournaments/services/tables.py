"""Playing tables: the plan a worker sends to the referee, forfeits, and completing a table
(seat results, places, what follows: the next knockout round or the end of the
tournament, exactly once). Status changes go through tournaments.play.lifecycle."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from referee_service.participants import participant_key
from tournaments.deals import (
    games_per_deal,
    house_seed,
    table_deal_seeds,
)
from tournaments.models import (
    Entrant,
    Game,
    GameSeat,
    Table,
    TableSeat,
    Tournament,
)
from tournaments.play.lifecycle import (
    CLOSED,
    Event,
    next_status,
    table_close,
    table_start,
)
from tournaments.play.referee import TablePlan
from tournaments.rating_order import ratings_advance
from tournaments.scheduling.knockout import (
    SeatResult,
    knockout_advance_count,
    knockout_rank_table,
    knockout_tables,
)
from tournaments.services.recording import deals_reveal_played
from tournaments.services.tournaments import entrant_owners, tables_create, tournament_finish
from tournaments.statements import Names, marks, statement
from tournaments.table_rows import (
    table_read,
    table_seats_with_bots,
    table_with_tournament,
    tournament_of_table_locked,
)


def table_plan(*, table_id: int, lease_owner: str = "") -> TablePlan | None:
    """Mark a table running and say where to resume; None when there is nothing to play.
    The attempt `lease_owner` takes the table's lease (play.lifecycle.table_start): raises
    LeaseHeld when another live attempt holds it."""
    with transaction.atomic():
        table, tournament = table_with_tournament(table_id, lock="both")
        if tournament.status != Tournament.Status.RUNNING:
            return None
        now = timezone.now()
        if not table_start(table=table, now=now, owner=lease_owner):
            return None
        seats = table_seats_with_bots(table_id)
        # Games are recorded in order from 0 (a table resumes after its last recorded
        # game), so a table with none recorded needs no look at its games.
        last = table.games.order_by("-index").select_related("replay").first() if table.games_recorded else None
        first = 0 if last is None else last.index + 1
        deal_seeds = table_deal_seeds(tournament=tournament, table=table, first_game_index=first)
    rotation = games_per_deal(tournament=tournament, games_planned=table.games_planned) > 1
    # Field duplicates: every game a starting game, so every table of the group plays deal
    # i the same way (nothing carries over from the table's previous game).
    field_format = tournament.deal_format == Tournament.DealFormat.FIELD
    resume_leader = resume_starting = None
    if last is not None and not rotation and not field_format:
        result = last.replay.read().get("result") or {}
        resume_leader = result.get("next_leader")
        resume_starting = bool(result.get("next_starting", False))
    waited = (now - table.waiting_since).total_seconds()
    remaining_s = tournament.connect_deadline_s - waited
    return TablePlan(
        table_id=table.pk,
        referee_table_id=f"t{tournament.pk}-r{table.round}-n{table.number}",
        participants=[_participant(s) for s in seats],
        preset=tournament.preset,
        options=tournament.options or {},
        # Rotation: duplicate sets (one deal in every seat); otherwise independent games.
        games=0 if rotation else table.games_planned,
        duplicate_sets=tournament.duplicate_sets if rotation else 0,
        move_time_ms=tournament.move_time_ms,
        time_bank_ms=tournament.time_bank_ms,
        house_seed=house_seed(tournament=tournament, table=table),
        first_game_index=first,
        resume_leader=resume_leader,
        resume_starting=resume_starting,
        connect_deadline_ms=int(max(1.0, min(remaining_s, 60.0)) * 1000),
        deadline_passed=remaining_s <= 0,
        games_planned=table.games_planned,
        attempts=table.attempts,
        deal_seeds=deal_seeds,
        starting_games=field_format,
        referee=table.referee,
        disconnect_grace_ms=_hosted_grace_ms(seats),
    )


def _participant(seat: TableSeat) -> str:
    """The referee participant for a seat: a seat that forfeited the table is played for
    the rest of it by the stand-in house bot (the table goes on for the others)."""
    if seat.forfeited:
        return participant_key(house_bot=getattr(settings, "TIENLEN_STAND_IN_HOUSE_BOT", "random"))
    return participant_key(bot_id=seat.entrant.bot_id, house_bot=seat.entrant.bot.house_bot)


def table_seats_forfeit(*, table_id: int, absent: Iterable[str]) -> int:
    """Forfeit the seats of bots absent past the connect deadline (participant keys);
    returns how many seats still play for themselves."""
    absent = set(absent)
    seats = list(TableSeat.objects.filter(table_id=table_id).select_related("entrant__bot"))
    gone = [
        s.pk for s in seats
        if participant_key(bot_id=s.entrant.bot_id, house_bot=s.entrant.bot.house_bot) in absent
    ]
    TableSeat.objects.filter(pk__in=gone).update(forfeited=True)
    return sum(1 for s in seats if not s.forfeited and s.pk not in gone)


@dataclass
class NextSteps:
    tables_to_play: list[int] = field(default_factory=list)
    tournament_finished: bool = False


@statement("tables.seat-results")
def _table_seat_results() -> str:
    """Once per table: the ORM's join cost more to build than to run."""
    s, g = Names(GameSeat, "s"), Names(Game, "g")
    return (f"SELECT {s.entrant_id}, {s.points}, {s.place}, {s.forfeited} FROM {s} "
            f"JOIN {g} ON {g.id} = {s.game_id} WHERE {g.table_id} = %s")


@statement("tables.seat-close")
def _seat_close() -> str:
    """One prepared UPDATE per seat, pipelined: bulk_update's CASE expressions cost more to
    build than the whole rest of closing the table."""
    s = Names(TableSeat)
    return (f"UPDATE {s.TABLE} SET {s.forfeited} = %s, {s.points} = %s, {s.place} = %s, {s.advanced} = %s "
            f"WHERE {s.id} = %s")


def _table_stats(table: Table, seats: Sequence[TableSeat]) -> tuple[dict[int, list[int]], set[int]]:
    """Per entrant over the table's games: points, firsts, place sum, games; and the
    entrants that some recorded game shows forfeited (one query)."""
    stats = {s.entrant_id: [0, 0, 0, 0] for s in seats}
    forfeited_in_games = set()
    rows = _table_seat_results.rows([table.pk])
    for entrant_id, points, place, forfeited in rows:
        if forfeited:
            forfeited_in_games.add(entrant_id)
        row = stats.get(entrant_id)
        if row is not None:
            row[0] += points
            row[1] += place == 1
            row[2] += place
            row[3] += 1
    return stats, forfeited_in_games


def _table_outcome(seats: Sequence[TableSeat], stats: dict[int, list[int]]) -> list[SeatResult]:
    return [
        SeatResult(
            entrant=s.entrant_id,
            seed_rank=s.entrant.seed_rank or 10**6,
            points=stats[s.entrant_id][0],
            firsts=stats[s.entrant_id][1],
            place_sum=stats[s.entrant_id][2],
            games=stats[s.entrant_id][3],
            forfeited=s.forfeited,
        )
        for s in seats
    ]


def table_complete(
    *,
    table_id: int,
    status: str = Table.Status.DONE,
    error: str = "",
    absent: Iterable[str] = (),
    forfeited: Iterable[int] = (),
) -> NextSteps:
    """Close a table and, under the tournament's lock, decide what follows: the next
    knockout round or the end of the tournament (exactly once).

    A seat forfeits the table if it was `absent` (participant keys) past the connect
    deadline, if the referee forfeited it mid-table (`forfeited` participant indices from
    the table result, or any recorded game showing it), or if an earlier attempt did.
    """
    if status not in (Table.Status.DONE, Table.Status.FAILED):
        raise ValueError(f"a table completes as done or failed, not {status!r}")
    with transaction.atomic():
        # The tournament's lock first (every close and every recording takes it), then the
        # table as it is under that lock.
        tournament = tournament_of_table_locked(table_id)
        table = table_read(table_id)
        table.tournament = tournament
        return _complete_locked(table, tournament, status=status, error=error, absent=absent, forfeited=forfeited)


class LastBatchClose:
    """Closes the table as done in the transaction of its last recording batch (the
    referee completed the table): `table_games_record(..., then=LastBatchClose(...))`.
    The close's own transaction repeated the batch's tournament lock, the table's read and
    a commit (issue 26); here it reuses the rows the batch read under that lock, and the
    batch's lease fence covers it: a taken-over attempt neither records nor closes.
    `steps`: what follows the close, once it ran (None: it did not, e.g. every game was
    recorded already or a concurrent attempt raced; the caller closes the table with
    `table_complete` then, as before)."""

    def __init__(self, forfeited: Iterable[int] = ()) -> None:
        self.forfeited = tuple(forfeited)
        self.steps: NextSteps | None = None

    def __call__(self, table: Table, tournament: Tournament) -> None:
        self.steps = _complete_locked(table, tournament, status=Table.Status.DONE, forfeited=self.forfeited)


def _complete_locked(
    table: Table, tournament: Tournament, *, status: str, error: str = "",
    absent: Iterable[str] = (), forfeited: Iterable[int] = (),
) -> NextSteps:
    """`table_complete` on the table and its tournament as read under the tournament's row
    lock, inside the caller's transaction."""
    steps = NextSteps()
    table_id = table.pk
    event = Event.FINISH if status == Table.Status.DONE else Event.FAIL
    if next_status(table.status, event, table_id=table.pk) is None:
        return steps  # closed already: a duplicated task
    absent = set(absent)
    forfeited = set(forfeited)
    seats = table_seats_with_bots(table_id)
    stats, in_games = _table_stats(table, seats)
    for seat in seats:
        key = participant_key(bot_id=seat.entrant.bot_id, house_bot=seat.entrant.bot.house_bot)
        seat.forfeited = (
            seat.forfeited
            or seat.seat in forfeited
            or seat.entrant_id in in_games
            or key in absent
            or str(seat.entrant.bot_id) in absent
            or seat.entrant.bot.name in absent
            # Withdrawn or disqualified during a knockout: ranked last, it advances no
            # further (tournaments.services.entries).
            or (
                tournament.format == Tournament.Format.KNOCKOUT
                and seat.entrant.status in (Entrant.Status.WITHDRAWN, Entrant.Status.DISQUALIFIED)
            )
        )
    if not error and any(s.forfeited for s in seats):
        names = ", ".join(s.entrant.bot.name for s in seats if s.forfeited)
        error = f"forfeit: {names} forfeited the table"
    ranked = knockout_rank_table(_table_outcome(seats, stats))
    advance = knockout_advance_count(len(ranked), tournament.advance_per_table)
    if tournament.format == Tournament.Format.KNOCKOUT and _knockout_is_final(table):
        advance = 1  # the final has one winner; the others are out
    by_entrant = {s.entrant_id: s for s in seats}
    for place, result in enumerate(ranked, start=1):
        seat = by_entrant[result.entrant]
        seat.points = result.points
        seat.place = place
        if tournament.format == Tournament.Format.KNOCKOUT:
            seat.advanced = place <= advance and not result.forfeited
    _seat_close.run_many([(s.forfeited, s.points, s.place, s.advanced, s.pk) for s in seats])
    table_close(table=table, event=event, error=error, now=timezone.now())
    # A closed table plays no more games: the deals its group waited for it to play are
    # revealed, and the games planned after it may now be rated.
    deals_reveal_played(tournament=tournament, groups=[table.deal_group])
    ratings_advance(tournament=tournament)
    if tournament.status != Tournament.Status.RUNNING or tournament.format == Tournament.Format.LADDER:
        return steps
    knockout = tournament.format == Tournament.Format.KNOCKOUT
    # A knockout's round ends when its tables have closed (the next one is created
    # then); a round robin's rounds all exist from the start and play at once, so it
    # ends when every table has closed.
    if _open_table_sql.row([tournament.pk, *sorted(CLOSED), *([table.round] if knockout else [])],
                           by_round=knockout):
        return steps
    current = tournament.tables.filter(round=table.round) if knockout else tournament.tables.all()
    if knockout:
        # Who did not go through this round is out (the final's losers too).
        _knockout_eliminate(tournament, table.round)
        if current.count() > 1:
            steps.tables_to_play = _knockout_next_round(tournament, table.round)
            if steps.tables_to_play:
                return steps
    steps.tournament_finished = tournament_finish(tournament_id=tournament.pk)
    return steps


@statement("tables.open-table", {"by_round": False}, {"by_round": True})
def _open_table_sql(by_round: bool) -> str:
    """Whether a table of the tournament (of the round) is still open, once per close:
    written out, as the ORM spent more building it than PostgreSQL running it."""
    t = Names(Table)
    return (f"SELECT 1 FROM {t} WHERE {t.tournament_id} = %s AND {t.status} NOT IN ({marks(len(CLOSED))})"
            + (f" AND {t.round} = %s" if by_round else "") + " LIMIT 1")


def _knockout_is_final(table: Table) -> bool:
    """A knockout round of one table is the final: nobody is left to meet in another."""
    return not Table.objects.filter(tournament_id=table.tournament_id, round=table.round).exclude(pk=table.pk).exists()


def _knockout_eliminate(tournament: Tournament, round_no: int) -> None:
    eliminated = Entrant.objects.filter(
        tournament=tournament, table_seats__table__tournament=tournament,
        table_seats__table__round=round_no, table_seats__advanced=False,
    )
    # A withdrawn or disqualified bot keeps that status (and its reason) on the page.
    Entrant.objects.filter(pk__in=eliminated.values("pk")).exclude(
        status__in=(Entrant.Status.WITHDRAWN, Entrant.Status.DISQUALIFIED)
    ).update(status=Entrant.Status.ELIMINATED)


def _knockout_next_round(tournament: Tournament, round_no: int) -> list[int]:
    """The next round's tables among those who went through (none: fewer than 2 did)."""
    advancing = list(
        Entrant.objects.filter(table_seats__table__tournament=tournament, table_seats__table__round=round_no,
                               table_seats__advanced=True, status=Entrant.Status.ACTIVE)
        .order_by("seed_rank", "id")
    )
    if len(advancing) < 2:
        return []
    owners = entrant_owners(tournament=tournament, entrants=advancing)
    tables = knockout_tables(advancing, tournament.seats_per_table, owners, strict=False)
    return tables_create(tournament=tournament, round_no=round_no + 1, tables=tables)


def _hosted_grace_ms(seats) -> int:
    """A table with a hosted seat lets a seat stay disconnected for
    TIENLEN_HOSTED_DISCONNECT_GRACE_S (default 60 s) instead of the referee's 10 s: a runner
    that died is noticed within a lease plus a reap, and the session restarted elsewhere,
    so the bot never forfeits for the platform's failure. 0 (the default) otherwise."""
    if not any(s.entrant.bot.hosting == "hosted" for s in seats if s.entrant_id):
        return 0
    return int(float(getattr(settings, "TIENLEN_HOSTED_DISCONNECT_GRACE_S", 60.0)) * 1000)
