"""The runner: what a Celery worker of the `runner` queue does with hosted bots, on top of
the sandbox (tournaments.hosting) and the services (tournaments.services.hosting).

- `validate_submission(submission)`: the version runs in the same sandbox as it will
  play in. A Python bot first with no way out at all: the SDK's certification
  (`tienlen-bot check --skip-server`: it loads, answers legal plays, respects the clock)
  and a short local game against house bots (`tienlen-bot arena`); then every bot, Python
  or JavaScript, plays a short table against house bots on a private referee of the
  runner, through the relay, as it will on the platform. Every step's log is kept; READY
  only if all pass.
- `run_session(session_id)`: the bot plays its table with no author process: the sandbox
  runs the SDK's client against unix sockets relayed to the live referees, with a token
  drawn for this session. It runs until the table closes (or the bot ends), then is
  stopped and its end, fault and bounded log recorded.

One `Host` per worker process, made on first use (after a prefork child is forked); it
checks the host first, so a runner that cannot sandbox fails every job with the check's
one line instead of running anything unsandboxed. The versions' code is unpacked once per
runner into `<hosting dir>/code/<content hash>` (read-only after; every session copies it).
"""

from __future__ import annotations

import logging
import os
import shutil
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings

from tournaments.hosting import archive, runtimes
from tournaments.hosting.check import BUILD_RUNTIMES
from tournaments.hosting.process import (
    BotSpec,
    Host,
    HostedBot,
    HostingConfig,
    SessionEnd,
    SlotsFull,
)
from tournaments.hosting.sandbox import Limits
from tournaments.models import BotSubmission, GateVerdict
from tournaments.play.lifecycle import lease_owner_new
from tournaments.play.pool import referees_live
from tournaments.services import hosting

log = logging.getLogger(__name__)

_host: Host | None = None
_host_lock = threading.Lock()
_code_lock = threading.Lock()

VALIDATION_DEADLINE_S = 240.0
CHECK_GAMES = "2"
ARENA_GAMES = "4"
POLL_S = 1.0
REFEREES_EVERY_S = 5.0


class PlatformFailure(Exception):
    """The runner could not do its job for a reason of its own (no slot, no runtime, the
    sandbox would not start): never the bot's fault; the task retries."""


class RuntimeMissing(Exception):
    """This runner has no built runtime for the version (its operator did not build it,
    or the platform's code changed under it): the platform's fault, and retrying on this
    runner cannot help. The message names the runtime and how to build it."""


def runtime_check(runtime: str) -> None:
    """RuntimeMissing unless `runtime` is built for this runner's sources (cheap: reads its
    manifest; no sandbox needed)."""
    config = HostingConfig.from_env(Path(settings.VAR_DIR))
    try:
        runtimes.load(runtime, config.runtimes_dir)
    except runtimes.RuntimeError_ as exc:
        raise RuntimeMissing(f"runtime {runtime} is not built on this runner ({exc}; build it: "
                             f"{BUILD_RUNTIMES.format(dir=config.runtimes_dir)})") from exc


def runner_host() -> Host:
    """This process's Host, checked (SandboxUnavailable says what the host lacks)."""
    global _host
    with _host_lock:
        if _host is None or getattr(_host, "_pid", None) != os.getpid():
            host = Host(HostingConfig.from_env(Path(settings.VAR_DIR)))
            host.check()
            host._pid = os.getpid()  # type: ignore[attr-defined]  # a forked child makes its own
            _host = host
        return _host


def runner_host_close() -> None:
    """Stop this process's sessions and its Host (a worker shutting down; tests)."""
    global _host
    with _host_lock:
        if _host is not None:
            _host.close()
            _host = None


def code_dir(host: Host, submission: BotSubmission) -> Path:
    """The version's files on this runner: unpacked once, by content hash."""
    base = host.config.state_dir / "code"
    target = base / f"{submission.runtime}-{submission.sha256}"
    with _code_lock:
        if not target.is_dir():
            partial = base / f".{target.name}.{uuid.uuid4().hex[:8]}"
            archive.unpack(bytes(submission.archive), submission.runtime, partial)
            try:
                partial.rename(target)
            except OSError:
                if not target.is_dir():
                    raise
                shutil.rmtree(partial, ignore_errors=True)  # another runner process was first
    return target


def _referees() -> list[str]:
    live = [r.address for r in referees_live() if not r.draining]
    return live or [settings.REFEREE_TARGET]


@dataclass(frozen=True)
class Verdict:
    ok: bool
    log: str
    detail: str


