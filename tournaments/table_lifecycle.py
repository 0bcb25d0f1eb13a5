"""The lifecycle of a table: its states, the events that move it, and the one place where
a table's `status`, `attempts`, `waiting_since` and `progress_at` change.

    PENDING ──start──▶ RUNNING ──wait──▶ WAITING ──start──▶ RUNNING
    any open state ──finish──▶ DONE, ──fail──▶ FAILED, ──cancel──▶ CANCELLED (final)
    (busy, progress and stale keep the status; the full table is docs/architecture.md)

Every transition is written down once, in `TRANSITIONS` (event -> the states it may leave
and the state it enters); an event a state does not allow raises `IllegalTransition`. A
closed table (done, failed, cancelled) is final: it ignores every later event, because a
slow or duplicated worker reporting after the close is an expected race (a redelivered
task, a tournament cancelled mid-table), not a bug. Callers learn it from the return value.

Two ways to apply a transition, both checked against the same table:
- on a row the caller has locked and loaded (`table_start`, `table_close`, and
  `table_progress`, whose fields the recorder folds into its own UPDATE at no extra query);
- as one conditional UPDATE (`table_wait`, `table_busy`, `tables_claim_stale`,
  `tables_cancel`): `WHERE status IN (the event's sources)`, so racing writers cannot both
  win; only when no row matched is the table read again to say why.

Issue 13 adds leases here without another redesign: `table_start` would also take
`lease_owner`/`lease_expires_at` (conditional on the lease being free, expired or already
ours), `table_progress` and a heartbeat would extend it, `tables_claim_stale` would select
expired leases instead of silent `progress_at`, and `_update`'s extra condition would fence
a stale worker's late reports by owner (docs/architecture.md, "Table lifecycle").
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any

from django.db.models import F, Q
from django.utils import timezone

from tournaments.models import Table, Tournament

Status = Table.Status

OPEN = frozenset({Status.PENDING, Status.RUNNING, Status.WAITING})
CLOSED = frozenset({Status.DONE, Status.FAILED, Status.CANCELLED})
#: Tables a worker holds (or held until it died): the ones the stale check looks at.
ACTIVE = frozenset({Status.RUNNING, Status.WAITING})


class Event(StrEnum):
    START = "start"  # a worker begins (or resumes) playing it: one attempt
    WAIT = "wait"  # the attempt ended without finishing the table: retry later
    BUSY = "busy"  # the referee already plays it for another worker: the attempt does not count
    PROGRESS = "progress"  # games were recorded: a sign of life
    STALE = "stale"  # silent for too long (its worker died): claimed to be played again
    FINISH = "finish"  # every game was played (or forfeited)
    FAIL = "fail"  # it cannot be played (a refused request, a bad record, no referee)
    CANCEL = "cancel"  # its tournament was cancelled


@dataclass(frozen=True)
class Transition:
    sources: frozenset[str]
    target: str | None  # None: the status stays as it is


TRANSITIONS: dict[Event, Transition] = {
    Event.START: Transition(OPEN, Status.RUNNING),
    Event.WAIT: Transition(ACTIVE, Status.WAITING),
    Event.BUSY: Transition(ACTIVE, None),
    Event.PROGRESS: Transition(OPEN, None),
    Event.STALE: Transition(ACTIVE, None),
    Event.FINISH: Transition(OPEN, Status.DONE),
    Event.FAIL: Transition(OPEN, Status.FAILED),
    Event.CANCEL: Transition(OPEN, Status.CANCELLED),
}


class IllegalTransition(Exception):
    """An event the table's state does not allow (a bug in the caller, never a race)."""

    def __init__(self, table_id: int | None, status: str, event: Event) -> None:
        super().__init__(f"table {table_id}: cannot {event.value} a {status} table")
        self.table_id, self.status, self.event = table_id, status, event


def next_status(status: str, event: Event, *, table_id: int | None = None) -> str | None:
    """The status after `event`; None when a closed table ignores it. Raises
    IllegalTransition when the state does not allow the event."""
    if status in CLOSED:
        return None
    transition = TRANSITIONS[event]
    if status not in transition.sources:
        raise IllegalTransition(table_id, status, event)
    return transition.target or status


# --- on a row the caller has locked and loaded -------------------------------------------


def table_start(*, table: Table, now: datetime) -> bool:
    """An attempt begins: running, one more attempt, alive now. The connect deadline counts
    from `waiting_since`, set by the first attempt of a run of attempts that wait for bots
    (a table resumed late gives reconnecting bots the whole deadline again). False when the
    table is closed: there is nothing to play. Call with the table's row locked."""
    status = next_status(table.status, Event.START, table_id=table.pk)
    if status is None:
        return False
    table.status = status
    table.attempts += 1
    table.progress_at = now
    if table.started_at is None:
        table.started_at = now
    if table.waiting_since is None:
        table.waiting_since = now
    table.save(update_fields=["status", "attempts", "progress_at", "started_at", "waiting_since"])
    return True


