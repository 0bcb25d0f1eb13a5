"""The gate end to end, on PostgreSQL and Redis, with a real Celery worker consuming the
runner queue and the real sandbox and runtimes: an owner with the automatic gate submits
a stronger version (greedy after random): a runner validates it, then plays it against its
predecessor in duplicate sets, both in their sandboxes, until the arena's SPRT decides;
it is promoted, the owner sees the games, the score and the verdict, nobody else does, and
nothing of it is a game of the platform or a rating. A weaker version after it is judged
worse and not promoted: the stronger one keeps playing."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from rest_framework.test import APIClient

from tests.celery_helpers import isolated_celery_worker
from tests.e2e.test_faults import require_redis_broker
from tests.hosted.gate_helpers import GREEDY, RANDOM, runner_environment, zipped
from tests.needs import need_postgresql
from tests.waits import wait_until as wait_for
from tournaments.models import BotSubmission, Game, Gate, RatingChange
from tournaments.services import hosting
from tournaments.services.accounts import api_token_create, bot_create

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def runner_env(monkeypatch):
    need_postgresql("the runner's worker threads and the test share the versions")
    require_redis_broker()
    with runner_environment(monkeypatch, uid_base=1_640_000, slots=4, cgroup="tienlen-sandbox-gate") as config:
        yield config


def submitted(bot, owner, source: bytes) -> BotSubmission:
    return hosting.submission_create(bot=bot, user=owner, data=zipped(("bot.py", source)), runtime="python3.11")


def gate_over(submission: BotSubmission) -> bool:
    return BotSubmission.objects.get(pk=submission.pk).gate_status in ("done", "failed")


def test_a_gated_version_plays_its_predecessor_in_the_sandbox_and_is_promoted_unless_worse(runner_env, settings) -> None:
    settings.TIENLEN_GATE_MAX_SETS = 150
    owner = User.objects.create_user("gate-author")
    bot, _ = bot_create(owner=owner, name="gated-bot")
    with isolated_celery_worker(runner=True, concurrency=2, analysis=False):
        s1 = submitted(bot, owner, RANDOM)
        wait_for(lambda: BotSubmission.objects.get(pk=s1.pk).status in ("ready", "failed"), 300, "s1's validation")
        s1.refresh_from_db()
        assert s1.status == "ready", s1.validation_log[-3000:]
        hosting.bot_gate_set(bot=bot, user=owner, gate=Gate.AUTO)
        s2 = submitted(bot, owner, GREEDY)
        wait_for(lambda: gate_over(s2), 600, "s2's gate")
        bot.refresh_from_db()
        s2.refresh_from_db()
        assert s2.gate_status == "done", (s2.gate_detail, s2.gate_log[-2000:])
        assert s2.gate_against_id == s1.pk and s2.gate_verdict == "better"
        assert s2.gate_sets >= 30 and s2.gate_games == 2 * s2.gate_sets and s2.gate_score > 0
        assert bot.active_submission_id == s2.pk  # promoted: the automatic gate, not worse
        s3 = submitted(bot, owner, RANDOM)
        wait_for(lambda: gate_over(s3), 600, "s3's gate")
    s3.refresh_from_db()
    bot.refresh_from_db()
    assert s3.gate_status == "done" and s3.gate_against_id == s2.pk and s3.gate_verdict == "worse"
    assert bot.active_submission_id == s2.pk  # not promoted: the better one keeps playing
    # unrated, in no tournament: no game of the platform, no rating change
    assert not Game.objects.exists() and not RatingChange.objects.exists()
    # both versions played in their own sandboxes: each one's log is in the gate's log
    assert "== s3 (new)" in s3.gate_log and "== s2 (predecessor)" in s3.gate_log
    # the owner sees the result; nobody else does
    mine = APIClient()
    mine.credentials(HTTP_AUTHORIZATION=f"Token {api_token_create(user=owner)[1]}")
    gate = mine.get(f"/api/v1/bots/{bot.name}/versions/3/").json()["gate"]
    assert gate["verdict"] == "worse" and gate["against"] == "s2" and gate["games"] == s3.gate_games
    assert gate["score"] < 0 and "SPRT" in gate["detail"]
    rival = APIClient()
    rival.credentials(HTTP_AUTHORIZATION=f"Token {api_token_create(user=User.objects.create_user('rival'))[1]}")
    theirs = rival.get(f"/api/v1/bots/{bot.name}/versions/3/")
    assert theirs.status_code == 404 and b"worse" not in theirs.content
    # the owner may still promote it by hand (a roll-back to random, say)
    hosting.submission_promote(bot=bot, user=owner, seq=3)
    bot.refresh_from_db()
    assert bot.active_submission_id == s3.pk
