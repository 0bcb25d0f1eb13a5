"""The hand-written SQL (tournaments.statements) stays true to the models: every declared
statement builds from the models' fields and compiles against the migrated schema
(EXPLAIN, on SQLite and on PostgreSQL when DATABASE_URL names one), and every hand-listed
INSERT names every column of its model, so a field added later cannot be left out of it
silently (it would be stored NULL, or the insert would fail only in production data)."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.models import AutoField, BigAutoField

# Importing these declares every statement the app writes out.
import tournaments.deals
import tournaments.play.lifecycle
import tournaments.play.routing
import tournaments.rating_order
import tournaments.services.recording
import tournaments.services.tables
from tournaments.statements import Insert, Names, Statement

import tournaments.table_rows  # noqa: F401  isort: skip

EXPECTED = {
    "table+tournament", "tournament-of-table-locked", "table", "seats+bots",
    "recording.games", "recording.seats", "recording.replays", "recording.seats-with-versions", "recording.deals",
    "tables.seat-results", "tables.seat-close", "lifecycle.progress-save", "routing.running-per-referee",
    "tables.open-table", "lifecycle.close", "lifecycle.start", "routing.note-referee",
    "deals.group-seeds", "deals.reveal-group", "ratings.pool-take-seq", "ratings.tables-waiting",
    "ratings.stored-unrated", "ratings.game-seq", "ratings.table-rated", "ratings.of-bots", "ratings.update",
    "ratings.changes",
}


def test_every_hand_written_statement_is_declared_once_and_documented() -> None:
    from pathlib import Path

    assert set(Statement.registry) == EXPECTED
    doc = (Path(__file__).resolve().parents[2] / "docs" / "architecture.md").read_text()
    undocumented = [name for name in Statement.registry if f"`{name}`" not in doc]
    assert undocumented == [], "docs/architecture.md, Hand-written SQL, must name each statement"


@pytest.mark.django_db
@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_statement_compiles_against_the_schema(name: str) -> None:
    statement = Statement.registry[name]
    explain = "EXPLAIN QUERY PLAN " if connection.vendor == "sqlite" else "EXPLAIN "
    for shape in statement.examples:
        sql = statement.sql(**shape)
        with connection.cursor() as cursor:
            cursor.execute(explain + sql, [None] * sql.count("%s"))  # compiles; runs nothing


@pytest.mark.parametrize("insert", Insert.registry, ids=lambda i: i.statement.name)
def test_each_insert_names_every_column_of_its_model(insert: Insert) -> None:
    meta = insert.model._meta
    every = {f.name for f in meta.concrete_fields if not (f.primary_key and isinstance(f, AutoField | BigAutoField))}
    named = {meta.get_field(c).name for c in insert.columns}
    assert named == every, f"{insert.statement.name}: add {sorted(every - named)} / drop {sorted(named - every)}"


def test_a_field_the_model_does_not_have_fails_when_the_statement_is_built() -> None:
    from django.core.exceptions import FieldDoesNotExist

    from tournaments.models import Table

    with pytest.raises(FieldDoesNotExist):
        Names(Table, "t").games_recordd  # noqa: B018
    assert Names(Table, "t").games_recorded == 't."games_recorded"'
