"""Plain multi-row INSERTs for the recording path (no model instances to build)."""

from __future__ import annotations

from django.db import connection


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
