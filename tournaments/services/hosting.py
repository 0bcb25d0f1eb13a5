"""Hosted bots (docs/hosting.md): submitted versions, their validation, a bot's switch
between remote and hosted, and the sessions a runner plays a table with.

The invariants, each written here once:

- A submission is immutable once stored; it goes QUEUED -> VALIDATING -> READY | FAILED,
  each step a conditional UPDATE (a redelivered validation task cannot run it twice nor
  move a finished one back). Only READY ever becomes a bot's `active_submission`: a failed
  version never plays, and the previous ready one stays active.
- A bot is HOSTED only with a ready active submission.
- A session's token is drawn by the platform when a runner starts the session, stored
  hashed, and accepted by the referee only while the session runs (token_store); the bot's
  own (remote) token stops connecting while it is hosted.
- Which table plays with which submission is fixed when its session is created: a newer
  version promoted meanwhile plays the later tables.
- Promoting a version (`_promote`, the one place a bot's active version changes) keeps
  the bot's ratings but makes each provisional again for PROVISIONAL_GAMES rated games.
- With a gate (Bot.gate), a new ready version is not promoted at once: a runner first
  plays it against its predecessor (unrated, in no tournament, seen by the owner only);
  the owner promotes it, or, with the automatic gate, it is promoted unless it did worse.
- A bot's storage is its own: written only from its own sessions' ends, cleared only by
  its owner, mounted into no other bot's sandbox (tournaments.hosting.storage).
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import IntegrityError, transaction
from django.db.models import F, Max, Q
from django.db.models.functions import Now
from django.utils import timezone

from tournaments import jobs
from tournaments.hosting import archive
from tournaments.jobs import Job
from tournaments.models import (
    PROVISIONAL_GAMES,
    Bot,
    BotStorage,
    BotSubmission,
    CasualSeat,
    CasualTable,
    Entrant,
    Gate,
    GateStatus,
    GateVerdict,
    HostedSession,
    Hosting,
    Rating,
    TableSeat,
    Tournament,
)
from tournaments.play.lifecycle import OPEN
from tournaments.tokens import BOT_TOKEN_PREFIX, token_generate, token_hash

#: A log kept in the database, per session and per validation: the sandbox keeps 1 MiB of
#: output (its first quarter and last three quarters); what is stored is cut the same way.
MAX_STORED_LOG = 256 * 1024
#: How often a session whose start failed on the platform's side is tried again.
MAX_SESSION_STARTS = 3
#: A crash loop: this many sessions ended by the bot's own fault (a crash, its memory cap,
#: leaving on its own) within CRASH_WINDOW stops hosting it until the owner acts.
CRASH_LOOP_ENDS = 3
CRASH_WINDOW = timedelta(minutes=10)

Status = BotSubmission.Status


def bounded_text(text: str, limit: int = MAX_STORED_LOG) -> tuple[str, bool]:
    """`text` cut to `limit` characters (its first quarter and last three quarters, with a
    marker saying how much was left out), and whether it was cut."""
    if len(text) <= limit:
        return text, False
    head, tail = limit // 4, limit - limit // 4
    return f"{text[:head]}\n[... {len(text) - head - tail} characters left out ...]\n{text[-tail:]}", True


def _own(*, bot: Bot, user) -> None:
    if not (user is not None and user.is_authenticated and bot.owner_id == user.pk):
        raise PermissionDenied("Only the bot's owner may do this.")
    if bot.house_bot:
        raise ValidationError({"bot": "House bots run inside the referee: they take no code."})
    if not bot.is_active:
        raise ValidationError({"bot": "This bot is revoked."})


def submission_create(*, bot: Bot, user, data: bytes, runtime: str, sdk_version: str = "") -> BotSubmission:
    """Store a new version of the bot's code (checked: tournaments.hosting.archive) and
    enqueue its validation after commit. Raises ValidationError with the archive's problem."""
    _own(bot=bot, user=user)
    try:
        manifest = archive.check(data, runtime)
    except archive.ArchiveError as exc:
        raise ValidationError({"archive": str(exc)}) from exc
    sdk_version = sdk_version.strip()[:32]
    if any(not (c.isalnum() or c in ".+-_") for c in sdk_version):
        raise ValidationError({"sdk_version": "Use letters, digits and . + - _ only."})
    for _ in range(3):
        try:
            with transaction.atomic():
                seq = (BotSubmission.objects.filter(bot=bot).aggregate(m=Max("seq"))["m"] or 0) + 1
                submission = BotSubmission.objects.create(
                    bot=bot, seq=seq, runtime=runtime, entry=manifest.entry, sdk_version=sdk_version,
                    sha256=manifest.sha256, size=len(data), unpacked_size=manifest.unpacked_bytes,
                    files=len(manifest.files), archive=data, uploaded_by=user,
                )
                jobs.enqueue_on_commit(Job.VALIDATE_SUBMISSION, submission.pk)
                return submission
        except IntegrityError:
            continue  # two uploads raced for the same number
    raise ValidationError({"archive": "Another upload of this bot happened at the same moment; try again."})


