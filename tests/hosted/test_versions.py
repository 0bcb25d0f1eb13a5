"""Submitted versions of hosted bots, without a sandbox: the archive's checks (hostile
inputs refused with a message saying why), the API (owner only), the status rules (a
failed version never becomes active), the tokens (a hosted bot's own token stops
connecting; a session's works only while it runs) and isolation."""

from __future__ import annotations

import io
import stat
import zipfile
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from rest_framework.test import APIClient

from tournaments.hosting import archive
from tournaments.isolation import bot_isolated
from tournaments.models import BotSubmission, HostedSession, Table, Tournament
from tournaments.services import hosting
from tournaments.services.accounts import api_token_create, bot_create
from tournaments.token_store import DjangoTokenStore

BOT = b"from bots_sdk.examples import GreedyBot as Bot\n"


def zipped(*members: tuple[str, bytes] | zipfile.ZipInfo, extra: list[tuple[zipfile.ZipInfo, bytes]] = ()) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in members:
            zf.writestr(name, data)
        for info, data in extra:
            zf.writestr(info, data)
    return buffer.getvalue()


def symlink(name: str, target: str) -> tuple[zipfile.ZipInfo, bytes]:
    info = zipfile.ZipInfo(name)
    info.external_attr = (stat.S_IFLNK | 0o777) << 16
    return info, target.encode()


def test_a_valid_archive_has_a_manifest_whose_hash_ignores_zip_details() -> None:
    a = archive.check(zipped(("bot.py", BOT), ("lib/helpers.py", b"X = 1\n"), ("book.json", b"{}")), "python3.11")
    b = archive.check(zipped(("book.json", b"{}"), ("lib/helpers.py", b"X = 1\n"), ("bot.py", BOT)), "python3.11")
    assert a.sha256 == b.sha256 and a.entry == "bot.py" and set(a.files) == {"bot.py", "lib/helpers.py", "book.json"}
    assert archive.check(zipped(("bot.py", BOT + b"#")), "python3.11").sha256 != a.sha256


@pytest.mark.parametrize(("data", "message"), [
    (b"not a zip", "not a zip archive"),
    (zipped(("helpers.py", b"")), "no bot.py at the top"),
    (zipped(("bot.py", BOT), ("../escape.py", b"")), "'..'"),
    (zipped(("bot.py", BOT), ("/etc/passwd.txt", b"")), "an absolute path"),
    (zipped(("bot.py", BOT), ("a\\b.py", b"")), "a backslash"),
    (zipped(("bot.py", BOT), extra=[symlink("secret.txt", "/etc/shadow")]), "a symlink"),
    (zipped(("bot.py", BOT), ("native.so", b"\x7fELF")), ".so is not accepted"),
    (zipped(("bot.py", BOT), ("run.sh", b"")), ".sh is not accepted"),
    (zipped(("bot.py", BOT), ("Bot.PY", b"")), "a second file of that name"),
    (zipped(("bot.py", BOT), *[(f"f{n}.py", b"") for n in range(archive.MAX_FILES)]), "more than 200 files"),
    (zipped(("bot.py", BOT), ("big.bin", b"\0" * (archive.MAX_DATA_BYTES + 1))), "bytes of data files"),
    (zipped(("bot.py", BOT), *[(f"z{n}.py", b"#" * (3 * 1024 * 1024)) for n in range(3)]), "bytes unpacked"),
    (b"\0" * (archive.MAX_ARCHIVE_BYTES + 1), "at most 1048576 bytes"),
])
def test_hostile_archives_are_refused_saying_why(data: bytes, message: str) -> None:
    with pytest.raises(archive.ArchiveError, match=message.replace("\\", "\\\\").replace(".", r"\.")
                       .replace("(", r"\(").replace(")", r"\)")):
        archive.check(data, "python3.11")


