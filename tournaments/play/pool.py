"""The referee pool in the platform's database: the referees' registry, and what workers
and the ladder read from it.

Each referee started with the platform's token store registers itself through
`DjangoRefereePool` (the plug-in `referee_service.pool` loads: the referee never imports
this app) and refreshes its row every second. Liveness is judged on the database's clock,
so referees on machines whose clocks disagree are still judged alike. Writes are the
`referee_*` services, reads the `referees_*` / `pool_*` selectors.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from django.conf import settings
from django.db import DatabaseError, IntegrityError
from django.db.models import Q
from django.db.models.functions import Now

from referee_service.pool import BotSlots, PoolMember, RefereeReport
from tournaments.models import Bot, Referee
from tournaments.token_store import _django_setup

#: Rows of referees silent for this long are deleted by the next heartbeat of any referee.
FORGET_AFTER = timedelta(hours=1)


# --- services ------------------------------------------------------------------------------


def referee_heartbeat(*, report: RefereeReport, with_bots: bool = True,
                      seen: list[str] | None = None) -> None:
    """Store a referee's report and mark it alive now (the database's now). Without
    `with_bots` its connected bots are left as last written (the caller knows they are
    unchanged, or writes them a little later), and not marked seen: a referee holding
    thousands of bots then writes a few fields a second, not thousands of entries. With
    them, the bots in `seen` are marked seen (default: all of them)."""
    fields = {
        "address": report.address[:255],
        "capacity": report.capacity,
        "active_tables": report.active_tables,
        "draining": report.draining,
        "started_at": datetime.fromtimestamp(report.started_at, tz=UTC),
        "last_heartbeat": Now(),
    }
    bots = {
        bot_id: {"free": slots.free, "active": slots.active, "version": slots.version[:64]}
        for bot_id, slots in report.bots.items()
    } if with_bots else None
    if bots is not None:
        fields["bots"] = bots
        bots_seen(bot_ids=list(report.bots) if seen is None else seen)
    if Referee.objects.filter(referee_id=report.referee_id).update(**fields):
        return
    if bots is None:  # a row that is gone (forgotten, or left): written whole again
        referee_heartbeat(report=report)
        return
    try:
        Referee.objects.create(referee_id=report.referee_id[:64], **fields)
    except IntegrityError:  # created meanwhile (two heartbeats racing): update it
        Referee.objects.filter(referee_id=report.referee_id).update(**fields)


#: How stale a connected bot's `last_seen_at` may get: it is written at most this often.
SEEN_EVERY = timedelta(minutes=1)
#: A referee's connected bots are written at least this often even when unchanged (and
#: then all marked seen), otherwise only when they change (DjangoRefereePool).
BOTS_EVERY_S = 10.0
#: While its bots keep changing (a burst connecting), a referee holding n bots writes them
#: at most every n x BOTS_GAP_PER_BOT_S seconds, and at least every BOTS_GAP_MAX_S: each
#: write costs the referee ~10 us a bot (the JSON, the query), so the heartbeat's share of
#: its core stays bounded however many bots it holds. Up to 1,000 bots every heartbeat
#: that sees a change writes it (at most ~5 a second), as before; 5,000 bots once a second.
BOTS_GAP_PER_BOT_S = 0.0002
BOTS_GAP_MAX_S = 1.0


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


def referees_live(*, timeout_s: float | None = None, with_bots: bool = True) -> list[Referee]:
    """The pool: referees that reported within the timeout, by id (one query). Without
    `with_bots`, their connected bots are not read (thousands of entries a referee)."""
    timeout = settings.TIENLEN_REFEREE_TIMEOUT_S if timeout_s is None else timeout_s
    live = Referee.objects.filter(last_heartbeat__gte=Now() - timedelta(seconds=timeout))
    return list(live if with_bots else live.defer("bots"))


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
        self.bot_writes = 0  # heartbeats that wrote the bots (tests, benchmarks)
        self.clock = time.monotonic  # tests inject theirs
        self._written: tuple[str, dict[str, BotSlots], float] | None = None  # id, bots, when
        self._all_seen_at = 0.0  # when every connected bot was last marked seen

    def heartbeat(self, report: RefereeReport) -> list[PoolMember]:
        return self._retrying(lambda: self._heartbeat(report))

    def _heartbeat(self, report: RefereeReport) -> list[PoolMember]:
        # The connected bots are written when they changed, and every BOTS_EVERY anyway
        # (then all marked seen, which keeps their last_seen_at within SEEN_EVERY +
        # BOTS_EVERY of now): 5,000 idle bots cost a second's heartbeat nothing but a few
        # fields. While they keep changing, the writes are spaced by the bots' number
        # (BOTS_GAP_PER_BOT_S), and only the newly connected ones are marked seen.
        now = self.clock()
        written = self._written
        seen: list[str] | None
        if (written is None or written[0] != report.referee_id
                or now - self._all_seen_at >= BOTS_EVERY_S):
            with_bots, seen = True, None  # all of them, all marked seen
        else:
            gap = min(BOTS_GAP_MAX_S, len(report.bots) * BOTS_GAP_PER_BOT_S)
            with_bots = written[1] != report.bots and now - written[2] >= gap
            seen = [b for b in report.bots if b not in written[1]] if with_bots else []
        referee_heartbeat(report=report, with_bots=with_bots, seen=seen)
        if with_bots:
            self.bot_writes += 1
            self._written = (report.referee_id, dict(report.bots), now)
            if seen is None:
                self._all_seen_at = now
        self.beats += 1
        if self.beats % 60 == 1:
            referees_forget_dead()
        return [PoolMember(r.referee_id, r.address)
                for r in referees_live(with_bots=False) if not r.draining]

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