def submission_validation_begin(*, submission_id: int) -> bool:
    """QUEUED -> VALIDATING; False when another delivery of the task already took it (or
    it is finished), so the validation runs once."""
    return bool(BotSubmission.objects.filter(pk=submission_id, status=Status.QUEUED)
                .update(status=Status.VALIDATING))


def submission_validation_retry(*, submission_id: int) -> None:
    """VALIDATING -> QUEUED: the runner failed on the platform's side (not the code's fault)."""
    BotSubmission.objects.filter(pk=submission_id, status=Status.VALIDATING).update(status=Status.QUEUED)


def submission_validation_finish(*, submission_id: int, ok: bool, log: str, detail: str) -> BotSubmission:
    """VALIDATING -> READY or FAILED with its log; a READY version newer than the bot's
    active one becomes active (tables already seated keep theirs: `hosted_sessions_ensure`)."""
    text, _ = bounded_text(log)
    with transaction.atomic():
        submission = BotSubmission.objects.select_for_update().get(pk=submission_id)
        if submission.status != Status.VALIDATING:
            return submission
        submission.status = Status.READY if ok else Status.FAILED
        submission.validation_log = text
        submission.detail = detail[:500]
        submission.validated_at = timezone.now()
        submission.save(update_fields=["status", "validation_log", "detail", "validated_at"])
        if ok:
            bot = Bot.objects.select_for_update().get(pk=submission.bot_id)
            current = bot.active_submission
            if current is not None and current.seq > submission.seq:
                pass  # a newer version is already active
            elif current is None or bot.gate == Gate.OFF:
                _promote(bot, submission)
            else:
                submission.gate_status = GateStatus.QUEUED
                submission.gate_against = current
                submission.save(update_fields=["gate_status", "gate_against"])
                jobs.enqueue_on_commit(Job.RUN_GATE, submission.pk)
    return submission


def _promote(bot: Bot, submission: BotSubmission) -> None:
    """`submission` (READY) becomes the bot's active version: the tables seated already
    finish on the version they started with (`hosted_sessions_ensure`), later ones play
    this one. The bot keeps its ratings, each provisional again for PROVISIONAL_GAMES
    rated games (Rating.provisional). Called with the bot's row locked."""
    if bot.active_submission_id == submission.pk:
        return
    had_one = bot.active_submission_id is not None
    bot.active_submission = submission
    bot.hosting_stopped = ""  # new code: hosted again
    bot.save(update_fields=["active_submission", "hosting_stopped"])
    submission.promoted_at = timezone.now()
    submission.save(update_fields=["promoted_at"])
    if had_one:
        Rating.objects.filter(bot=bot).update(provisional_until=F("games") + PROVISIONAL_GAMES)


def submission_promote(*, bot: Bot, user, seq: int) -> BotSubmission:
    """The owner makes a ready version the active one (after its gate, or instead of it;
    an older ready version too: a roll-back)."""
    _own(bot=bot, user=user)
    with transaction.atomic():
        locked = Bot.objects.select_for_update().get(pk=bot.pk)
        submission = BotSubmission.objects.filter(bot=locked, seq=seq).defer("archive").first()
        if submission is None:
            raise ValidationError({"version": f"This bot has no version s{seq}."})
        if submission.status != Status.READY:
            raise ValidationError({"version": f"s{seq} is {submission.status}: only a ready version can play."})
        if locked.active_submission_id == submission.pk:
            raise ValidationError({"version": f"s{seq} is already the active version."})
        _promote(locked, submission)
    return submission