def _job(host: Host, submission: BotSubmission, code: Path, args: list[str], label: str) -> SessionEnd:
    runtime = host.runtime(submission.runtime)
    spec = BotSpec(runtime=submission.runtime, code_dir=code, entry=submission.entry,
                   command=[*runtime.launcher(), *args], deadline_s=VALIDATION_DEADLINE_S,
                   limits=Limits(cpu_seconds=int(VALIDATION_DEADLINE_S)), label=label)
    try:
        bot = host.start(spec)
    except SlotsFull as exc:
        raise PlatformFailure(f"no free sandbox slot: {exc}") from exc
    end = bot.wait(VALIDATION_DEADLINE_S + 60) or bot.stop(grace_s=5)
    if end.fault == "platform":
        raise PlatformFailure(f"{end.reason.value}: {end.detail}")
    return end


def _protocol_game(host: Host, submission: BotSubmission, code: Path) -> tuple[bool, str]:
    """A short table against house bots on a private referee of this runner (loopback, its
    own tokens), the bot running resident in the sandbox exactly as it will play: through
    the relay, with the protocol. (True, log) when the table completed with no strike."""
    import secrets

    from bots_sdk.protocol.tienlen.v1 import organizer_pb2 as org
    from referee_service.auth import BotIdentity, StaticTokenStore
    from referee_service.organizer_client import OrganizerClient
    from referee_service.server import RefereeThread

    token, organizer = secrets.token_urlsafe(24), secrets.token_urlsafe(24)
    store = StaticTokenStore({token: BotIdentity("candidate", f"s{submission.seq}")})
    with RefereeThread(store, organizer_token=organizer) as referee:
        try:
            bot = host.start(BotSpec(runtime=submission.runtime, code_dir=code, entry=submission.entry, token=token,
                                     referees=[referee.target], max_tables=1, bot_version=submission.version,
                                     label=f"validate s{submission.seq} of bot {submission.bot_id}"))
        except SlotsFull as exc:
            raise PlatformFailure(f"no free sandbox slot: {exc}") from exc
        verdict, summary = False, ""
        try:
            with OrganizerClient(referee.target, organizer, timeout=VALIDATION_DEADLINE_S) as client:
                deadline = time.monotonic() + 60
                while "candidate" not in {b.bot_id for b in client.list_bots()}:
                    if not bot.running or time.monotonic() > deadline:
                        summary = "it never connected to the referee"
                        break
                    time.sleep(0.1)
                else:
                    events = list(client.play_table(table_id="validation", games=4, move_time_ms=1000,
                                                    seats=["candidate", "house:greedy", "house:random"]))
                    result = events[-1]
                    ok = isinstance(result, org.TableResult) and result.status == org.TABLE_STATUS_COMPLETED
                    strikes = int(result.strikes[0]) if ok else 0
                    verdict = ok and strikes == 0 and not list(result.forfeited)
                    summary = (f"{result.games_played} games, {strikes} strikes, forfeited: {bool(list(result.forfeited))}"
                               if ok else f"the table did not complete: {getattr(result, 'detail', '')}")
        finally:
            end = bot.stop(grace_s=5)
        if end.fault == "platform":
            raise PlatformFailure(f"{end.reason.value}: {end.detail}")
    return verdict, f"{end.log.rstrip()}\n== {summary}"


def validate_submission(submission: BotSubmission) -> Verdict:
    """Certify the version in the sandbox; raises PlatformFailure when the runner failed,
    RuntimeMissing when it has no built runtime for it (checked first).
    Python: the SDK's certification and a local game (no way out at all), then a game
    through the protocol; JavaScript: the game through the protocol."""
    runtime_check(submission.runtime)
    host = runner_host()
    code = code_dir(host, submission)
    parts: list[str] = []
    if submission.runtime == BotSubmission.Runtime.PYTHON:
        entry = f"/bot/{submission.entry}"
        steps = [
            ("certification", ["check", entry, "--skip-server", "--games", CHECK_GAMES]),
            ("a short game against house bots", ["arena", entry, "greedy", "random", "--players", "3",
                                                  "--games", ARENA_GAMES, "--quiet"]),
        ]
        for title, args in steps:
            end = _job(host, submission, code, args, label=f"validate s{submission.seq} of bot {submission.bot_id}")
            parts.append(f"== {title}: tienlen-bot {' '.join(args)}\n{end.log.rstrip()}\n"
                         f"== {end.reason.value}" + (f" ({end.detail})" if end.detail else ""))
            if end.reason.value != "exited" or end.exit_code != 0:
                return Verdict(False, "\n".join(parts), f"{title} failed: {end.detail or end.reason.value}")
    ok, log_text = _protocol_game(host, submission, code)
    parts.append(f"== a table on a referee against house:greedy and house:random (4 games)\n{log_text}")
    if not ok:
        return Verdict(False, "\n".join(parts), "the table against house bots failed: " + log_text.rsplit("== ", 1)[-1])
    return Verdict(True, "\n".join(parts), "passed the certification and a short game against house bots"
                   if submission.runtime == BotSubmission.Runtime.PYTHON else "played a short table against house bots")


