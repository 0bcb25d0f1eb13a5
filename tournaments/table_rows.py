"""The rows of a table being played, read on every attempt and every recorded batch: the
table with its tournament (locked as the caller needs), the tournament alone, the table,
its seats with their bots. Written-out statements (tournaments.statements) that return the
ORM's own model instances: the ORM spent more compiling these on every batch than
PostgreSQL spent running them (docs/architecture.md, "Hand-written SQL")."""

from __future__ import annotations

from tournaments.models import Bot, Entrant, Table, TableSeat, Tournament
from tournaments.statements import Names, lock, model_from_row, statement


@statement("table+tournament", {"lock_of": "u"}, {"lock_of": ""})
def _table_with_tournament(lock_of: str) -> str:
    t, u = Names(Table, "t"), Names(Tournament, "u")
    return (f"SELECT {t.ALL}, {u.ALL} FROM {t} JOIN {u} ON {u.id} = {t.tournament_id} "
            f"WHERE {t.id} = %s" + lock(lock_of))


def table_with_tournament(table_id: int, *, lock: str) -> tuple[Table, Tournament]:
    """The table and its tournament (`table.tournament` set) in one statement, locking
    `lock`: "tournament" (its row only, as the recorder) or "both" (as a table's start)."""
    row = _table_with_tournament.row([table_id], lock_of="u" if lock == "tournament" else "")
    if row is None:
        raise Table.DoesNotExist(f"no table {table_id}")
    width = len(Table._meta.concrete_fields)
    table = model_from_row(Table, row[:width])
    tournament = model_from_row(Tournament, row[width:])
    table.tournament = tournament
    return table, tournament


@statement("tournament-of-table-locked")
def _tournament_locked() -> str:
    u, t = Names(Tournament, "u"), Names(Table)
    return f"SELECT {u.ALL} FROM {u} WHERE {u.id} = (SELECT {t.tournament_id} FROM {t} WHERE {t.id} = %s)" + lock()


def tournament_of_table_locked(table_id: int) -> Tournament:
    """The tournament of a table, its row locked."""
    row = _tournament_locked.row([table_id])
    if row is None:
        raise Tournament.DoesNotExist(f"no tournament of table {table_id}")
    return model_from_row(Tournament, row)


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