def bot_gate_set(*, bot: Bot, user, gate: str) -> Bot:
    """Whether the bot's new ready versions first play their predecessor (docs/hosting.md)."""
    _own(bot=bot, user=user)
    if gate not in Gate.values:
        raise ValidationError({"gate": f"Use one of {', '.join(Gate.values)}."})
    bot.gate = gate
    bot.save(update_fields=["gate"])
    return bot


# --- the gate ------------------------------------------------------------------------------


def gate_begin(*, submission_id: int) -> BotSubmission | None:
    """QUEUED -> PLAYING; None when another delivery took it or it is over (it runs once)."""
    if not BotSubmission.objects.filter(pk=submission_id, gate_status=GateStatus.QUEUED, status=Status.READY,
                                        gate_against__isnull=False).update(gate_status=GateStatus.PLAYING):
        return None
    return BotSubmission.objects.select_related("gate_against", "bot").get(pk=submission_id)


def gate_retry(*, submission_id: int) -> None:
    """PLAYING -> QUEUED: the runner failed on its own side (the gate is played again)."""
    BotSubmission.objects.filter(pk=submission_id, gate_status=GateStatus.PLAYING).update(
        gate_status=GateStatus.QUEUED)


@dataclass(frozen=True)
class GateResult:
    ok: bool  # False: the gate could not be played out (a version crashed, a forfeit)
    games: int
    sets: int
    score: float | None  # points per game, new minus old, paired per duplicate set
    half_width: float | None  # of its 95 % interval
    verdict: str  # a GateVerdict value ("" when not ok)
    detail: str
    log: str


def gate_finish(*, submission_id: int, result: GateResult) -> BotSubmission:
    """PLAYING -> DONE (or FAILED) with the result; with the automatic gate, a version that
    did not do worse than its predecessor is promoted (if no newer one is active)."""
    text, _ = bounded_text(result.log)
    with transaction.atomic():
        submission = BotSubmission.objects.select_for_update().defer("archive").get(pk=submission_id)
        if submission.gate_status != GateStatus.PLAYING:
            return submission
        submission.gate_status = GateStatus.DONE if result.ok else GateStatus.FAILED
        submission.gate_games, submission.gate_sets = result.games, result.sets
        submission.gate_score, submission.gate_half_width = result.score, result.half_width
        submission.gate_verdict = result.verdict if result.ok else ""
        submission.gate_detail = result.detail[:500]
        submission.gate_log = text
        submission.gate_finished_at = timezone.now()
        submission.save(update_fields=["gate_status", "gate_games", "gate_sets", "gate_score", "gate_half_width",
                                       "gate_verdict", "gate_detail", "gate_log", "gate_finished_at"])
        bot = Bot.objects.select_for_update().get(pk=submission.bot_id)
        current = bot.active_submission
        if (result.ok and bot.gate == Gate.AUTO and result.verdict != GateVerdict.WORSE
                and (current is None or current.seq < submission.seq)):
            _promote(bot, submission)
    return submission


# --- storage -------------------------------------------------------------------------------


def bot_storage_data(*, bot_id: int) -> bytes:
    """What the bot's last session left in its storage (b"": nothing yet); for its runner."""
    row = BotStorage.objects.filter(bot_id=bot_id).values_list("data", flat=True).first()
    return bytes(row) if row is not None else b""


def bot_storage_clear(*, bot: Bot, user) -> bool:
    """The owner empties the bot's storage (its next session starts with none); True if
    there was any. A session running now keeps its copy and writes it back when it ends."""
    _own(bot=bot, user=user)
    deleted, _ = BotStorage.objects.filter(bot=bot).delete()
    return bool(deleted)


