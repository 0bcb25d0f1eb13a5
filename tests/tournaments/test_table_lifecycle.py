"""The table lifecycle (tournaments.play.lifecycle): the explicit transition table, illegal
transitions raising, closed tables ignoring late events, and the real functions on a real
row agreeing with the table over random sequences of events."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import transaction
from django.utils import timezone
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.tournaments.conftest import running_round_robin
from tournaments.models import Table
from tournaments.play.lifecycle import (
    CLOSED,
    Event,
    IllegalTransition,
    next_status,
    table_busy,
    table_close,
    table_lease_renew,
    table_progress,
    table_start,
    table_wait,
    tables_cancel,
    tables_claim_stale,
)
from tournaments.services.tables import table_complete, table_plan

P, R, W, D, F, C = "pending", "running", "waiting", "done", "failed", "cancelled"
ILLEGAL = "illegal"

# The lifecycle as the docs draw it (docs/architecture.md): state -> event -> next state.
EXPECTED = {
    P: {"start": R, "wait": ILLEGAL, "busy": ILLEGAL, "progress": P, "heartbeat": ILLEGAL, "stale": ILLEGAL,
        "finish": D, "fail": F, "cancel": C},
    R: {"start": R, "wait": W, "busy": R, "progress": R, "heartbeat": R, "stale": R, "finish": D, "fail": F,
        "cancel": C},
    W: {"start": R, "wait": W, "busy": W, "progress": W, "heartbeat": W, "stale": W, "finish": D, "fail": F,
        "cancel": C},
}


@pytest.mark.parametrize("status", [P, R, W, D, F, C])
@pytest.mark.parametrize("event", list(Event))
def test_every_state_and_event_does_what_the_diagram_says(status, event) -> None:
    if status in CLOSED:
        assert next_status(status, event) is None  # a closed table ignores it
        return
    expected = EXPECTED[status][event.value]
    if expected == ILLEGAL:
        with pytest.raises(IllegalTransition, match=f"cannot {event.value} a {status} table"):
            next_status(status, event, table_id=1)
    else:
        assert next_status(status, event) == expected


@pytest.fixture
def table(organiser, bots) -> Table:
    tournament = running_round_robin(organiser, bots[:4], seats_per_table=4)
    return tournament.tables.get()


@pytest.mark.django_db
def test_a_retry_or_busy_note_on_a_table_never_started_is_a_bug(table) -> None:
    with pytest.raises(IllegalTransition):
        table_wait(table_id=table.pk, error="referee unavailable")
    with pytest.raises(IllegalTransition):
        table_busy(table_id=table.pk)
    table.refresh_from_db()
    assert (table.status, table.attempts, table.last_error) == (P, 0, "")


@pytest.mark.django_db
def test_a_closed_table_ignores_a_late_worker(table) -> None:
    assert table_plan(table_id=table.pk) is not None
    table_complete(table_id=table.pk, status=F, error="referee rejected it")
    before = Table.objects.get(pk=table.pk)
    # The slow worker of the attempt reports afterwards: nothing reopens or rewrites it.
    assert table_wait(table_id=table.pk, error="aborted: shutting down") is False
    assert table_busy(table_id=table.pk) is False
    assert table_plan(table_id=table.pk) is None
    assert table_progress(table=before, now=timezone.now()) == {}
    assert table_close(table=before, event=Event.FINISH, now=timezone.now()) is False
    assert tables_cancel(tournament_id=table.tournament_id) == 0
    after = Table.objects.get(pk=table.pk)
    assert (after.status, after.last_error, after.attempts, after.progress_at, after.finished_at) == (
        F, "referee rejected it", 1, before.progress_at, before.finished_at)


@pytest.mark.django_db
def test_a_table_completes_only_as_done_or_failed(table) -> None:
    with pytest.raises(ValueError, match="done or failed"):
        table_complete(table_id=table.pk, status=C)
    with pytest.raises(ValueError, match="does not close"):
        table_close(table=table, event=Event.CANCEL, now=timezone.now())


def _apply(table_id: int, event: Event) -> None:
    """One event through the real function that applies it."""
    now = timezone.now()
    if event is Event.START:
        with transaction.atomic():
            table_start(table=Table.objects.select_for_update().get(pk=table_id), now=now)
    elif event is Event.WAIT:
        table_wait(table_id=table_id, error="bots absent", waiting_for_bots=True)
    elif event is Event.BUSY:
        table_busy(table_id=table_id)
    elif event is Event.PROGRESS:
        row = Table.objects.get(pk=table_id)
        Table.objects.filter(pk=table_id).update(**table_progress(table=row, now=now))
    elif event is Event.HEARTBEAT:
        table_lease_renew(table_id=table_id, owner=Table.objects.get(pk=table_id).lease_owner)
    elif event is Event.STALE:
        Table.objects.filter(pk=table_id).update(progress_at=now - timedelta(hours=1))
        tables_claim_stale(stale_after_s=60, now=now)
        if Table.objects.get(pk=table_id).status == P:
            raise IllegalTransition(table_id, P, event)  # the claim never selects it: no transition
    elif event in (Event.FINISH, Event.FAIL):
        table_close(table=Table.objects.get(pk=table_id), event=event, error="x", now=now)
    else:
        tables_cancel(tournament_id=Table.objects.get(pk=table_id).tournament_id)


@pytest.mark.django_db
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(events=st.lists(st.sampled_from(list(Event)), max_size=8))
def test_the_functions_on_a_real_row_follow_the_table(table, events) -> None:
    Table.objects.filter(pk=table.pk).update(
        status=P, attempts=0, last_error="", waiting_since=None, progress_at=None, started_at=None, finished_at=None
    )
    status, attempts = P, 0
    for event in events:
        try:
            expected = next_status(status, event)
        except IllegalTransition:
            with pytest.raises(IllegalTransition):
                _apply(table.pk, event)
            continue
        _apply(table.pk, event)
        row = Table.objects.get(pk=table.pk)
        if expected is not None:
            attempts = max(0, attempts + {Event.START: 1, Event.BUSY: -1}.get(event, 0))
            status = expected
        assert (row.status, row.attempts) == (status, attempts), event
        if status in (R, W):
            assert row.progress_at is not None and row.started_at is not None


def test_the_sets_of_table_statuses_are_written_only_in_the_lifecycle() -> None:
    """OPEN, ACTIVE and CLOSED are the lifecycle's: a module that writes out its own set of
    statuses (e.g. "done, failed, cancelled") drifts the day a state is added."""
    import ast
    from pathlib import Path

    import tournaments

    root = Path(tournaments.__file__).parent
    allowed = {root / "play" / "lifecycle.py"}
    offenders = []
    for path in root.rglob("*.py"):
        if "migrations" in path.parts or path in allowed:
            continue
        assigned = [n.value for n in ast.parse(path.read_text(), str(path)).body if isinstance(n, ast.Assign)]
        for node in (n for value in assigned for n in ast.walk(value)):  # module-level names
            if isinstance(node, ast.Tuple | ast.Set | ast.List):
                statuses = [e for e in node.elts if isinstance(e, ast.Attribute) and isinstance(e.value, ast.Attribute)
                            and e.value.attr == "Status" and isinstance(e.value.value, ast.Name)
                            and e.value.value.id == "Table"]
                if len(statuses) >= 2:
                    offenders.append(f"{path.relative_to(root)}:{node.lineno}")
    assert offenders == []
