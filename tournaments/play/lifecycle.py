"""The lifecycle of a table: its states, the events that move it, and the one place where
a table's `status`, `attempts`, `waiting_since`, `progress_at` and lease change.

    PENDING ──start──▶ RUNNING ──wait──▶ WAITING ──start──▶ RUNNING
    any open state ──finish──▶ DONE, ──fail──▶ FAILED, ──cancel──▶ CANCELLED (final)
    (busy, progress, heartbeat and stale keep the status; the full table is docs/architecture.md)

Every transition is written down once, in `TRANSITIONS` (event -> the states it may leave
and the state it enters); an event a state does not allow raises `IllegalTransition`. A
closed table (done, failed, cancelled) is final: it ignores every later event, because a
slow or duplicated worker reporting after the close is an expected race (a redelivered
task, a tournament cancelled mid-table), not a bug. Callers learn it from the return value.

Two ways to apply a transition, both checked against the same table:
- on a row the caller has locked and loaded (`table_start`, `table_close`, and
  `table_progress`, whose fields the recorder folds into its own UPDATE at no extra query);
- as one conditional UPDATE (`table_wait`, `table_busy`, `table_lease_renew`,
  `tables_claim_stale`, `tables_cancel`): `WHERE status IN (the event's sources)`, so racing
  writers cannot both win; only when no row matched is the table read again to say why.

The lease. The attempt playing a table holds its lease: `lease_owner` (a token
made per attempt, `lease_owner_new`) and `lease_expires_at`, always on the database's clock
so workers whose clocks disagree judge alike. `start` takes it only when it is free or
expired (else `LeaseHeld`: another live attempt plays the table); the holder renews it
from a background thread (`heartbeat`, off the per-game path); `wait` and `busy` free it
until the retry is due (plus one lease, so a retry lost with its worker is noticed);
`stale` claims tables whose lease expired (or that were silent past the outer bound) and
frees the lease, which fences the old holder: any later write of its attempt (`wait`,
`busy`, a recorded batch through `table_progress_save`) matches no row and raises
`LeaseLost`, in the same statement, so its late games are never recorded.
"""

from __future__ import annotations

import os
import socket
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any

from django.conf import settings
from django.db import connection
from django.db.models import Expression, F, Q, Value
from django.db.models.functions import Now
from django.utils import timezone

from tournaments.models import Bot, Table, Tournament
from tournaments.statements import Names, db_now, statement

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
    HEARTBEAT = "heartbeat"  # the attempt holding the lease is alive: renew it
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
    Event.HEARTBEAT: Transition(ACTIVE, None),
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


class LeaseHeld(Exception):
    """Another live attempt holds the table's lease: this one must not play it."""

    def __init__(self, table_id: int | None, owner: str) -> None:
        super().__init__(f"table {table_id} is being played by {owner}")
        self.table_id, self.owner = table_id, owner


class LeaseLost(Exception):
    """The caller's lease was claimed (its attempt was presumed dead): it must stop and
    write nothing more; the attempt that claimed the table plays the rest."""

    def __init__(self, table_id: int | None, owner: str) -> None:
        super().__init__(f"table {table_id}: the lease of {owner} was taken over")
        self.table_id, self.owner = table_id, owner


# --- lease timings -------------------------------------------------------------------------


@dataclass(frozen=True)
class LeaseTimes:
    """How long a lease lasts, how often its holder renews it, how often reapers look.

    A worker that dies (kill -9) renewed its lease at most `lease_s` before it expires;
    some reaper looks within `reap_s` after that. So a dead worker's table is claimed and
    re-enqueued at most `lease_s + reap_s` seconds after the death (`worst_claim_s`), and a
    healthy holder loses its lease only if `lease_s / renew_s` renewals in a row fail."""

    lease_s: float
    renew_s: float
    reap_s: float

    def __post_init__(self) -> None:
        if not 0 < self.renew_s * 2 <= self.lease_s:
            raise ValueError(
                f"TIENLEN_LEASE_RENEW_SECONDS ({self.renew_s}) must be positive and at most half "
                f"of TIENLEN_LEASE_SECONDS ({self.lease_s}): one late renewal must not lose a lease"
            )
        if self.reap_s < 0:
            raise ValueError("TIENLEN_LEASE_REAP_SECONDS must be >= 0 (0: workers do not reap)")

    @property
    def worst_claim_s(self) -> float:
        return self.lease_s + self.reap_s

    @classmethod
    def from_settings(cls) -> LeaseTimes:
        return cls(
            lease_s=float(getattr(settings, "TIENLEN_LEASE_SECONDS", 30.0)),
            renew_s=float(getattr(settings, "TIENLEN_LEASE_RENEW_SECONDS", 10.0)),
            reap_s=float(getattr(settings, "TIENLEN_LEASE_REAP_SECONDS", 10.0)),
        )


