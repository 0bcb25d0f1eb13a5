"""The referee pool in the platform's database: the referees' registry, and what workers
and the ladder read from it.

Each referee started with the platform's token store registers itself through
`DjangoRefereePool` (the plug-in `referee_service.pool` loads: the referee never imports
this app) and refreshes its row every second. Liveness is judged on the database's clock,
so referees on machines whose clocks disagree are still judged alike. Writes are the
`referee_*` services, reads the `referees_*` / `pool_*` selectors.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from django.conf import settings
from django.db import DatabaseError, IntegrityError
from django.db.models import Q
from django.db.models.functions import Now

from referee_service.pool import PoolMember, RefereeReport
from tournaments.models import Bot, Referee
from tournaments.token_store import _django_setup

#: Rows of referees silent for this long are deleted by the next heartbeat of any referee.
FORGET_AFTER = timedelta(hours=1)


# --- services ------------------------------------------------------------------------------


def referee_heartbeat(*, report: RefereeReport) -> None:
    """Store a referee's report and mark it alive now (the database's now)."""
    fields = {
        "address": report.address[:255],
        "capacity": report.capacity,
        "active_tables": report.active_tables,
        "bots": {
            bot_id: {"free": slots.free, "active": slots.active, "version": slots.version[:64]}
            for bot_id, slots in report.bots.items()
        },
        "draining": report.draining,
        "started_at": datetime.fromtimestamp(report.started_at, tz=UTC),
        "last_heartbeat": Now(),
    }
    bots_seen(bot_ids=list(report.bots))
    if Referee.objects.filter(referee_id=report.referee_id).update(**fields):
        return
    try:
        Referee.objects.create(referee_id=report.referee_id[:64], **fields)
    except IntegrityError:  # created meanwhile (two heartbeats racing): update it
        Referee.objects.filter(referee_id=report.referee_id).update(**fields)


#: How stale a connected bot's `last_seen_at` may get: it is written at most this often.
SEEN_EVERY = timedelta(minutes=1)


def bots_seen(*, bot_ids: list[str]) -> int:
    """Note the connected bots as seen now (`Bot.last_seen_at`, the owner's "My bots"):
    one UPDATE touching only the rows older than SEEN_EVERY, so a heartbeat a second
    writes each bot's row once a minute. Ids the referee reports that are not the
    platform's (a test's own token store) are skipped."""
    ids = [int(b) for b in bot_ids if b.isdigit()]
    if not ids:
        return 0
    return Bot.objects.filter(pk__in=ids).filter(
        Q(last_seen_at__isnull=True) | Q(last_seen_at__lt=Now() - SEEN_EVERY)
    ).update(last_seen_at=Now())


def referee_leave(*, referee_id: str) -> None:
    Referee.objects.filter(referee_id=referee_id).delete()


def referees_forget_dead() -> int:
    """Delete the rows of referees silent for over an hour (history is in the logs)."""
    deleted, _ = Referee.objects.filter(last_heartbeat__lt=Now() - FORGET_AFTER).delete()
    return deleted


# --- selectors -----------------------------------------------------------------------------


def referees_live(*, timeout_s: float | None = None) -> list[Referee]:
    """The pool: referees that reported within the timeout, by id (one query)."""
    timeout = settings.TIENLEN_REFEREE_TIMEOUT_S if timeout_s is None else timeout_s
    return list(Referee.objects.filter(last_heartbeat__gte=Now() - timedelta(seconds=timeout)))


@dataclass(frozen=True)
class PoolBot:
    """A bot as the whole pool sees it."""

    version: str
    free: int  # free table slots summed over the referees
    referees: tuple[str, ...]  # ids of the live referees it is connected to


def pool_connected_bots(referees: list[Referee] | None = None) -> dict[str, PoolBot]:
    """Every bot connected to some live referee (bot id as the referee knows it: the
    platform's Bot.pk as text), with its version and free slots across the pool."""
    referees = referees_live() if referees is None else referees
    found: dict[str, tuple[str, int, list[str]]] = {}
    for referee in referees:
        for bot_id, slots in (referee.bots or {}).items():
            version, free, where = found.get(bot_id, ("", 0, []))
            found[bot_id] = (version or str(slots.get("version") or ""),
                             free + int(slots.get("free") or 0), [*where, referee.referee_id])
    return {bot_id: PoolBot(v, f, tuple(w)) for bot_id, (v, f, w) in found.items()}


# --- the referees' plug-in -------------------------------------------------------------------


class DjangoRefereePool:
    """`referee_service.pool.PoolRegistry` on the platform's database (loaded by the
    referee with `--pool auto` next to `DjangoTokenStore`, or `--pool
    tournaments.play.pool:DjangoRefereePool`). Called from one thread of the referee."""

    def __init__(self) -> None:
        _django_setup()
        self.beats = 0

    def heartbeat(self, report: RefereeReport) -> list[PoolMember]:
        return self._retrying(lambda: self._heartbeat(report))

    def _heartbeat(self, report: RefereeReport) -> list[PoolMember]:
        referee_heartbeat(report=report)
        self.beats += 1
        if self.beats % 60 == 1:
            referees_forget_dead()
        return [PoolMember(r.referee_id, r.address) for r in referees_live() if not r.draining]

    def leave(self, referee_id: str) -> None:
        self._retrying(lambda: referee_leave(referee_id=referee_id))

    @staticmethod
    def _retrying(call):
        from django.db import connection

        try:
            return call()
        except DatabaseError:
            # A connection dropped by the server (restart, idle timeout): reconnect once.
            connection.close()
            return call()
