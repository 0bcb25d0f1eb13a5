"""The rows of a table being played, read on every attempt and every recorded batch: the
table with its tournament (locked as the caller needs), the tournament alone, the table,
its seats with their bots. Written-out statements (tournaments.statements) that return the
ORM's own model instances: the ORM spent more compiling these on every batch than
PostgreSQL spent running them (docs/architecture.md, "Hand-written SQL")."""

from __future__ import annotations

from django.db import connection

from tournaments.models import Bot, Entrant, Table, TableSeat, Tournament
from tournaments.statements import Names, lock, model_from_row, statement

#: Seconds a transaction holding a tournament's row lock may sit idle (between two of its
#: statements) before PostgreSQL ends its session. Every recording batch and every table
#: close of the tournament takes that lock: a worker process frozen inside one (SIGSTOP, a
#: VM paused, swapping) held it for as long as it was frozen, and no game of the whole
#: tournament was recorded meanwhile (its other workers waited on the lock; benchmarks/
#: README.md, "Recovery"). A live transaction never idles for seconds there (a batch is
#: milliseconds of Python between its statements); one ended so is rolled back whole and
#: the table resumes from its first unrecorded game, as after any database error.
LOCKED_IDLE_S = 10


def lock_holders_frozen_end(*, frozen_s: float | None = None) -> list[int]:
    """End the database sessions that hold a lock another session waits for while they
    themselves wait, mid-statement, on their client for `frozen_s` (LOCKED_IDLE_S) or more;
    the pids ended.

    LOCKED_IDLE_S's timeout runs only between statements: PostgreSQL starts its idle timer
    when it sends ReadyForQuery, and neither it nor `statement_timeout` runs while the
    server waits inside a pipeline (psycopg's `executemany`, between one Execute and the
    next) or a COPY FROM STDIN for the client's next message. A worker frozen there (SIGSTOP)
    kept the tournament's row lock, and so every recording batch and close of the
    tournament, for the whole stop (180 s in benchmarks/README.md, "Recovery"). A live
    client sends a pipeline's or a COPY's messages within milliseconds, so a session left
    `active` on `ClientRead` for seconds while another waits on its lock is a frozen one:
    ended, its transaction rolls back whole (as by the idle timeout; the table resumes from
    its first unrecorded game, the frozen attempt's late writes are fenced). A session idle
    in a transaction as long while others wait on its locks is ended too: the idle bound
    above should have ended it, but a stopped worker was once seen idle for 2 minutes
    holding the lock (its last statement a rating update; the bound's `set_config` is local
    to the transaction, and undone with a savepoint that rolls back), and the bound must
    not depend on how the holder got there. Run by every
    reaper pass (tasks.tables_reap), so the bound holds wherever the holder froze, without
    giving up the pipelines and COPY the recorder measured cheaper. PostgreSQL only; a
    session of another role is left alone (PostgreSQL would refuse)."""
    if connection.vendor != "postgresql":
        return []
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT h.pid FROM pg_stat_activity h WHERE h.datname = current_database() "
            "AND h.pid <> pg_backend_pid() AND h.backend_type = 'client backend' "
            "AND h.usename = current_user "
            "AND ((h.state = 'active' AND h.wait_event = 'ClientRead') OR h.state LIKE 'idle in transaction%%') "
            "AND h.state_change < clock_timestamp() - make_interval(secs => %s) "
            "AND EXISTS (SELECT 1 FROM pg_stat_activity w WHERE w.wait_event_type = 'Lock' "
            "AND h.pid = ANY(pg_blocking_pids(w.pid)))",
            [float(LOCKED_IDLE_S if frozen_s is None else frozen_s)],
        )
        pids = [pid for (pid,) in cursor.fetchall()]
        ended = []
        for pid in pids:
            cursor.execute("SELECT pg_terminate_backend(%s)", [pid])
            if cursor.fetchone()[0]:
                ended.append(pid)
    return ended