def table_progress(*, table: Table, now: datetime) -> dict[str, Any]:
    """Games were recorded: the fields to set in the recorder's UPDATE of the row (a sign of
    life; the referee accepted the table, so the bots' connect wait is over). Empty for a
    closed table. The recorder holds the tournament's lock, which every close also takes."""
    if next_status(table.status, Event.PROGRESS, table_id=table.pk) is None:
        return {}
    return {"progress_at": now, "waiting_since": None}


def table_close(*, table: Table, event: Event, error: str = "", now: datetime) -> bool:
    """Close the table as done (FINISH) or failed (FAIL); False when it was already closed
    (a duplicated task completing it twice). Call under the tournament's lock."""
    if event not in (Event.FINISH, Event.FAIL):
        raise ValueError(f"{event} does not close a table")
    status = next_status(table.status, event, table_id=table.pk)
    if status is None:
        return False
    table.status = status
    table.last_error = error[:1000]
    table.finished_at = now
    table.save(update_fields=["status", "last_error", "finished_at"])
    return True


# --- as one conditional UPDATE -------------------------------------------------------------


def _update(table_id: int, event: Event, fields: dict[str, Any], extra: Q | None = None) -> bool:
    """Apply `event` to one table if its status allows it (and `extra` holds); False when it
    did not apply because the table is closed or `extra` did not hold."""
    transition = TRANSITIONS[event]
    if transition.target is not None:
        fields = {**fields, "status": transition.target}
    condition = Q(pk=table_id, status__in=transition.sources)
    if extra is not None:
        condition &= extra
    if Table.objects.filter(condition).update(**fields):
        return True
    status = Table.objects.filter(pk=table_id).values_list("status", flat=True).first()
    if status is None:
        raise Table.DoesNotExist(f"table {table_id} does not exist")
    next_status(status, event, table_id=table_id)  # raises when the event is illegal
    return False


def table_wait(*, table_id: int, error: str, waiting_for_bots: bool = False, now: datetime | None = None) -> bool:
    """The attempt ended without finishing the table; it will be retried. Only a retry that
    waits for absent bots keeps `waiting_since` (the connect deadline runs on); any other
    (referee down, aborted) starts the connect wait afresh."""
    fields: dict[str, Any] = {"last_error": error[:1000], "progress_at": now or timezone.now()}
    if not waiting_for_bots:
        fields["waiting_since"] = None
    return _update(table_id, Event.WAIT, fields)


def table_busy(*, table_id: int) -> bool:
    """Another worker is playing this table at the referee: this attempt does not count."""
    return _update(table_id, Event.BUSY, {"attempts": F("attempts") - 1}, Q(attempts__gt=0))


def tables_claim_stale(*, stale_after_s: float, now: datetime | None = None) -> list[int]:
    """Claim the running/waiting tables of running tournaments that showed no progress for
    `stale_after_s` (their worker died, or their retry was lost) so the caller re-enqueues
    them.

    Each claim is a conditional UPDATE that also refreshes `progress_at`: of two ticks
    racing, only one sees the table stale, so a table is enqueued once per timeout. A
    table whose first worker is alive after all is harmless to re-enqueue: the referee
    answers ALREADY_EXISTS and the copy backs off; games are unique by (table, index).
    """
    now = now or timezone.now()
    cutoff = now - timedelta(seconds=stale_after_s)
    silent = Q(progress_at__lt=cutoff) | Q(progress_at__isnull=True, started_at__lt=cutoff)
    stale = silent & Q(tournament__status=Tournament.Status.RUNNING)
    claimed = []
    candidates = Table.objects.filter(stale, status__in=TRANSITIONS[Event.STALE].sources)
    for table_id in candidates.order_by("id").values_list("id", flat=True):
        if Table.objects.filter(stale, pk=table_id, status__in=TRANSITIONS[Event.STALE].sources).update(progress_at=now):
            claimed.append(table_id)
    return claimed


def tables_cancel(*, tournament_id: int) -> int:
    """Cancel every open table of a tournament (its recorded games stay); returns how many."""
    transition = TRANSITIONS[Event.CANCEL]
    return Table.objects.filter(tournament_id=tournament_id, status__in=transition.sources).update(
        status=transition.target
    )


def tables_forgotten(*, now: datetime | None = None, older_than_s: float = 600.0) -> list[int]:
    """Pending tables of running tournaments never attempted for `older_than_s`: their
    first task was lost (e.g. the broker restarted before a worker took it)."""
    now = now or timezone.now()
    return list(
        Table.objects.filter(
            tournament__status=Tournament.Status.RUNNING,
            status=Status.PENDING,
            created_at__lt=now - timedelta(seconds=older_than_s),
            attempts=0,
        ).values_list("id", flat=True)
    )