def run_session(session_id: int) -> str:
    """Play the session's table; returns what happened. Raises PlatformFailure (after
    recording it) when the platform failed and the session should be tried again."""
    host = runner_host()
    runner = lease_owner_new()
    start = hosting.hosted_session_begin(session_id=session_id, runner=runner)
    if start is None:
        return "nothing to run"
    session, submission = start.session, start.session.submission
    try:
        spec = BotSpec(runtime=submission.runtime, code_dir=code_dir(host, submission), entry=submission.entry,
                       token=start.token, referees=_referees(), max_tables=1, bot_version=submission.version,
                       label=(f"bot {session.bot_id} table {session.table_id}" if session.casual_table_id is None
                              else f"bot {session.bot_id} casual table {session.casual_table_id}"),
                       storage=hosting.bot_storage_data(bot_id=session.bot_id))
        bot = host.start(spec)
    except (SlotsFull, OSError, ValueError, runtimes.RuntimeError_) as exc:
        retry = hosting.hosted_session_end(session_id=session_id, reason="start_failed", fault="platform",
                                           detail=f"the runner could not start it: {exc}", exit_code=None,
                                           log="", log_bytes=0, log_truncated=False, retry=True, runner=runner)
        if retry:
            raise PlatformFailure(str(exc)) from exc
        return "start failed"
    referees_at = renewed_at = time.monotonic()
    renew_s = float(getattr(settings, "TIENLEN_LEASE_RENEW_SECONDS", 10.0))
    while True:
        end = bot.wait(POLL_S)
        if end is not None:
            break
        if hosting.hosted_session_should_stop(session_id=session_id):
            end = bot.stop(grace_s=10)
            break
        now = time.monotonic()
        if now - renewed_at > renew_s:
            renewed_at = now
            if not hosting.hosted_session_renew(session_id=session_id, runner=runner):
                bot.stop(grace_s=0)  # taken over by another runner: it plays on, not us
                return "taken over by another runner"
        if now - referees_at > REFEREES_EVERY_S:
            bot.set_referees(_referees())
            referees_at = now
    retry = hosting.hosted_session_end(
        session_id=session_id, reason=end.reason.value, fault=end.fault, detail=end.detail,
        exit_code=end.exit_code, log=end.log, log_bytes=end.log_bytes, log_truncated=end.log_truncated,
        retry=end.fault == "platform", runner=runner,
        storage=(end.storage.data, end.storage.size, end.storage.files) if end.storage is not None else None)
    if retry:
        raise PlatformFailure(f"{end.reason.value}: {end.detail}")
    return f"ended: {end.reason.value}"


# --- the gate: a new version against its predecessor ---------------------------------------

#: The SPRT's delta (points per game worth detecting) and the most duplicate sets played.
GATE_DELTA = 0.5
GATE_MOVE_MS = 1000


def _gate_max_sets() -> int:
    return int(getattr(settings, "TIENLEN_GATE_MAX_SETS", 200))


def gate_verdict(diffs: list[float], delta: float = GATE_DELTA) -> str:
    """The arena's SPRT (bots_sdk.stats.sprt, `tienlen-bot arena --sprt`), run both ways
    on the per-set differences new - old: BETTER when "new is better by delta" is
    accepted, WORSE when "old is better by delta" is, NO_DIFFERENCE when both tests accept
    "no difference", else UNDECIDED (the sets ran out first)."""
    from bots_sdk.stats import sprt

    up, down = sprt(diffs, delta), sprt([-x for x in diffs], delta)
    if up.decision == "H1":
        return GateVerdict.BETTER
    if down.decision == "H1":
        return GateVerdict.WORSE
    if up.decision == "H0" and down.decision == "H0":
        return GateVerdict.NO_DIFFERENCE
    return GateVerdict.UNDECIDED


def _set_diffs(points: dict[int, list[float]]) -> list[float]:
    """Per complete duplicate set (both seatings played), points per game new - old."""
    return [(new - old) / 2 for new, old, n in points.values() if n == 2]