def test_a_zip_lying_about_its_sizes_is_refused_while_inflating() -> None:
    data = bytearray(zipped(("bot.py", BOT), ("bomb.py", b"#" * (9 * 1024 * 1024))))
    # shrink the declared size of bomb.py in the central directory (and the local header)
    zf = zipfile.ZipFile(io.BytesIO(bytes(data)))
    info = zf.getinfo("bomb.py")
    real = info.file_size.to_bytes(4, "little")
    data = bytearray(bytes(data).replace(real, (10).to_bytes(4, "little")))
    with pytest.raises(archive.ArchiveError):
        archive.check(bytes(data), "python3.11")


def test_unpack_writes_only_the_checked_files(tmp_path) -> None:
    manifest = archive.unpack(zipped(("bot.py", BOT), ("lib/x.py", b"")), "python3.11", tmp_path / "code")
    assert sorted(p.relative_to(tmp_path / "code").as_posix() for p in (tmp_path / "code").rglob("*")) == [
        "bot.py", "lib", "lib/x.py"]
    assert manifest.unpacked_bytes == len(BOT)


# --- the platform side -------------------------------------------------------------------


@pytest.fixture
def owner(db):
    return User.objects.create_user("author")


@pytest.fixture
def bot(owner):
    return bot_create(owner=owner, name="hosted-one")


def client_of(user) -> APIClient:
    _, key = api_token_create(user=user)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    return client


def test_submitting_through_the_api_stores_a_queued_version_for_the_owner_only(owner, bot, django_capture_on_commit_callbacks) -> None:
    bot, _ = bot
    client = client_of(owner)
    with django_capture_on_commit_callbacks() as callbacks:
        response = client.post(f"/api/v1/bots/{bot.name}/versions/?runtime=python3.11&sdk_version=0.1.0",
                               zipped(("bot.py", BOT)), content_type="application/zip")
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["version"] == "s1" and body["status"] == "queued" and body["sdk_version"] == "0.1.0"
    assert len(callbacks) == 1  # its validation, on the runner queue, after commit
    assert client.get(f"/api/v1/bots/{bot.name}/versions/1/").json()["sha256"] == body["sha256"]

    other = client_of(User.objects.create_user("someone-else"))
    assert other.get(f"/api/v1/bots/{bot.name}/versions/").status_code == 404
    assert other.get(f"/api/v1/bots/{bot.name}/versions/1/").status_code == 404
    assert other.get(f"/api/v1/bots/{bot.name}/sessions/").status_code == 404
    refused = other.post(f"/api/v1/bots/{bot.name}/versions/", zipped(("bot.py", BOT)), content_type="application/zip")
    assert refused.status_code == 403
    staff = client_of(User.objects.create_user("staff", is_staff=True))
    assert staff.get(f"/api/v1/bots/{bot.name}/versions/").status_code == 404
    assert APIClient().get(f"/api/v1/bots/{bot.name}/versions/").status_code in (401, 403)


def test_a_hostile_upload_is_a_400_that_says_why(owner, bot) -> None:
    bot, _ = bot
    response = client_of(owner).post(f"/api/v1/bots/{bot.name}/versions/",
                                     zipped(("bot.py", BOT), ("../../x.py", b"")), content_type="application/zip")
    assert response.status_code == 400
    assert "'..'" in response.json()["archive"][0]
    assert not BotSubmission.objects.exists()


def _validated(bot, owner, ok: bool) -> BotSubmission:
    submission = hosting.submission_create(bot=bot, user=owner, data=zipped(("bot.py", BOT)), runtime="python3.11")
    assert hosting.submission_validation_begin(submission_id=submission.pk)
    assert not hosting.submission_validation_begin(submission_id=submission.pk)  # once
    return hosting.submission_validation_finish(submission_id=submission.pk, ok=ok, log="the log", detail="d")


