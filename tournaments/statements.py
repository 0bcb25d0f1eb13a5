"""Hand-written SQL, contained: the one helper every statement the app writes out itself
goes through (docs/architecture.md, "Hand-written SQL", lists each with the measurement
that justified it).

Why write any out: on the recording path the ORM spent more compiling a statement on every
table and every batch than PostgreSQL spent running it (benchmarks/README.md, "The whole
pipeline"). So each such statement is declared once, with `statement(name)` on a function
that builds its text, and built once per process and database vendor (and shape: the
length of an IN list, the columns an UPDATE sets), then reused as a plain string.

What keeps it honest:
- names come from the models, never typed as text: `Names(Model, "alias")` renders
  `alias."column"` for `names.field` and raises on a field the model does not have, so a
  renamed or dropped field fails when the statement is built;
- every declared statement is built and run through EXPLAIN against the migrated schema by
  tests/tournaments/test_statements.py, with the shapes it declares, and every hand-listed
  INSERT names every column of its model (a new field cannot be left out silently);
- rows come back as the ORM's own model instances where the callers expect them
  (`model_from_row`: the backend's and the fields' converters, as the ORM applies them).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable, Sequence
from typing import Any, TypeVar

from django.db import connection
from django.db.models import Model, signals
from django.db.models.base import ModelState

M = TypeVar("M", bound=Model)


class Names:
    """The quoted names of one model in a statement: `str(names)` is its FROM item (the
    table and the alias), `names.TABLE` the bare table (UPDATE, INSERT), `names.<field>`
    the column of that field, by its name or attname (qualified by the alias, if any;
    `names.col(name)` for a name Python will not take), `names.ALL` every concrete column
    in `_meta` order. Upper case for the two that are not fields: no field is named so."""

    def __init__(self, model: type[Model], alias: str = "") -> None:
        self._model, self._alias = model, alias

    @property
    def TABLE(self) -> str:
        return connection.ops.quote_name(self._model._meta.db_table)

    def __str__(self) -> str:
        return f"{self.TABLE} {self._alias}" if self._alias else self.TABLE

    def col(self, name: str) -> str:
        field = self._model._meta.get_field(name)  # FieldDoesNotExist on a typo
        column = getattr(field, "column", None)
        if column is None:
            raise ValueError(f"{self._model.__name__}.{name} is not a column")
        quoted = connection.ops.quote_name(column)
        return f"{self._alias}.{quoted}" if self._alias else quoted

    def __getattr__(self, name: str) -> str:
        if name.startswith("_"):
            raise AttributeError(name)
        return self.col(name)

    @property
    def ALL(self) -> str:
        return ", ".join(self.col(f.name) for f in self._model._meta.concrete_fields)


def marks(count: int) -> str:
    """`count` parameter marks, for an IN list."""
    return ", ".join(["%s"] * count)


def lock(of: str = "") -> str:
    """FOR UPDATE [OF alias]: nothing where the database has no row locks (SQLite)."""
    features = connection.features
    if not features.has_select_for_update:
        return ""
    if of and features.has_select_for_update_of:
        return f" FOR UPDATE OF {connection.ops.quote_name(of)}"
    return " FOR UPDATE"


def db_now(plus_seconds: bool = False) -> str:
    """The database's clock in a statement, as Django's `Now()` compiles it (so rows
    written by either compare alike); with `plus_seconds`, that clock plus a parameter's
    seconds (a lease's expiry)."""
    if connection.vendor == "postgresql":
        return "STATEMENT_TIMESTAMP()" + (" + %s * INTERVAL '1 second'" if plus_seconds else "")
    if connection.vendor == "sqlite":
        return "STRFTIME('%%Y-%%m-%%d %%H:%%M:%%f', 'NOW'" + (", '+' || %s || ' seconds')" if plus_seconds else ")")
    raise NotImplementedError(f"db_now on {connection.vendor}")


class Statement:
    """One hand-written statement: `build(**shape)` makes its text (run once per process,
    vendor and shape); `examples` are shapes the test builds and EXPLAINs."""

    registry: dict[str, Statement] = {}

    def __init__(self, name: str, build: Callable[..., str], examples: Sequence[dict[str, Hashable]]) -> None:
        if name in Statement.registry:
            raise ValueError(f"two statements are named {name!r}")
        self.name, self.build, self.examples = name, build, list(examples) or [{}]
        self._texts: dict[tuple, str] = {}
        Statement.registry[name] = self

    def sql(self, **shape: Hashable) -> str:
        key = (connection.vendor, *sorted(shape.items()))
        text = self._texts.get(key)
        if text is None:
            text = self._texts[key] = self.build(**shape)
        return text

    def rows(self, params: Sequence[Any], **shape: Hashable) -> list[tuple]:
        with connection.cursor() as cursor:
            cursor.execute(self.sql(**shape), params)
            return cursor.fetchall()

    def row(self, params: Sequence[Any], **shape: Hashable) -> tuple | None:
        with connection.cursor() as cursor:
            cursor.execute(self.sql(**shape), params)
            return cursor.fetchone()

    def run(self, params: Sequence[Any], **shape: Hashable) -> int:
        """Execute it; the rows it changed."""
        with connection.cursor() as cursor:
            cursor.execute(self.sql(**shape), params)
            return cursor.rowcount

    def run_many(self, rows: Sequence[Sequence[Any]], **shape: Hashable) -> None:
        """Execute it once per row of parameters (psycopg pipelines a prepared statement)."""
        if rows:
            with connection.cursor() as cursor:
                cursor.executemany(self.sql(**shape), rows)


def statement(name: str, *examples: dict[str, Hashable]) -> Callable[[Callable[..., str]], Statement]:
    """Declare a hand-written statement built by the decorated function (see the module)."""
    return lambda build: Statement(name, build, examples)


class Insert:
    """A multi-row INSERT of plain rows into `model` (`columns`: field names, `*_id` for
    a foreign key), one statement per chunk of 500 rows; with `returning`, the new rows'
    primary keys; with `copy`, by psycopg's COPY on PostgreSQL instead (where it measured
    faster). The column list is checked by the test against the model's fields."""

    CHUNK = 500
    registry: list[Insert] = []

    def __init__(self, name: str, model: type[Model], columns: Sequence[str], *, returning: bool = False,
                 copy: bool = False) -> None:
        self.model, self.columns, self.copy = model, list(columns), copy
        self.statement = Statement(name, self._build, [{"rows": 1}, {"rows": 3}])
        self.returning = returning
        Insert.registry.append(self)

    def _build(self, rows: int) -> str:
        n = Names(self.model)
        row = f"({marks(len(self.columns))})"
        text = f"INSERT INTO {n.TABLE} ({', '.join(n.col(c) for c in self.columns)}) VALUES {', '.join([row] * rows)}"
        return text + (f" RETURNING {n.col(self.model._meta.pk.name)}" if self.returning else "")

    def run(self, rows: Sequence[Sequence[Any]]) -> list[Any]:
        """Insert the rows; their new primary keys with `returning` (else [])."""
        if not rows:
            return []
        if self.copy and not self.returning and connection.vendor == "postgresql":
            self._copy(rows)
            return []
        return self.insert(rows)

    def insert(self, rows: Sequence[Sequence[Any]]) -> list[Any]:
        """The rows by multi-row INSERT statements."""
        ids: list[Any] = []
        for start in range(0, len(rows), self.CHUNK):
            chunk = rows[start : start + self.CHUNK]
            params = [value for r in chunk for value in r]
            if self.returning:
                ids += [r[0] for r in self.statement.rows(params, rows=len(chunk))]
            else:
                self.statement.run(params, rows=len(chunk))
        return ids


    def insert_by_copy(self, rows: Sequence[Sequence[Any]]) -> None:
        """The rows by COPY (PostgreSQL only)."""
        self._copy(rows)

    def _copy(self, rows: Sequence[Sequence[Any]]) -> None:
        n = Names(self.model)
        sql = f"COPY {n.TABLE} ({', '.join(n.col(c) for c in self.columns)}) FROM STDIN"
        start = time.monotonic()
        with connection.cursor() as cursor, cursor.cursor.copy(sql) as copy:
            for row in rows:
                copy.write_row(row)
        if connection.queries_logged:  # counted like any statement (the pinned query counts)
            connection.queries_log.append({"sql": f"{sql} -- {len(rows)} rows", "time": f"{time.monotonic() - start:.3f}"})


def models_insert(insert: Insert, objs: Sequence[Model]) -> None:
    """INSERT new instances with `insert` (its columns: every field but the primary key)
    and set their primary keys, as `bulk_create` does, without the ORM building the
    statement. Falls back to `bulk_create` where the database cannot return the new ids."""
    if not objs:
        return
    model = insert.model
    if not connection.features.can_return_rows_from_bulk_insert:
        model._default_manager.bulk_create(objs)
        return
    fields = [model._meta.get_field(c) for c in insert.columns]
    rows = [[f.get_db_prep_save(f.pre_save(obj, add=True), connection) for f in fields] for obj in objs]
    pk = model._meta.pk
    for obj, new_id in zip(objs, insert.run(rows), strict=True):
        setattr(obj, pk.attname, new_id)
        obj._state.adding = False
        obj._state.db = connection.alias


def model_from_row(model: type[M], row: Sequence[Any]) -> M:
    """An instance of `model` from the values of `Names(model).ALL`, converted as the ORM
    would: the backend's converters (SQLite hands back datetimes as naive text and booleans
    as integers) and the fields' own (JSON columns decoded).

    It is built as `Model.from_db` builds a loaded row, without `Model.__init__`'s
    per-field walk (its defaults, keyword handling and a `setattr` per field: a third of
    the recording worker's model cost, issue 26) where nothing could notice (no
    `pre_init`/`post_init` receiver, no `__init__` of the model's own); and only the
    fields that have converters are looked at."""
    shape = _shape_of(model)
    if len(row) != len(shape.attnames):
        raise ValueError(f"{model.__name__}: {len(row)} values for {len(shape.attnames)} fields")
    values = list(row)
    for i, column, converters in shape.converted:
        value = values[i]
        if value is not None:
            for convert in converters:
                value = convert(value, column, connection)
            values[i] = value
    if shape.needs_init:
        return model.from_db(connection.alias, shape.attnames, values)
    obj = model.__new__(model)
    obj.__dict__.update(zip(shape.attnames, values, strict=True))
    state = obj._state = ModelState()
    state.adding, state.db = False, connection.alias
    return obj


class _Shape:
    """What `model_from_row` needs of a model, read once per database vendor."""

    def __init__(self, model: type[Model]) -> None:
        fields = model._meta.concrete_fields
        self.attnames = [f.attname for f in fields]
        self.converted: list[tuple[int, Any, list[Any]]] = []
        for i, f in enumerate(fields):
            column = f.get_col(model._meta.db_table)
            converters = connection.ops.get_db_converters(column) + f.get_db_converters(connection)
            if converters:
                self.converted.append((i, column, converters))
        # Model.__init__ is skipped only where nothing could notice: no receivers, no override.
        self.needs_init = (signals.pre_init.has_listeners(model) or signals.post_init.has_listeners(model)
                        or model.__init__ is not Model.__init__)


_shape_cache: dict[tuple[str, type], _Shape] = {}


def _shape_of(model: type[Model]) -> _Shape:
    key = (connection.vendor, model)
    found = _shape_cache.get(key)
    if found is None:
        found = _shape_cache[key] = _Shape(model)
    return found