_HOST = socket.gethostname()[:30]


def lease_owner_new() -> str:
    """A token naming one attempt (host and process, for the logs, and a random part)."""
    return f"{_HOST}:{os.getpid()}:{uuid.uuid4().hex[:16]}"


def _db_now_plus(seconds: float) -> Expression:
    return Now() + Value(timedelta(seconds=seconds))


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


def table_start(*, table: Table, now: datetime, owner: str = "", lease_s: float | None = None) -> bool:
    """An attempt begins: running, one more attempt, alive now, and the lease taken by
    `owner` for `lease_s` (TIENLEN_LEASE_SECONDS). The connect deadline counts from
    `waiting_since`, set by the first attempt of a run of attempts that wait for bots (a
    table resumed late gives reconnecting bots the whole deadline again). False when the
    table is closed: there is nothing to play. Raises LeaseHeld when another attempt's
    lease is live. Call with the table's row locked.

    `owner` "" is an attempt without a holder (tests, a local run): it takes only a free
    lease and leaves it free and unexpiring (only the outer bound of `tables_claim_stale`
    applies), so any worker may take the table over at once."""
    status = next_status(table.status, Event.START, table_id=table.pk)
    if status is None:
        return False
    lease_s = LeaseTimes.from_settings().lease_s if lease_s is None else lease_s
    fields: dict[str, Any] = {
        "status": status,
        "attempts": table.attempts + 1,
        "progress_at": now,
        "started_at": table.started_at or now,
        "waiting_since": table.waiting_since or now,
        "lease_owner": owner,
    }
    # The row is locked: a lease seen free (or ours) stays so; another's is taken only if
    # expired on the database's clock (checked in the statement).
    taking_over = bool(table.lease_owner and table.lease_owner != owner)
    params = [Table._meta.get_field(name).get_db_prep_save(fields[name], connection) for name in _START_FIELDS]
    if not _start_sql.run([*params, *([lease_s] if owner else []), table.pk], leased=bool(owner),
                          taking_over=taking_over):
        raise LeaseHeld(table.pk, table.lease_owner)
    for name, value in fields.items():
        setattr(table, name, value)
    # Near enough for the caller; the row has the database's clock.
    table.lease_expires_at = now + timedelta(seconds=lease_s) if owner else None
    return True


@statement("lifecycle.start", *({"leased": a, "taking_over": b} for a in (True, False) for b in (True, False)))
def _start_sql(leased: bool, taking_over: bool) -> str:
    """The start's UPDATE, once an attempt: written out (the ORM's cost more to build than
    to run). `leased`: the lease expires a parameter's seconds from the database's now;
    `taking_over`: another attempt's lease is taken only once expired."""
    t = Names(Table)
    sets = ", ".join(f"{t.col(name)} = %s" for name in _START_FIELDS)
    expires = db_now(plus_seconds=True) if leased else "NULL"
    return (f"UPDATE {t.TABLE} SET {sets}, {t.lease_expires_at} = {expires} WHERE {t.id} = %s"
            + (f" AND {t.lease_expires_at} < {db_now()}" if taking_over else ""))


_START_FIELDS = ("status", "attempts", "progress_at", "started_at", "waiting_since", "lease_owner")


def table_progress(*, table: Table, now: datetime) -> dict[str, Any]:
    """Games were recorded: the fields to set in the recorder's UPDATE of the row (a sign of
    life; the referee accepted the table, so the bots' connect wait is over). Empty for a
    closed table. The recorder holds the tournament's lock, which every close also takes."""
    if next_status(table.status, Event.PROGRESS, table_id=table.pk) is None:
        return {}
    return {"progress_at": now, "waiting_since": None}