def test_a_failed_version_never_becomes_active_and_the_previous_ready_one_stays(owner, bot) -> None:
    bot, _ = bot
    with pytest.raises(Exception, match="wait until it is ready"):
        hosting.bot_hosting_set(bot=bot, user=owner, hosting="hosted")
    first = _validated(bot, owner, ok=True)
    bot.refresh_from_db()
    assert bot.active_submission_id == first.pk
    broken = _validated(bot, owner, ok=False)
    bot.refresh_from_db()
    assert broken.status == "failed" and broken.validation_log == "the log"
    assert bot.active_submission_id == first.pk
    third = _validated(bot, owner, ok=True)
    bot.refresh_from_db()
    assert bot.active_submission_id == third.pk


def test_a_hosted_bot_is_isolated_its_own_token_stops_and_a_session_token_works_while_it_runs(owner, bot) -> None:
    bot, token = bot
    store = DjangoTokenStore()
    assert store.authenticate_bot(token).bot_id == str(bot.pk)
    assert not bot_isolated(bot)
    _validated(bot, owner, ok=True)
    bot.refresh_from_db()
    hosting.bot_hosting_set(bot=bot, user=owner, hosting="hosted")
    assert bot_isolated(bot)
    assert store.authenticate_bot(token) is None  # the author's process cannot sit at its tables

    session = HostedSession.objects.create(bot=bot, submission=bot.active_submission)
    start = hosting.hosted_session_begin(session_id=session.pk, runner="runner-1")
    assert start is not None and start.token not in str(HostedSession.objects.values().get(pk=session.pk))
    assert store.authenticate_bot(start.token).bot_id == str(bot.pk)
    hosting.hosted_session_end(session_id=session.pk, reason="stopped", fault="none", detail="", exit_code=0,
                               log="x" * (hosting.MAX_STORED_LOG + 10), log_bytes=hosting.MAX_STORED_LOG + 10,
                               log_truncated=False)
    assert store.authenticate_bot(start.token) is None
    ended = HostedSession.objects.get(pk=session.pk)
    assert ended.log_truncated and "characters left out" in ended.log


def test_a_session_whose_start_failed_on_the_platform_side_is_queued_again(owner, bot) -> None:
    bot, _ = bot
    _validated(bot, owner, ok=True)
    bot.refresh_from_db()
    session = HostedSession.objects.create(bot=bot, submission=bot.active_submission)
    hosting.hosted_session_begin(session_id=session.pk, runner="r")
    assert hosting.hosted_session_end(session_id=session.pk, reason="start_failed", fault="platform", detail="no slot",
                                      exit_code=None, log="", log_bytes=0, log_truncated=False, retry=True)
    assert HostedSession.objects.get(pk=session.pk).status == "queued"


def test_the_logs_are_not_visible_to_another_user(owner, bot) -> None:
    bot, _ = bot
    _validated(bot, owner, ok=True)
    bot.refresh_from_db()
    organiser = User.objects.create_user("org", is_staff=True)
    tournament = Tournament.objects.create(name="t", slug="t", organiser=organiser, format="round_robin")
    table = Table.objects.create(tournament=tournament, number=1, deal_group=1, games_planned=1)
    HostedSession.objects.create(bot=bot, submission=bot.active_submission, table=table, status="ended",
                                 log="my hand was 3S 4S", reason="crashed", fault="bot")
    mine = client_of(owner).get(f"/api/v1/bots/{bot.name}/sessions/?table={table.pk}").json()
    assert mine[0]["log"] == "my hand was 3S 4S" and mine[0]["reason"] == "crashed"
    for viewer in (User.objects.create_user("rival"), organiser):
        response = client_of(viewer).get(f"/api/v1/bots/{bot.name}/sessions/")
        assert response.status_code == 404 and b"3S 4S" not in response.content


# --- the bot's page ------------------------------------------------------------------------