def bot_hosting_set(*, bot: Bot, user, hosting: str) -> Bot:
    """Switch a bot between remote and hosted. Hosted needs a ready version; while hosted,
    the bot's own token stops connecting (its author's process cannot join its tables)."""
    _own(bot=bot, user=user)
    if hosting not in Hosting.values:
        raise ValidationError({"hosting": f"Use one of {', '.join(Hosting.values)}."})
    if hosting == Hosting.HOSTED and bot.active_submission_id is None:
        raise ValidationError({"hosting": "Submit a version and wait until it is ready before hosting this bot."})
    if hosting == Hosting.REMOTE and bot.hosting == Hosting.HOSTED and _in_play(bot):
        # Its tables may share deals with other tables because it was isolated: a process
        # of the author's, with a network, must not join them now.
        raise ValidationError({"hosting": "This bot is entered in a scheduled or running tournament, whose "
                               "deals it may share with other tables because it is hosted: switch it to "
                               "remote once those are over (or leave the ladders)."})
    bot.hosting = hosting
    bot.hosting_stopped = ""  # the owner's decision lifts a crash-loop stop
    bot.save(update_fields=["hosting", "hosting_stopped"])
    return bot


def _in_play(bot: Bot) -> bool:
    return Entrant.objects.filter(
        bot=bot, status=Entrant.Status.ACTIVE,
        tournament__status__in=(Tournament.Status.SCHEDULED, Tournament.Status.RUNNING)).exists()


# --- sessions ------------------------------------------------------------------------------


def _sessions_create(seats, *, decide, **table) -> list[int]:
    """One session per `(bot_id, submission_id)` of `seats` for the table named by `table`
    (`table_id=` or `casual_table_id=`), queued for a runner after commit: the one place
    both kinds of table create sessions. Each bot's row is locked while deciding, so two
    attempts at a table never start the same bot twice. `decide(last)` sees the bot's last
    session of this table (or None) and returns the version to start, or None to skip."""
    created = []
    for bot_id, submission_id in seats:
        with transaction.atomic():
            Bot.objects.select_for_update().filter(pk=bot_id).first()  # one creator at a time
            last = HostedSession.objects.filter(bot_id=bot_id, **table).order_by("-id").first()
            version = decide(last, submission_id)
            if version is None:
                continue
            session = HostedSession.objects.create(bot_id=bot_id, submission_id=version, **table)
            jobs.enqueue_on_commit(Job.RUN_HOSTED_SESSION, session.pk)
            created.append(session.pk)
    return created


def _tournament_session_version(last: HostedSession | None, active: int) -> int | None:
    if last is None:
        return active
    if last.status != HostedSession.Status.ENDED or last.fault == "bot":
        return None  # live, or ended by the bot's own fault: the table's deadline decides
    return last.submission_id  # a table resumed keeps the version it started with


def _casual_session_version(last: HostedSession | None, active: int) -> int | None:
    return active if last is None else None  # a casual table is played once: never restarted


def hosted_sessions_ensure(*, table_id: int) -> list[int]:
    """The table's hosted seats each get a session (queued for a runner after commit) if
    none is queued or running for it: called by every attempt at the table, so a session
    that ended (a crash) is not restarted here, but a table resumed later gets one again
    only if the last one ended on the platform's side. Returns the sessions created."""
    seats = (TableSeat.objects.filter(table_id=table_id, entrant__bot__hosting=Hosting.HOSTED,
                                      entrant__bot__active_submission__isnull=False, entrant__bot__hosting_stopped="")
             .values_list("entrant__bot_id", "entrant__bot__active_submission_id"))
    return _sessions_create(seats, decide=_tournament_session_version, table_id=table_id)


def casual_hosted_sessions_ensure(*, casual_table_id: int) -> list[int]:
    """The casual table's hosted bots each get a session for it (queued for a runner after
    commit), as a tournament table's do (`hosted_sessions_ensure`): once per table, with the
    bot's active version, ended by its runner when the table closes. Returns the sessions
    created. Its log is the bot's owner's only, as every session's."""
    seats = (CasualSeat.objects.filter(table_id=casual_table_id, bot__hosting=Hosting.HOSTED,
                                       bot__active_submission__isnull=False, bot__hosting_stopped="")
             .values_list("bot_id", "bot__active_submission_id"))
    return _sessions_create(seats, decide=_casual_session_version, casual_table_id=casual_table_id)


def hosted_seats_pending(*, table_id: int) -> set[int]:
    """Bots of the table whose absence is not theirs to answer for: a hosted session is
    queued or starting, or the last one ended on the platform's side (a runner failure).
    The attempt does not forfeit them past the connect deadline; it waits."""
    sessions = HostedSession.objects.filter(table_id=table_id, bot__hosting=Hosting.HOSTED)
    out: set[int] = set()
    last: dict[int, HostedSession] = {}
    for session in sessions.order_by("id"):
        last[session.bot_id] = session
    for bot_id, session in last.items():
        if session.status != HostedSession.Status.ENDED or session.fault == "platform":
            out.add(bot_id)
    return out