def table_waiting_for(*, table_id: int, bot_ids: list[int]) -> None:
    """Note which bots the attempt found not connected to its referee, by name: the table
    waits for them (shown while `waiting_since` is set, that is until the referee starts
    the table). Not a transition: it changes neither status nor lease."""
    names = sorted(Bot.objects.filter(pk__in=bot_ids).values_list("name", flat=True)) if bot_ids else []
    Table.objects.filter(pk=table_id).update(waiting_for=names)


def table_progress_save(
    *, table_id: int, fields: dict[str, Any], owner: str | None = None, increments: dict[str, int] | None = None,
) -> None:
    """The recorder's UPDATE of the row (its counters and `table_progress`'s fields), fenced
    by the lease: with an `owner`, it applies only while that attempt holds the lease, else
    raises LeaseLost so the recording transaction rolls back (a taken-over attempt's late
    games are never recorded). A close or a cancel leaves the owner as it was, so the
    holder's late games still count on a table closed meanwhile, as before leases. One
    statement, the one the recorder made anyway: written out (plain values, and counters
    raised by `increments`), as the ORM spent more building it than PostgreSQL running it."""
    params = [Table._meta.get_field(name).get_db_prep_save(value, connection) for name, value in fields.items()]
    steps = increments or {}
    if not params and not steps:
        return
    params += [*steps.values(), table_id]
    fenced = owner is not None
    if fenced:
        params.append(owner)
    updated = _progress_sql.run(params, sets=tuple(fields), raises=tuple(steps), fenced=fenced)
    if not updated and owner is not None:
        raise LeaseLost(table_id, owner)


@statement("lifecycle.progress-save",
           {"sets": ("progress_at", "waiting_since", "games_rated"), "raises": ("games_recorded",), "fenced": True},
           {"sets": (), "raises": ("games_recorded",), "fenced": False})
def _progress_sql(sets: tuple[str, ...], raises: tuple[str, ...], fenced: bool) -> str:
    t = Names(Table)
    assignments = [f"{t.col(name)} = %s" for name in sets] + [f"{t.col(name)} = {t.col(name)} + %s" for name in raises]
    return (f"UPDATE {t.TABLE} SET {', '.join(assignments)} WHERE {t.id} = %s"
            + (f" AND {t.lease_owner} = %s" if fenced else ""))


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
    field = Table._meta.get_field("finished_at")
    _close_sql.run([status, table.last_error, field.get_db_prep_save(now, connection), table.pk])
    return True


@statement("lifecycle.close")
def _close_sql() -> str:
    """The close's UPDATE, written out: `save(update_fields=...)` cost more to build, once
    a table, than to run."""
    t = Names(Table)
    return f"UPDATE {t.TABLE} SET {t.status} = %s, {t.last_error} = %s, {t.finished_at} = %s WHERE {t.id} = %s"


# --- as one conditional UPDATE -------------------------------------------------------------


def _update(
    table_id: int, event: Event, fields: dict[str, Any], extra: Q | None = None, owner: str | None = None
) -> bool:
    """Apply `event` to one table if its status allows it (and `extra` holds); False when it
    did not apply because the table is closed or `extra` did not hold. With an `owner`, it
    applies only while that attempt holds the lease: LeaseLost when another does."""
    transition = TRANSITIONS[event]
    if transition.target is not None:
        fields = {**fields, "status": transition.target}
    condition = Q(pk=table_id, status__in=transition.sources)
    if extra is not None:
        condition &= extra
    if owner is not None:
        condition &= Q(lease_owner=owner)
    if Table.objects.filter(condition).update(**fields):
        return True
    row = Table.objects.filter(pk=table_id).values_list("status", "lease_owner").first()
    if row is None:
        raise Table.DoesNotExist(f"table {table_id} does not exist")
    status, held_by = row
    if next_status(status, event, table_id=table_id) is None:  # raises when the event is illegal
        return False
    if owner is not None and held_by != owner:
        raise LeaseLost(table_id, owner)
    return False


def _lease_free_until(retry_in_s: float | None) -> dict[str, Any]:
    """Free the lease; with a retry due in `retry_in_s`, a reaper may claim the table one
    lease after that (the retry was lost with its worker), not before."""
    if retry_in_s is None:
        return {"lease_owner": "", "lease_expires_at": None}
    return {"lease_owner": "", "lease_expires_at": _db_now_plus(retry_in_s + LeaseTimes.from_settings().lease_s)}