def _idle_bounded() -> str:
    """A column that sets `idle_in_transaction_session_timeout` for the rest of the
    transaction (PostgreSQL; nothing elsewhere): in the locking statement itself, so the
    bound costs no round trip."""
    if connection.vendor != "postgresql":
        return ""
    return f", set_config('idle_in_transaction_session_timeout', '{LOCKED_IDLE_S * 1000}', true)"


@statement("table+tournament", {"lock_of": "u"}, {"lock_of": ""})
def _table_with_tournament(lock_of: str) -> str:
    t, u = Names(Table, "t"), Names(Tournament, "u")
    return (f"SELECT {t.ALL}, {u.ALL}{_idle_bounded()} FROM {t} JOIN {u} ON {u.id} = {t.tournament_id} "
            f"WHERE {t.id} = %s" + lock(lock_of))


def table_with_tournament(table_id: int, *, lock: str) -> tuple[Table, Tournament]:
    """The table and its tournament (`table.tournament` set) in one statement, locking
    `lock`: "tournament" (its row only, as the recorder) or "both" (as a table's start);
    the transaction's idle time bounded from then on (LOCKED_IDLE_S)."""
    row = _table_with_tournament.row([table_id], lock_of="u" if lock == "tournament" else "")
    if row is None:
        raise Table.DoesNotExist(f"no table {table_id}")
    width, tournament_width = len(Table._meta.concrete_fields), len(Tournament._meta.concrete_fields)
    table = model_from_row(Table, row[:width])
    tournament = model_from_row(Tournament, row[width:width + tournament_width])
    table.tournament = tournament
    return table, tournament


@statement("tournament-of-table-locked")
def _tournament_locked() -> str:
    u, t = Names(Tournament, "u"), Names(Table)
    return (f"SELECT {u.ALL}{_idle_bounded()} FROM {u} "
            f"WHERE {u.id} = (SELECT {t.tournament_id} FROM {t} WHERE {t.id} = %s)" + lock())


def tournament_of_table_locked(table_id: int) -> Tournament:
    """The tournament of a table, its row locked (and the transaction's idle time bounded:
    LOCKED_IDLE_S)."""
    row = _tournament_locked.row([table_id])
    if row is None:
        raise Tournament.DoesNotExist(f"no tournament of table {table_id}")
    return model_from_row(Tournament, row[:len(Tournament._meta.concrete_fields)])


@statement("table")
def _table() -> str:
    t = Names(Table, "t")
    return f"SELECT {t.ALL} FROM {t} WHERE {t.id} = %s"


def table_read(table_id: int) -> Table:
    row = _table.row([table_id])
    if row is None:
        raise Table.DoesNotExist(f"no table {table_id}")
    return model_from_row(Table, row)


@statement("seats+bots")
def _seats_with_bots() -> str:
    s, e, b = Names(TableSeat, "s"), Names(Entrant, "e"), Names(Bot, "b")
    return (f"SELECT {s.ALL}, {e.ALL}, {b.ALL} FROM {s} JOIN {e} ON {e.id} = {s.entrant_id} "
            f"JOIN {b} ON {b.id} = {e.bot_id} WHERE {s.table_id} = %s ORDER BY {s.seat}")


def table_seats_with_bots(table_id: int) -> list[TableSeat]:
    """The table's seats in seat order, each with `entrant` and `entrant.bot` loaded."""
    seat_width, entrant_width = len(TableSeat._meta.concrete_fields), len(Entrant._meta.concrete_fields)
    seats = []
    for row in _seats_with_bots.rows([table_id]):
        seat = model_from_row(TableSeat, row[:seat_width])
        entrant = model_from_row(Entrant, row[seat_width:seat_width + entrant_width])
        entrant.bot = model_from_row(Bot, row[seat_width + entrant_width:])
        seat.entrant = entrant
        seats.append(seat)
    return seats