def test_the_bot_page_shows_versions_and_logs_to_the_owner_only_and_takes_uploads(owner, bot, client) -> None:
    bot, _ = bot
    first = _validated(bot, owner, ok=False)
    BotSubmission.objects.filter(pk=first.pk).update(validation_log="Traceback: secret-of-the-owner")
    client.force_login(owner)
    page = client.get(f"/bots/{bot.name}/").content.decode()
    assert 'id="hosting"' in page and "secret-of-the-owner" in page and "s1" in page

    from django.core.files.uploadedfile import SimpleUploadedFile

    response = client.post(f"/me/bots/{bot.name}/versions/",
                           {"code": SimpleUploadedFile("bot.py", BOT), "runtime": "python3.11"})
    assert response.status_code == 302
    assert BotSubmission.objects.get(bot=bot, seq=2).files == 1
    bad = client.post(f"/me/bots/{bot.name}/versions/", {
        "code": SimpleUploadedFile("code.zip", zipped(("bot.py", BOT), extra=[symlink("x.txt", "/etc/shadow")])),
        "runtime": "python3.11"}, follow=True)
    assert "a symlink" in bad.content.decode() and not BotSubmission.objects.filter(seq=3).exists()
    refused = client.post(f"/me/bots/{bot.name}/hosting/", {"hosting": "hosted"}, follow=True)
    assert "wait until it is ready" in refused.content.decode()

    for viewer in (User.objects.create_user("rival"), User.objects.create_user("boss", is_staff=True)):
        client.force_login(viewer)
        page = client.get(f"/bots/{bot.name}/").content.decode()
        assert 'id="hosting"' not in page and "secret-of-the-owner" not in page
        assert client.post(f"/me/bots/{bot.name}/versions/", {"code": SimpleUploadedFile("bot.py", BOT)}).status_code == 404
    client.logout()
    assert "secret-of-the-owner" not in client.get(f"/bots/{bot.name}/").content.decode()


def test_a_hosted_bot_is_available_to_a_ladder_without_a_connection(owner, bot) -> None:
    from tournaments.services.ladder import _hosted_ready

    bot, _ = bot
    assert not _hosted_ready(bot)
    _validated(bot, owner, ok=True)
    bot.refresh_from_db()
    hosting.bot_hosting_set(bot=bot, user=owner, hosting="hosted")
    assert _hosted_ready(bot)


def test_a_hosted_seat_whose_runner_failed_is_waited_for_not_forfeited(owner, bot) -> None:
    bot, _ = bot
    _validated(bot, owner, ok=True)
    bot.refresh_from_db()
    hosting.bot_hosting_set(bot=bot, user=owner, hosting="hosted")
    organiser = User.objects.create_user("org", is_staff=True)
    tournament = Tournament.objects.create(name="t", slug="t", organiser=organiser, format="round_robin")
    table = Table.objects.create(tournament=tournament, number=1, deal_group=1, games_planned=1)
    session = HostedSession.objects.create(bot=bot, submission=bot.active_submission, table=table)
    assert hosting.hosted_seats_pending(table_id=table.pk) == {bot.pk}  # still queued
    hosting.hosted_session_begin(session_id=session.pk, runner="r")
    hosting.hosted_session_end(session_id=session.pk, reason="host_out_of_memory", fault="platform", detail="",
                               exit_code=None, log="", log_bytes=0, log_truncated=False)
    assert hosting.hosted_seats_pending(table_id=table.pk) == {bot.pk}  # the platform's fault
    crashed = HostedSession.objects.create(bot=bot, submission=bot.active_submission, table=table)
    hosting.hosted_session_begin(session_id=crashed.pk, runner="r")
    hosting.hosted_session_end(session_id=crashed.pk, reason="crashed", fault="bot", detail="", exit_code=1,
                               log="", log_bytes=0, log_truncated=False)
    assert hosting.hosted_seats_pending(table_id=table.pk) == set()  # its own: the deadline decides


