"""Plain SQL for the recording path: multi-row INSERTs (no model instances to build), and the
few reads every table and every batch makes, written out once per process (the ORM spent
more compiling them each time than PostgreSQL spent running them: benchmarks/README.md,
"The whole pipeline against the referee alone")."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeVar

from django.db import connection
from django.db.models import Model

M = TypeVar("M", bound=Model)


def insert_rows(model, columns: list[str], rows: list[tuple]) -> None:
    """INSERT plain rows with one statement per chunk (portable SQL, quoted names)."""
    if not rows:
        return
    quote = connection.ops.quote_name
    names = ", ".join(quote(model._meta.get_field(c.removesuffix("_id")).column) for c in columns)
    row_sql = "(" + ", ".join(["%s"] * len(columns)) + ")"
    with connection.cursor() as cursor:
        for start in range(0, len(rows), 500):
            chunk = rows[start : start + 500]
            cursor.execute(
                f"INSERT INTO {quote(model._meta.db_table)} ({names}) VALUES {', '.join([row_sql] * len(chunk))}",
                [value for row in chunk for value in row],
            )


def model_columns(model, alias: str) -> str:
    """The SELECT list of every concrete column of `model` (in `_meta` order), for
    `model_from_row`: a hand-written query on the recording path that still yields the
    model instance the rest of the code expects, without the ORM compiling it each time."""
    quote = connection.ops.quote_name
    return ", ".join(f"{alias}.{quote(f.column)}" for f in model._meta.concrete_fields)


def model_from_row(model: type[M], row: Sequence[Any]) -> M:
    """An instance of `model` from the values of `model_columns`, converted as the ORM
    would: the backend's converters (SQLite hands back datetimes as naive text and booleans
    as integers) and the fields' own (JSON columns decoded)."""
    values = []
    for (column, converters), value in zip(_converters(model), row, strict=True):
        if value is not None:
            for convert in converters:
                value = convert(value, column, connection)
        values.append(value)
    return model.from_db(connection.alias, [f.attname for f in model._meta.concrete_fields], values)


_converter_cache: dict[tuple[str, type], list[tuple[Any, list[Any]]]] = {}


def _converters(model: type) -> list[tuple[Any, list[Any]]]:
    """Per concrete field: its column expression and the converters the ORM applies to it."""
    key = (connection.vendor, model)
    found = _converter_cache.get(key)
    if found is None:
        found = []
        for f in model._meta.concrete_fields:
            column = f.get_col(model._meta.db_table)
            found.append((column, connection.ops.get_db_converters(column) + f.get_db_converters(connection)))
        _converter_cache[key] = found
    return found


_sql: dict[str, str] = {}


def _lock(of: str | None) -> str:
    """FOR UPDATE [OF alias]: nothing where the database has no row locks (SQLite)."""
    features = connection.features
    if not features.has_select_for_update:
        return ""
    if of and features.has_select_for_update_of:
        return f" FOR UPDATE OF {connection.ops.quote_name(of)}"
    return " FOR UPDATE"


def table_with_tournament(table_id: int, *, lock: str) -> tuple:
    """The table and its tournament (`table.tournament` set) in one statement, locking
    `lock`: "tournament" (its row only, as the recorder) or "both" (as a table's start)."""
    from tournaments.models import Table, Tournament

    key = f"table+tournament:{lock}"
    sql = _sql.get(key)
    if sql is None:
        q = connection.ops.quote_name
        sql = _sql[key] = (
            f"SELECT {model_columns(Table, 't')}, {model_columns(Tournament, 'u')} "
            f"FROM {q(Table._meta.db_table)} t JOIN {q(Tournament._meta.db_table)} u ON u.{q('id')} = t.{q('tournament_id')} "
            f"WHERE t.{q('id')} = %s" + _lock("u" if lock == "tournament" else None)
        )
    with connection.cursor() as cursor:
        cursor.execute(sql, [table_id])
        row = cursor.fetchone()
    if row is None:
        raise Table.DoesNotExist(f"no table {table_id}")
    width = len(Table._meta.concrete_fields)
    table = model_from_row(Table, row[:width])
    tournament = model_from_row(Tournament, row[width:])
    table.tournament = tournament
    return table, tournament


