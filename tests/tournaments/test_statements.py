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


@pytest.mark.django_db
def test_an_instance_built_from_a_row_is_the_one_the_orm_loads() -> None:
    """`model_from_row` skips Model.__init__: what it builds must still be the ORM's own
    (every value converted the same, JSON decoded, datetimes aware, a saved instance that
    saves and follows its relations as a loaded one does)."""
    from django.contrib.auth.models import User

    from tests.tournaments.conftest import running_round_robin
    from tournaments.models import Bot, Entrant, Table, TableSeat, Tournament
    from tournaments.services.accounts import bot_create
    from tournaments.statements import model_from_row

    owner = User.objects.create_user("owner", is_staff=True)
    bots = [bot_create(owner=owner, name=f"b{i}", house_bot="random")[0] for i in range(4)]
    tournament = running_round_robin(owner, bots, seats_per_table=4)
    seat = TableSeat.objects.filter(table__tournament=tournament).first()
    for model, pk in ((Tournament, tournament.pk), (Table, seat.table_id), (TableSeat, seat.pk),
                      (Entrant, seat.entrant_id), (Bot, bots[0].pk)):
        n = Names(model)
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT {n.ALL} FROM {n} WHERE {n.col(model._meta.pk.name)} = %s", [pk])
            built = model_from_row(model, cursor.fetchone())
        loaded = model.objects.get(pk=pk)
        fields = [f.attname for f in model._meta.concrete_fields]
        assert [getattr(built, f) for f in fields] == [getattr(loaded, f) for f in fields], model
        assert (built._state.adding, built._state.db) == (False, "default")
        assert built == loaded and hash(built) == hash(loaded)
    built_seat = model_from_row(TableSeat, [getattr(seat, f.attname) for f in TableSeat._meta.concrete_fields])
    assert built_seat.entrant.bot.name in {b.name for b in bots}  # relations load as from a query
    built_seat.points = 7
    built_seat.save(update_fields=["points"])  # an UPDATE of a row that exists, not an INSERT
    assert TableSeat.objects.get(pk=seat.pk).points == 7
    with pytest.raises(ValueError, match="values for"):
        model_from_row(Bot, [1, 2])