@dataclass(frozen=True)
class SessionStart:
    session: HostedSession
    token: str  # the clear token: to the sandbox's environment only, never stored


def hosted_session_begin(*, session_id: int, runner: str) -> SessionStart | None:
    """A runner takes the session: RUNNING with a fresh token. None when it is over (its
    table closed, or it ended) — a redelivered task for a finished session does nothing.
    A RUNNING session is taken only once its lease expired (its runner died and the broker
    redelivered the task): it gets a new token, so the old sandbox, if it somehow lived,
    can no longer connect; while the lease is live, None (a late duplicate of the task)."""
    token = token_generate(prefix=BOT_TOKEN_PREFIX)
    with transaction.atomic():
        session = (HostedSession.objects.select_for_update(of=("self",))
                   .select_related("submission", "table", "casual_table", "bot").filter(pk=session_id).first())
        if session is None or session.status == HostedSession.Status.ENDED:
            return None
        if (session.status == HostedSession.Status.RUNNING and session.lease_expires_at is not None
                and session.lease_expires_at > timezone.now()):
            return None  # a live runner holds it (this is a late redelivery of its task)
        if ((session.table is not None and session.table.status not in OPEN)
                or (session.casual_table is not None and not session.casual_table.is_open)):
            _end(session, reason="stopped", fault="none", detail="the table closed before the session started")
            return None
        session.status = HostedSession.Status.RUNNING
        session.token_hash = token_hash(token)
        session.runner = runner[:64]
        session.starts += 1
        session.started_at = timezone.now()
        session.save(update_fields=["status", "token_hash", "runner", "starts", "started_at"])
    hosted_session_renew(session_id=session_id, runner=runner)
    return SessionStart(session=session, token=token)


def _lease_s() -> float:
    return float(getattr(settings, "TIENLEN_LEASE_SECONDS", 30.0))


def hosted_session_renew(*, session_id: int, runner: str) -> bool:
    """The runner is alive: its lease on the session runs one lease (TIENLEN_LEASE_SECONDS)
    from now, on the database's clock. False when another runner took the session over
    (this one must stop its bot and record nothing) or it ended."""
    return bool(HostedSession.objects.filter(pk=session_id, status=HostedSession.Status.RUNNING, runner=runner[:64])
                .update(lease_expires_at=Now() + timedelta(seconds=_lease_s())))


def hosted_sessions_claim_stale() -> list[int]:
    """Running sessions whose runner stopped renewing the lease (it died: its sandbox died
    with it): queued again, with no token, for another runner; the caller enqueues them.
    Each claim is one conditional UPDATE, so two reapers never claim one session twice."""
    claimed = []
    stale = Q(status=HostedSession.Status.RUNNING, lease_expires_at__lt=Now())
    for session_id in HostedSession.objects.filter(stale).values_list("id", flat=True):
        if HostedSession.objects.filter(stale, pk=session_id).update(
                status=HostedSession.Status.QUEUED, token_hash=None, runner="", lease_expires_at=None):
            claimed.append(session_id)
    return claimed


def hosted_session_should_stop(*, session_id: int) -> bool:
    """The runner's poll: stop once the session's table closed (or the session was ended)."""
    row = (HostedSession.objects.filter(pk=session_id)
           .values_list("status", "table__status", "casual_table__status").first())
    if row is None:
        return True
    status, table_status, casual_status = row
    return (status == HostedSession.Status.ENDED or (table_status is not None and table_status not in OPEN)
            or (casual_status is not None and casual_status not in _CASUAL_OPEN))


_CASUAL_OPEN = (CasualTable.Status.PENDING, CasualTable.Status.RUNNING)  # CasualTable.is_open


def _end(session: HostedSession, **fields) -> None:
    for name, value in fields.items():
        setattr(session, name, value)
    session.status = HostedSession.Status.ENDED
    session.token_hash = None
    session.lease_expires_at = None
    session.ended_at = timezone.now()
    session.save()