def tournament_of_table_locked(table_id: int):
    """The tournament of a table, its row locked."""
    from tournaments.models import Table, Tournament

    sql = _sql.get("tournament-locked")
    if sql is None:
        q = connection.ops.quote_name
        sql = _sql["tournament-locked"] = (
            f"SELECT {model_columns(Tournament, 'u')} FROM {q(Tournament._meta.db_table)} u "
            f"WHERE u.{q('id')} = (SELECT {q('tournament_id')} FROM {q(Table._meta.db_table)} WHERE {q('id')} = %s)"
            + _lock(None)
        )
    with connection.cursor() as cursor:
        cursor.execute(sql, [table_id])
        row = cursor.fetchone()
    if row is None:
        raise Tournament.DoesNotExist(f"no tournament of table {table_id}")
    return model_from_row(Tournament, row)


def table_read(table_id: int):
    from tournaments.models import Table

    sql = _sql.get("table")
    if sql is None:
        q = connection.ops.quote_name
        sql = _sql["table"] = f"SELECT {model_columns(Table, 't')} FROM {q(Table._meta.db_table)} t WHERE t.{q('id')} = %s"
    with connection.cursor() as cursor:
        cursor.execute(sql, [table_id])
        row = cursor.fetchone()
    if row is None:
        raise Table.DoesNotExist(f"no table {table_id}")
    return model_from_row(Table, row)


def table_seats_with_bots(table_id: int) -> list:
    """The table's seats in seat order, each with `entrant` and `entrant.bot` loaded."""
    from tournaments.models import Bot, Entrant, TableSeat

    sql = _sql.get("seats+bots")
    if sql is None:
        q = connection.ops.quote_name
        sql = _sql["seats+bots"] = (
            f"SELECT {model_columns(TableSeat, 's')}, {model_columns(Entrant, 'e')}, {model_columns(Bot, 'b')} "
            f"FROM {q(TableSeat._meta.db_table)} s JOIN {q(Entrant._meta.db_table)} e ON e.{q('id')} = s.{q('entrant_id')} "
            f"JOIN {q(Bot._meta.db_table)} b ON b.{q('id')} = e.{q('bot_id')} "
            f"WHERE s.{q('table_id')} = %s ORDER BY s.{q('seat')}"
        )
    seat_width, entrant_width = len(TableSeat._meta.concrete_fields), len(Entrant._meta.concrete_fields)
    seats = []
    with connection.cursor() as cursor:
        cursor.execute(sql, [table_id])
        for row in cursor.fetchall():
            seat = model_from_row(TableSeat, row[:seat_width])
            entrant = model_from_row(Entrant, row[seat_width:seat_width + entrant_width])
            entrant.bot = model_from_row(Bot, row[seat_width + entrant_width:])
            seat.entrant = entrant
            seats.append(seat)
    return seats


def models_insert(objs: Sequence[Model]) -> None:
    """INSERT new instances of one model in one statement and set their primary keys, as
    `bulk_create` does, without building the statement through the ORM (the recorder's
    games, every batch). Falls back to `bulk_create` where the database cannot return the
    new rows' ids."""
    if not objs:
        return
    model = type(objs[0])
    if not connection.features.can_return_rows_from_bulk_insert:
        model._default_manager.bulk_create(objs)
        return
    quote = connection.ops.quote_name
    fields = [f for f in model._meta.concrete_fields if not f.primary_key]
    row_sql = "(" + ", ".join(["%s"] * len(fields)) + ")"
    params = [f.get_db_prep_save(f.pre_save(obj, add=True), connection) for obj in objs for f in fields]
    pk = model._meta.pk
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {quote(model._meta.db_table)} ({', '.join(quote(f.column) for f in fields)}) "
            f"VALUES {', '.join([row_sql] * len(objs))} RETURNING {quote(pk.column)}",
            params,
        )
        ids = [row[0] for row in cursor.fetchall()]
    for obj, new_id in zip(objs, ids, strict=True):
        setattr(obj, pk.attname, new_id)
        obj._state.adding = False
        obj._state.db = connection.alias