def test_a_session_whose_runner_died_is_queued_again_and_the_old_runner_is_fenced(owner, bot, settings) -> None:
    from datetime import timedelta

    from django.db.models.functions import Now

    bot, _ = bot
    _validated(bot, owner, ok=True)
    bot.refresh_from_db()
    hosting.bot_hosting_set(bot=bot, user=owner, hosting="hosted")
    session = HostedSession.objects.create(bot=bot, submission=bot.active_submission)
    first = hosting.hosted_session_begin(session_id=session.pk, runner="runner-a")
    assert hosting.hosted_sessions_claim_stale() == []  # its lease is live
    HostedSession.objects.filter(pk=session.pk).update(lease_expires_at=Now() - timedelta(seconds=1))
    assert hosting.hosted_sessions_claim_stale() == [session.pk]
    assert hosting.hosted_sessions_claim_stale() == []  # claimed once
    assert DjangoTokenStore().authenticate_bot(first.token) is None  # the dead runner's token is void
    second = hosting.hosted_session_begin(session_id=session.pk, runner="runner-b")
    assert second is not None and second.session.starts == 2
    # the first runner, had it lived, can neither renew nor record the end
    assert not hosting.hosted_session_renew(session_id=session.pk, runner="runner-a")
    assert not hosting.hosted_session_end(session_id=session.pk, reason="crashed", fault="bot", detail="",
                                          exit_code=1, log="", log_bytes=0, log_truncated=False, runner="runner-a")
    assert HostedSession.objects.get(pk=session.pk).status == "running"


def test_a_table_with_a_hosted_seat_gives_disconnected_seats_a_longer_grace(owner, bot, settings) -> None:
    from tournaments.services.tables import _hosted_grace_ms

    bot, _ = bot

    class Seat:
        entrant_id = 1

        def __init__(self, b) -> None:
            self.entrant = type("E", (), {"bot": b})()

    assert _hosted_grace_ms([Seat(bot)]) == 0
    bot.hosting = "hosted"
    settings.TIENLEN_HOSTED_DISCONNECT_GRACE_S = 45
    assert _hosted_grace_ms([Seat(bot)]) == 45_000


def test_a_runner_on_a_host_that_cannot_sandbox_refuses_to_start_in_one_line(monkeypatch, settings) -> None:
    import subprocess
    import sys

    from tournaments.tasks_hosting import runner_refusal

    assert runner_refusal({"celery"}) is None  # a table worker needs no sandbox
    monkeypatch.setenv("PATH", "/nonexistent")  # no bwrap on the PATH
    line = runner_refusal({"celery", settings.TIENLEN_RUNNER_QUEUE})
    assert line is not None and "bubblewrap" in line and "\n" not in line
    done = subprocess.run(
        [sys.executable, "-m", "celery", "-A", "tienlen_site.celery:app", "worker", "--queues", "runner",
         "--pool", "solo", "--without-gossip", "--without-mingle"],
        env={"PATH": "/nonexistent", "PYTHONPATH": "platform:.", "CELERY_BROKER_URL": "memory://",
             "TIENLEN_VAR_DIR": str(settings.VAR_DIR)},
        capture_output=True, text=True, timeout=120, cwd=Path(__file__).resolve().parents[2])
    assert done.returncode == 1
    assert "tienlen runner: this worker consumes the runner queue 'runner' but cannot run hosted bots" in done.stderr


def test_a_crash_loop_stops_hosting_the_bot_until_its_owner_acts(owner, bot, client) -> None:
    bot, _ = bot
    _validated(bot, owner, ok=True)
    bot.refresh_from_db()
    hosting.bot_hosting_set(bot=bot, user=owner, hosting="hosted")
    organiser = User.objects.create_user("org", is_staff=True)
    tournament = Tournament.objects.create(name="t", slug="t", organiser=organiser, format="round_robin")
    for n in range(hosting.CRASH_LOOP_ENDS):
        table = Table.objects.create(tournament=tournament, number=n + 1, deal_group=n + 1, games_planned=1)
        session = HostedSession.objects.create(bot=bot, submission=bot.active_submission, table=table)
        hosting.hosted_session_begin(session_id=session.pk, runner="r")
        bot.refresh_from_db()
        assert not bot.hosting_stopped
        hosting.hosted_session_end(session_id=session.pk, reason="crashed", fault="bot", detail="exit status 1",
                                   exit_code=1, log="Traceback", log_bytes=9, log_truncated=False)
    bot.refresh_from_db()
    assert "3 sessions ended by the bot's own fault" in bot.hosting_stopped and "crashed" in bot.hosting_stopped
    client.force_login(owner)
    assert "The platform stopped hosting this bot" in client.get(f"/bots/{bot.name}/").content.decode()
    assert client_of(owner).get(f"/api/v1/bots/{bot.name}/hosting/").json()["hosting_stopped"] == bot.hosting_stopped
    assert client_of(User.objects.create_user("rival")).get(f"/api/v1/bots/{bot.name}/hosting/").status_code == 404
    _validated(bot, owner, ok=True)  # a fixed version is hosted again
    bot.refresh_from_db()
    assert bot.hosting_stopped == ""