def run_gate(submission: BotSubmission) -> hosting.GateResult:
    """The new version and its predecessor, each in its own sandbox (no storage kept, no
    way out but the relay), play duplicate sets head to head on a private referee of this
    runner: each deal twice, the seats swapped, its seeds drawn by the referee in secret as
    for house tables. Nothing is rated or recorded as a game: the result is the owner's.
    Stops as soon as the SPRT decides (at least 30 sets), at most TIENLEN_GATE_MAX_SETS.
    Raises PlatformFailure when the runner failed on its own side."""
    import secrets

    from bots_sdk.protocol.tienlen.v1 import organizer_pb2 as org
    from bots_sdk.stats import estimate
    from referee_service.auth import BotIdentity, StaticTokenStore
    from referee_service.organizer_client import OrganizerClient
    from referee_service.server import RefereeThread

    old = submission.gate_against
    assert old is not None
    host = runner_host()
    versions = {"new": submission, "old": old}
    tokens = {name: secrets.token_urlsafe(24) for name in versions}
    organizer = secrets.token_urlsafe(24)
    store = StaticTokenStore({tokens[name]: BotIdentity(name, v.version) for name, v in versions.items()})
    label = f"gate s{submission.seq} vs s{old.seq} of bot {submission.bot_id}"
    bots: dict[str, HostedBot] = {}
    points: dict[int, list[float]] = {}  # duplicate set -> [new's points, old's points, games]
    games = 0
    summary, ok = "", False
    with RefereeThread(store, organizer_token=organizer) as referee:
        try:
            for name, version in versions.items():
                try:
                    bots[name] = host.start(BotSpec(
                        runtime=version.runtime, code_dir=code_dir(host, version), entry=version.entry,
                        token=tokens[name], referees=[referee.target], max_tables=1, bot_version=version.version,
                        label=f"{label}: {version.version}", storage=b""))
                except SlotsFull as exc:
                    raise PlatformFailure(f"no free sandbox slot: {exc}") from exc
            with OrganizerClient(referee.target, organizer, timeout=3600) as client:
                deadline = time.monotonic() + 60
                while not set(versions) <= {b.bot_id for b in client.list_bots()}:
                    gone = [n for n, b in bots.items() if not b.running]
                    if gone or time.monotonic() > deadline:
                        summary = f"{', '.join(versions[n].version for n in gone) or 'a version'} never connected"
                        break
                    time.sleep(0.1)
                else:
                    result = None
                    events = client.play_table(table_id="gate", duplicate_sets=_gate_max_sets(),
                                               move_time_ms=GATE_MOVE_MS, seats=["new", "old"])
                    for event in events:
                        if isinstance(event, org.GameRecord):
                            games += 1
                            unit = points.setdefault(event.duplicate_set, [0.0, 0.0, 0])
                            for seat, who in enumerate(event.seat_participants):
                                unit[who] += event.result.points[seat]
                            unit[2] += 1
                            if unit[2] == 2 and gate_verdict(_set_diffs(points)) != "undecided":
                                break  # decided: the rest is not played (the table is cancelled)
                        elif isinstance(event, org.TableResult):
                            result = event
                    events.close()  # a decided gate cancels the rest of its table
                    aborted = result is not None and result.status != org.TABLE_STATUS_COMPLETED
                    ok = games >= 2 and not aborted
                    summary = (f"{games} games" if ok else
                               f"the table did not complete: {getattr(result, 'detail', '') or 'aborted'}")
        finally:
            ends = {name: bot.stop(grace_s=5) for name, bot in bots.items()}
    for end in ends.values():
        if end.fault == "platform":
            raise PlatformFailure(f"{end.reason.value}: {end.detail}")
    crashed = [versions[n].version for n, e in ends.items() if e.fault == "bot"]
    if crashed:
        ok, summary = False, f"{', '.join(crashed)} ended on its own during the gate ({summary})"
    log_text = "\n".join(f"== {versions[n].version} ({'new' if n == 'new' else 'predecessor'})\n{e.log.rstrip()}"
                         for n, e in ends.items()) + f"\n== {summary}"
    diffs = _set_diffs(points)
    if not ok or not diffs:
        return hosting.GateResult(False, games, len(diffs), None, None, "", summary, log_text)
    est = estimate(diffs)
    verdict = gate_verdict(diffs)
    detail = (f"s{submission.seq} - s{old.seq}: {est.mean:+.2f} points/game (95% ± {est.half_width:.2f}) over "
              f"{len(diffs)} duplicate sets ({games} games); SPRT (delta {GATE_DELTA:g}): {verdict.replace('_', ' ')}")
    return hosting.GateResult(True, games, len(diffs), est.mean, est.half_width, verdict, detail, log_text)