def hosted_session_end(
    *, session_id: int, reason: str, fault: str, detail: str, exit_code: int | None, log: str,
    log_bytes: int, log_truncated: bool, retry: bool = False, runner: str | None = None,
    storage: tuple[bytes, int, int] | None = None,
) -> bool:
    """The session's end as the sandbox reported it. With `retry` (the platform's fault and
    starts left), it goes back to QUEUED for another runner and True is returned; its log
    so far is kept. Its token stops working at once either way. With `runner`, only while
    that runner holds it (a runner whose session was taken over records nothing).
    `storage`: (gzipped tar, bytes, entries) the session left in the bot's storage, kept for
    its next session; None keeps what was there."""
    text, cut = bounded_text(log)
    with transaction.atomic():
        session = HostedSession.objects.select_for_update().filter(pk=session_id).first()
        if session is None or session.status == HostedSession.Status.ENDED:
            return False
        if runner is not None and session.runner != runner[:64]:
            return False
        retry = retry and session.starts < MAX_SESSION_STARTS
        session.reason, session.fault, session.detail = reason[:32], fault[:16], detail[:500]
        session.exit_code, session.log_bytes = exit_code, log_bytes
        session.log, session.log_truncated = text, log_truncated or cut
        if storage is not None:
            data, size, entries = storage
            BotStorage.objects.update_or_create(bot_id=session.bot_id, defaults={
                "data": data, "size": size, "files": entries, "session": session})
        if retry:
            session.status = HostedSession.Status.QUEUED
            session.token_hash = None
            session.lease_expires_at = None
            session.save()
            return True
        _end(session)
        if fault == "bot":
            _crash_loop_check(session)
    return False


def _crash_loop_check(session: HostedSession) -> None:
    """Stop hosting a bot whose sessions keep ending by its own fault (CRASH_LOOP_ENDS
    within CRASH_WINDOW), saying why on its owner's page; its seats are then absent and the
    connect deadline forfeits them, as for a remote bot that stopped."""
    recent = HostedSession.objects.filter(bot_id=session.bot_id, fault="bot",
                                          ended_at__gte=timezone.now() - CRASH_WINDOW)
    if recent.count() < CRASH_LOOP_ENDS:
        return
    why = (f"stopped at {timezone.now():%Y-%m-%d %H:%M} UTC: {CRASH_LOOP_ENDS} sessions ended by the bot's own "
           f"fault within {int(CRASH_WINDOW.total_seconds() // 60)} minutes (the last: {session.reason}: "
           f"{session.detail}). Submit a fixed version, or switch hosting on again.")
    Bot.objects.filter(pk=session.bot_id, hosting_stopped="").update(hosting_stopped=why[:300])


def hosted_session_token_bot(*, token: str) -> Bot | None:
    """The bot a running session's token stands for (the referee's token check)."""
    digest = token_hash(token)
    return hosted_session_token_bots(hashes=[digest]).get(digest)


def hosted_session_token_bots(*, hashes: Collection[str]) -> dict[str, Bot]:
    """Token hash -> the bot whose running session it is, for many tokens in one query
    (a burst of connecting bots, checked together by the referee)."""
    sessions = (HostedSession.objects.filter(
        token_hash__in=list(hashes), status=HostedSession.Status.RUNNING,
        bot__hosting=Hosting.HOSTED, bot__revoked_at__isnull=True)
        .select_related("bot").only("token_hash", "bot__id", "bot__name"))
    return {s.token_hash: s.bot for s in sessions if s.token_hash}


def remote_token_bot(*, token: str) -> Bot | None:
    """The bot a remote token stands for: never a hosted bot (its author's process could
    otherwise sit at its tables, with a network, where deals are shared as for isolated bots)."""
    digest = token_hash(token)
    return remote_token_bots(hashes=[digest]).get(digest)


def remote_token_bots(*, hashes: Collection[str]) -> dict[str, Bot]:
    """Token hash -> the remote bot it stands for, for many tokens in one query."""
    bots = (Bot.objects.filter(token_hash__in=list(hashes), revoked_at__isnull=True,
                               hosting=Hosting.REMOTE)
            .only("pk", "name", "token_hash"))
    return {b.token_hash: b for b in bots if b.token_hash}