def test_a_field_of_hosted_bots_shares_deals_across_tables_and_a_remote_field_does_not(db) -> None:
    """Hosted bots are isolated (no network, their own token off): the round robin's
    schedule lets their tables share deals, as house bots' do; remote bots' it does not."""
    from collections import Counter

    from tests.tournaments.conftest import running_round_robin

    organiser = User.objects.create_user("org", is_staff=True)

    def field(hosted: bool, tag: str) -> Tournament:
        bots = []
        for n in range(8):
            person = User.objects.create_user(f"{tag}-{n}")
            b, _ = bot_create(owner=person, name=f"{tag}-bot-{n}")
            if hosted:
                _validated(b, person, ok=True)
                b.refresh_from_db()
                hosting.bot_hosting_set(bot=b, user=person, hosting="hosted")
            bots.append(b)
        return running_round_robin(organiser, bots, name=tag, seats_per_table=4, games_per_table=2)

    def shared(tournament: Tournament) -> int:
        groups = Counter(Table.objects.filter(tournament=tournament).values_list("round", "deal_group"))
        return sum(size for size in groups.values() if size > 1)

    assert shared(field(True, "hosted")) > 0
    assert shared(field(False, "remote")) == 0


def test_a_hosted_bot_in_a_running_tournament_cannot_turn_remote(owner, bot) -> None:
    """Its tables may share deals because it is isolated: no author process may join them."""
    from tests.tournaments.conftest import running_round_robin
    from tournaments.services.accounts import house_bot_for

    bot, _ = bot
    _validated(bot, owner, ok=True)
    bot.refresh_from_db()
    hosting.bot_hosting_set(bot=bot, user=owner, hosting="hosted")
    organiser = User.objects.create_user("org", is_staff=True)
    tournament = running_round_robin(organiser, [bot, *(house_bot_for(kind=k) for k in ("greedy", "random", "heuristic"))],
                                     seats_per_table=4, games_per_table=2)
    with pytest.raises(Exception, match="switch it to remote once those are over"):
        hosting.bot_hosting_set(bot=bot, user=owner, hosting="remote")
    Tournament.objects.filter(pk=tournament.pk).update(status="finished")
    assert hosting.bot_hosting_set(bot=bot, user=owner, hosting="remote").hosting == "remote"


def test_a_runner_without_the_built_runtimes_refuses_to_start_naming_the_runtime_and_the_build(settings, tmp_path) -> None:
    """The host may sandbox, but a runtime is not built for these sources (a deploy that
    skipped `make hosting-runtimes`, or an SDK changed under it): the runner's worker does
    not start, in one line naming the runtime and the command that builds it, instead of
    failing every bot of that runtime."""
    import subprocess
    import sys

    empty = tmp_path / "no-runtimes"
    done = subprocess.run(
        [sys.executable, "-m", "celery", "-A", "tienlen_site.celery:app", "worker", "--queues", "runner",
         "--pool", "solo", "--without-gossip", "--without-mingle"],
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": "platform:.", "CELERY_BROKER_URL": "memory://",
             "TIENLEN_VAR_DIR": str(settings.VAR_DIR), "TIENLEN_HOSTING_RUNTIMES": str(empty)},
        capture_output=True, text=True, timeout=120, cwd=Path(__file__).resolve().parents[2])
    assert done.returncode == 1
    line = next(x for x in done.stderr.splitlines() if x.startswith("tienlen runner: "))
    for name in ("node20", "python3.11"):
        assert f"runtime {name} is not built in {empty}" in line
    assert "make hosting-runtimes" in line and f"python -m tournaments.hosting.runtimes --dir {empty}" in line