def table_wait(
    *, table_id: int, error: str, waiting_for_bots: bool = False, now: datetime | None = None,
    owner: str | None = None, retry_in_s: float | None = None,
) -> bool:
    """The attempt ended without finishing the table; it will be retried in `retry_in_s`.
    Only a retry that waits for absent bots keeps `waiting_since` (the connect deadline
    runs on); any other (referee down, aborted) starts the connect wait afresh. The lease
    is freed until the retry is due; `owner` fences it (LeaseLost if taken over)."""
    fields: dict[str, Any] = {
        "last_error": error[:1000], "progress_at": now or timezone.now(), **_lease_free_until(retry_in_s),
    }
    if not waiting_for_bots:
        fields["waiting_since"] = None
    return _update(table_id, Event.WAIT, fields, owner=owner)


def table_busy(*, table_id: int, owner: str | None = None, retry_in_s: float | None = None) -> bool:
    """Another worker is playing this table at the referee: this attempt does not count.
    The lease is freed until the retry is due; `owner` fences it."""
    return _update(
        table_id, Event.BUSY, {"attempts": F("attempts") - 1, **_lease_free_until(retry_in_s)},
        Q(attempts__gt=0), owner=owner,
    )


def table_lease_renew(*, table_id: int, owner: str, lease_s: float | None = None) -> bool:
    """The holder is alive (its heartbeat thread): its lease runs `lease_s` from now on
    the database's clock. False when the table closed; LeaseLost when it was taken over."""
    lease_s = LeaseTimes.from_settings().lease_s if lease_s is None else lease_s
    return _update(table_id, Event.HEARTBEAT, {"lease_expires_at": _db_now_plus(lease_s)}, owner=owner)


def lease_owner_process_gone(owner: str) -> bool:
    """Whether the attempt `owner` ran in a process of this host that exists no more (or is
    a zombie): e.g. a worker's pool child killed (the OOM killer), whose task the broker
    redelivers at once. False whenever unsure (another host, a live or unknown pid)."""
    host, _, rest = owner.partition(":")
    pid_text = rest.partition(":")[0]
    if host != _HOST or not pid_text.isdigit() or int(pid_text) == os.getpid():
        return False
    pid = int(pid_text)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:
        return False  # it exists (not ours to signal)
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            return stat.read().rsplit(b")", 1)[1].split()[0] == b"Z"
    except (OSError, IndexError):
        return False


def table_lease_break(*, table_id: int, owner: str, now: datetime | None = None) -> bool:
    """The claim `stale` makes once a lease expires, made at once for an attempt known dead
    (`lease_owner_process_gone`) or ended (the attempt a retry continues): frees the lease
    if `owner` still holds it. The dead process's stream to its referee closed with it (an
    ended attempt cancelled its own), so the table can be played again now."""
    fields = {"lease_owner": "", "lease_expires_at": None, "progress_at": now or timezone.now()}
    return _update(table_id, Event.STALE, fields, Q(lease_owner=owner))


def tables_claim_orphaned() -> list[int]:
    """Claim the running/waiting tables of running tournaments whose lease is held by an
    attempt in a process of this host that exists no more (`lease_owner_process_gone`: a
    worker killed with its pool, then restarted by its supervisor), without waiting for the
    lease to expire; the caller re-enqueues them. The broker redelivers such a worker's
    tasks only after its visibility timeout (an hour on Redis), and its lease would hold
    the table for up to TIENLEN_LEASE_SECONDS more: a reaper of the restarted worker finds
    it on its next pass instead. Each claim is `table_lease_break`'s conditional UPDATE
    (only while that owner still holds the lease), so two reapers cannot both claim it.
    Holders of other hosts, or whose process may be alive, wait for the lease's expiry."""
    prefix = f"{_HOST}:"
    candidates = Table.objects.filter(
        status__in=TRANSITIONS[Event.STALE].sources, lease_owner__startswith=prefix,
        tournament__status=Tournament.Status.RUNNING,
    ).order_by("id").values_list("id", "lease_owner")
    return [table_id for table_id, owner in candidates
            if lease_owner_process_gone(owner) and table_lease_break(table_id=table_id, owner=owner)]


