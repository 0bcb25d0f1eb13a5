"""Hosted bots end to end, on PostgreSQL and Redis, with a real Celery worker consuming
the table queue and the runner queue, a real referee (DjangoTokenStore) on loopback, the
real sandbox and the real runtimes, and the live site: an author submits a Python bot and
a JavaScript bot with `tienlen-bot submit` (a subprocess, as an author would), each is
validated in the sandbox and switched to hosted; a broken version then fails validation
with its log while the first stays active; a round robin with the two hosted bots, a
remote SDK bot and a house bot finishes with every game recorded and no forfeit, though no
process of the authors' runs; the sessions' logs are the owner's alone."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from rest_framework.test import APIClient

from tests.celery_helpers import isolated_celery_worker
from tests.hosted.support import runner_in_this_process
from tests.platform_referee import platform_referee
from tests.tournaments.test_worker import SdkBot
from tests.waits import wait_until as wait_for
from tournaments.hosting.process import HostingConfig

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

ROOT = Path(__file__).resolve().parents[2]

GOOD = '''\
import sys

from bots_sdk.examples import GreedyBot
from helpers import GREETING


class HostedGreedy(GreedyBot):
    """A greedy bot in two files, saying hello on its log."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        print(GREETING, file=sys.stderr, flush=True)
'''
BROKEN = 'raise RuntimeError("broken on purpose")\n'


@pytest.fixture
def runner_env(monkeypatch) -> Iterator[HostingConfig]:
    yield from runner_in_this_process(monkeypatch, prefix="tlh-e2e-", why="a worker, a referee and the site share the games")


@pytest.fixture
def referee(settings) -> Iterator[str]:
    with platform_referee(settings) as thread:
        yield thread.target


def submit(site: str, token: str, path: Path, bot: str, *flags: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "bots_sdk.cli", "submit", str(path), "--bot", bot,
                           "--site", site, "--timeout", "300", *flags],
                          env={"TIENLEN_API_TOKEN": token, "PATH": "/usr/bin:/bin"}, cwd=ROOT,
                          capture_output=True, text=True, timeout=400)


def test_a_submitted_bot_is_validated_and_plays_a_tournament_with_no_author_process(
        runner_env, referee, live_server, tmp_path) -> None:
    from tournaments.models import (
        BotSubmission,
        Game,
        GameSeat,
        HostedSession,
        Table,
        TableSeat,
        Tournament,
    )
    from tournaments.services.accounts import api_token_create, bot_create, house_bot_for
    from tournaments.services.tournaments import (
        tournament_create,
        tournament_entrant_add,
        tournament_start,
    )

    author = User.objects.create_user("hosted-author")
    hosted, hosted_token = bot_create(owner=author, name="hosted-greedy")
    _, api_key = api_token_create(user=author)
    code = tmp_path / "my_bot"
    code.mkdir()
    (code / "bot.py").write_text(GOOD)
    (code / "helpers.py").write_text('GREETING = "hello from the sandbox"\n')
    js_author = User.objects.create_user("js-author")
    js, _ = bot_create(owner=js_author, name="hosted-js")
    _, js_key = api_token_create(user=js_author)
    js_code = tmp_path / "js_bot"
    js_code.mkdir()
    (js_code / "bot.js").write_text((ROOT / "bots_sdk" / "examples" / "javascript" / "bot.js").read_text())
    broken = tmp_path / "broken" / "bot.py"
    broken.parent.mkdir()
    broken.write_text(BROKEN)

    with isolated_celery_worker(runner=True, concurrency=4, analysis=False):
        # 1. Submitted, validated in the sandbox, switched to hosted.
        done = submit(live_server.url, api_key, code, hosted.name, "--hosted")
        assert done.returncode == 0, done.stdout + done.stderr
        assert "submitted hosted-greedy s1" in done.stdout and ": queued" in done.stdout
        assert "validated hosted-greedy s1" in done.stdout and ": ready" in done.stdout
        assert "hosted-greedy is hosted, playing s1" in done.stdout
        assert "ready for a ladder" in done.stdout  # the certification's log
        assert "4 games, 0 strikes" in done.stdout  # its table on the runner's own referee
        done_js = submit(live_server.url, js_key, js_code, js.name, "--hosted")
        assert done_js.returncode == 0, done_js.stdout + done_js.stderr
        assert "validated hosted-js s1" in done_js.stdout and ": ready" in done_js.stdout
        assert BotSubmission.objects.get(bot=js).runtime == "node20"

        # 2. A broken version fails with its log; the first stays active.
        failed = submit(live_server.url, api_key, broken, hosted.name, "--wait")
        assert failed.returncode == 1
        assert "s2" in failed.stdout and ": failed" in failed.stdout
        assert "broken on purpose" in failed.stderr
        hosted.refresh_from_db()
        assert hosted.hosting == "hosted" and hosted.active_submission.seq == 1
        assert BotSubmission.objects.get(bot=hosted, seq=2).status == "failed"

        # 3. A round robin: the two hosted bots, a remote SDK bot and a house bot.
        organiser = User.objects.create_user("hosted-organiser", is_staff=True)
        remote, remote_token = bot_create(owner=User.objects.create_user("remote-author"), name="remote-greedy")
        tournament = tournament_create(organiser=organiser, name="Hosted cup", format=Tournament.Format.ROUND_ROBIN,
                                       seats_per_table=4, games_per_table=6, move_time_ms=1000, time_bank_ms=5000,
                                       connect_deadline_s=120)
        for bot in (hosted, js, remote, house_bot_for(kind="greedy")):
            tournament_entrant_add(tournament=tournament, bot=bot)
        with SdkBot(referee, remote_token):
            tournament_start(tournament=tournament)
            wait_for(lambda: Tournament.objects.get(pk=tournament.pk).status == "finished", 300, "the tournament")
        # the runner stops the session once its table closed
        wait_for(lambda: not HostedSession.objects.exclude(status="ended").exists(), 60, "the session's end")

    table = Table.objects.get(tournament=tournament)
    assert table.status == "done" and table.games_recorded == 6
    assert not TableSeat.objects.filter(table=table, forfeited=True).exists()
    assert Game.objects.filter(table=table).count() == 6
    for bot in (hosted, js):
        seats = GameSeat.objects.filter(game__table=table, bot=bot)
        assert seats.count() == 6  # (which version played: the session's submission, below)
        assert not seats.filter(forfeited=True).exists() and not seats.exclude(strikes=0).exists()
    js_session = HostedSession.objects.get(bot=js, table=table)
    assert js_session.reason == "stopped" and js_session.submission.runtime == "node20"
    # its author's token never connected: nothing of the author's ran
    assert hosted_token not in "".join(HostedSession.objects.values_list("log", flat=True))

    session = HostedSession.objects.get(bot=hosted, table=table)
    assert session.status == "ended" and session.reason == "stopped" and session.fault == "none"
    assert session.token_hash is None and session.submission.seq == 1
    assert "hello from the sandbox" in session.log

    owner_client, rival_client = APIClient(), APIClient()
    owner_client.credentials(HTTP_AUTHORIZATION=f"Token {api_key}")
    rival_client.credentials(HTTP_AUTHORIZATION=f"Token {api_token_create(user=remote.owner)[1]}")
    mine = owner_client.get(f"/api/v1/bots/{hosted.name}/sessions/?table={table.pk}").json()
    assert "hello from the sandbox" in mine[0]["log"] and mine[0]["reason"] == "stopped"
    theirs = rival_client.get(f"/api/v1/bots/{hosted.name}/sessions/?table={table.pk}")
    assert theirs.status_code == 404 and b"hello from the sandbox" not in theirs.content