@pytest.mark.django_db(transaction=True)
def test_a_validation_that_finds_no_runtime_fails_the_version_as_the_platforms_fault(monkeypatch, tmp_path) -> None:
    """The runtime went missing under a running runner: the version is failed at once with
    a reason that says it is the platform's, not requeued forever; the bot keeps its ready
    version and nothing is held against it."""
    import time

    from tests.celery_helpers import isolated_celery_worker
    from tests.e2e.test_faults import require_redis_broker
    from tests.needs import need_postgresql

    need_postgresql("a runner's worker thread and the test share the submission")
    require_redis_broker()  # as the other tests of real runners
    author = User.objects.create_user("author")
    bot, _ = bot_create(owner=author, name="hosted-one")
    first = _validated(bot, author, ok=True)
    bot.refresh_from_db()
    hosting.bot_hosting_set(bot=bot, user=author, hosting="hosted")
    monkeypatch.setenv("TIENLEN_HOSTING_RUNTIMES", str(tmp_path / "no-runtimes"))
    with isolated_celery_worker(runner=True, concurrency=1, analysis=False):
        second = hosting.submission_create(bot=bot, user=author, data=zipped(("bot.py", BOT + b"# v2\n")),
                                           runtime="python3.11")
        deadline = time.monotonic() + 60
        while BotSubmission.objects.get(pk=second.pk).status in ("queued", "validating"):
            assert time.monotonic() < deadline, "the validation never ended"
            time.sleep(0.1)
    second.refresh_from_db()
    assert second.status == "failed"
    assert second.detail.startswith("not validated, for a reason of the platform's (not your code's)")
    assert "runtime python3.11 is not built on this runner" in second.detail
    assert "the code: it never ran" in second.validation_log and "make hosting-runtimes" in second.validation_log
    bot.refresh_from_db()
    assert bot.active_submission_id == first.pk and bot.hosting == "hosted" and bot.hosting_stopped == ""
    mine = client_of(author).get(f"/api/v1/bots/{bot.name}/versions/{second.seq}/").json()
    assert mine["status"] == "failed" and "platform's (not your code's)" in mine["detail"]
    assert client_of(User.objects.create_user("rival")).get(f"/api/v1/bots/{bot.name}/versions/{second.seq}/").status_code == 404


@pytest.mark.django_db(transaction=True)
def test_a_validation_failing_on_the_runners_side_every_time_ends_failed_not_queued_forever(monkeypatch) -> None:
    """Its last retry (the runners kept failing on their own side: no slot, a sandbox that
    would not start) fails the version with the platform's reason instead of leaving it
    queued with no task left to take it."""
    import tournaments.runner
    from tournaments.tasks_hosting import VALIDATION_RETRIES, submission_validate_task

    author = User.objects.create_user("author")
    bot, _ = bot_create(owner=author, name="hosted-one")
    submission = hosting.submission_create(bot=bot, user=author, data=zipped(("bot.py", BOT)), runtime="python3.11")

    def no_slot(_submission):
        raise tournaments.runner.PlatformFailure("no free sandbox slot: all 16 slots of this host are taken")

    monkeypatch.setattr(tournaments.runner, "validate_submission", no_slot)
    result = submission_validate_task.apply(args=(submission.pk,), retries=VALIDATION_RETRIES)
    assert result.get() == "failed on the platform's side"
    submission.refresh_from_db()
    assert submission.status == "failed" and "not your code's" in submission.detail
    assert f"{VALIDATION_RETRIES + 1} attempts failed on the runners" in submission.detail
    assert "no free sandbox slot" in submission.validation_log