def tables_claim_stale(*, stale_after_s: float, now: datetime | None = None) -> list[int]:
    """Claim the running/waiting tables of running tournaments whose holder is presumed
    dead, so the caller re-enqueues them: their lease expired (the holder stopped renewing
    it, or a retry due long ago never came), or they were silent (no attempt begun, no game
    recorded, no retry noted) for `stale_after_s`, the outer bound
    (TIENLEN_STALE_TABLE_SECONDS), which also restarts a table stuck at a referee.

    Each claim is a conditional UPDATE that frees the lease (fencing the old holder: its
    later writes raise LeaseLost) and refreshes `progress_at`: of two reapers racing, only
    one sees the table stale, so a table is enqueued once per claim. The claimed table is
    then re-claimed only after the outer bound, if the enqueued task never starts. A holder
    alive after all is harmless: its records are refused and it stops; the new attempt's
    referee call is refused (ALREADY_EXISTS) until the old one's stream is gone.

    Times are the database's clock; `now` (tests) replaces it.
    """
    db_now: Any = Now() if now is None else now
    cutoff = db_now - Value(timedelta(seconds=stale_after_s)) if now is None else now - timedelta(seconds=stale_after_s)
    silent = Q(progress_at__lt=cutoff) | Q(progress_at__isnull=True, started_at__lt=cutoff)
    expired = Q(lease_expires_at__lt=db_now)
    stale = (silent | expired) & Q(tournament__status=Tournament.Status.RUNNING)
    sources = TRANSITIONS[Event.STALE].sources
    claim = {"progress_at": db_now, "lease_owner": "", "lease_expires_at": None}
    claimed = []
    candidates = Table.objects.filter(stale, status__in=sources)
    for table_id in candidates.order_by("id").values_list("id", flat=True):
        if Table.objects.filter(stale, pk=table_id, status__in=sources).update(**claim):
            claimed.append(table_id)
    return claimed


def tables_claim_lost(*, older_than_s: float, now: datetime | None = None) -> list[int]:
    """Claim the pending tables of running tournaments that no attempt ever started and that
    waited `older_than_s` (since their creation, or their last claim here), so the caller
    re-enqueues them: the caller knows their first task is lost (the tables' queue is
    empty, so no message for them waits there). A task a worker had received but not yet
    begun (its plan not yet run: no lease) when the worker was killed stays in the broker's
    unacked set for the visibility timeout, an hour on Redis; a stopped worker keeps its
    received tasks as long as it is stopped. A table whose task was only slow to start gets
    a second one, harmless: the later copy finds the table played or held. Each claim is a
    conditional UPDATE of `progress_at` (of two reapers racing, one claims it), which also
    spaces the claims of one table `older_than_s` apart. Times are the database's clock."""
    db_now: Any = Now() if now is None else now
    cutoff = db_now - Value(timedelta(seconds=older_than_s)) if now is None else now - timedelta(seconds=older_than_s)
    waited = Q(progress_at__lt=cutoff) | Q(progress_at__isnull=True, created_at__lt=cutoff)
    lost = waited & Q(status=Status.PENDING, attempts=0, tournament__status=Tournament.Status.RUNNING)
    claimed = []
    for table_id in Table.objects.filter(lost).order_by("id").values_list("id", flat=True):
        if Table.objects.filter(lost, pk=table_id).update(progress_at=db_now):
            claimed.append(table_id)
    return claimed


def tables_cancel(*, tournament_id: int) -> int:
    """Cancel every open table of a tournament (its recorded games stay); returns how many."""
    transition = TRANSITIONS[Event.CANCEL]
    return Table.objects.filter(tournament_id=tournament_id, status__in=transition.sources).update(
        status=transition.target
    )


def tables_cancel_pending(*, table_ids: list[int]) -> int:
    """Cancel those of these tables no attempt has started (a conditional UPDATE: a worker
    starting one at the same instant either started it first, and it plays on, or finds
    it cancelled); returns how many. An entrant taken out of a running round robin."""
    if not table_ids:
        return 0
    return Table.objects.filter(pk__in=table_ids, status=Status.PENDING).update(
        status=TRANSITIONS[Event.CANCEL].target
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
