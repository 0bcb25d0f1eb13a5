"""Versions in play, without a sandbox: promoting a new version (tables in flight finish on
the old one, later tables take the new one; the rating is kept but provisional again, on
the bot page, the API and the leaderboards), the gate's rules (a gated version waits; the
automatic gate promotes unless the SPRT says worse; the owner promotes by hand), the
storage's API, and that all of it is the owner's only."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from rest_framework.test import APIClient

from tests.hosted.gate_helpers import validated
from tournaments.models import (
    PROVISIONAL_GAMES,
    BotStorage,
    Gate,
    GateStatus,
    GateVerdict,
    HostedSession,
    Rating,
    Table,
)
from tournaments.runner import gate_verdict
from tournaments.services import hosting
from tournaments.services.accounts import api_token_create, bot_create
from tournaments.services.ratings import rating_pool_get


@pytest.fixture
def owner(db):
    return User.objects.create_user("author")


@pytest.fixture
def bot(owner):
    bot, _ = bot_create(owner=owner, name="gated-one")
    return bot


def client_of(user) -> APIClient:
    _, key = api_token_create(user=user)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    return client


def leaderboard_provisional(pool, bot) -> list[bool]:
    body = APIClient().get(f"/api/v1/pools/{pool.slug}/leaderboard/").json()
    rows = body["results"] if isinstance(body, dict) else body
    return [r["provisional"] for r in rows if r["bot"] == bot.name]


def hosted_table(owner, bot) -> Table:
    from tests.tournaments.conftest import running_round_robin

    staff = User.objects.create_user(f"house-{Table.objects.count()}", is_staff=True)
    house = [bot_create(owner=staff, name=f"h{Table.objects.count()}-{n}", house_bot="greedy")[0] for n in range(3)]
    tournament = running_round_robin(staff, [bot, *house], name=f"cup-{Table.objects.count()}",
                                     seats_per_table=4, games_per_table=2)
    return Table.objects.filter(tournament=tournament).first()


def test_a_table_in_flight_finishes_on_its_version_and_later_tables_take_the_new_one(owner, bot) -> None:
    s1 = validated(bot, owner)
    bot.refresh_from_db()
    hosting.bot_hosting_set(bot=bot, user=owner, hosting="hosted")
    table = hosted_table(owner, bot)
    [first] = hosting.hosted_sessions_ensure(table_id=table.pk)
    # its runner fails (the platform's fault) while s2 is promoted: the table resumes on s1
    hosting.hosted_session_begin(session_id=first, runner="r1")
    s2 = validated(bot, owner)
    bot.refresh_from_db()
    assert bot.active_submission_id == s2.pk
    hosting.hosted_session_end(session_id=first, reason="start_failed", fault="platform", detail="", exit_code=None,
                               log="", log_bytes=0, log_truncated=False)
    [again] = hosting.hosted_sessions_ensure(table_id=table.pk)
    assert HostedSession.objects.get(pk=again).submission_id == s1.pk
    later = hosted_table(owner, bot)
    [new] = hosting.hosted_sessions_ensure(table_id=later.pk)
    assert HostedSession.objects.get(pk=new).submission_id == s2.pk


def test_a_promoted_version_keeps_the_rating_but_it_is_provisional_again(owner, bot, client) -> None:
    validated(bot, owner)
    pool = rating_pool_get(preset="south", seats=4)
    Rating.objects.create(pool=pool, bot=bot, rating=1620.0, games=50)
    assert not Rating.objects.get(bot=bot).provisional
    s2 = validated(bot, owner)
    rating = Rating.objects.get(bot=bot)
    assert rating.rating == 1620.0 and rating.games == 50  # kept
    assert rating.provisional and rating.provisional_until == 50 + PROVISIONAL_GAMES
    assert s2.pk == type(s2).objects.get(pk=s2.pk).bot.active_submission_id
    # shown to everyone: the API, the leaderboard, the bot page
    assert leaderboard_provisional(pool, bot) == [True]
    assert [r["provisional"] for r in APIClient().get(f"/api/v1/bots/{bot.name}/ratings/").json()] == [True]
    assert "provisional" in client.get(f"/leaderboards/{pool.slug}/").content.decode()
    assert "provisional" in client.get(f"/bots/{bot.name}/").content.decode()
    # after PROVISIONAL_GAMES more rated games it is established again
    Rating.objects.filter(bot=bot).update(games=50 + PROVISIONAL_GAMES)
    assert not Rating.objects.get(bot=bot).provisional
    assert leaderboard_provisional(pool, bot) == [False]


def test_with_a_gate_a_new_version_waits_and_the_owner_sees_the_result_and_promotes(owner, bot,
                                                                                  django_capture_on_commit_callbacks) -> None:
    s1 = validated(bot, owner)
    hosting.bot_gate_set(bot=bot, user=owner, gate=Gate.MANUAL)
    with django_capture_on_commit_callbacks() as callbacks:
        s2 = validated(bot, owner)
    assert len(callbacks) >= 1  # the gate, on the runner queue
    bot.refresh_from_db()
    assert bot.active_submission_id == s1.pk  # not yet
    assert s2.gate_status == GateStatus.QUEUED and s2.gate_against_id == s1.pk
    assert hosting.gate_begin(submission_id=s2.pk) is not None
    assert hosting.gate_begin(submission_id=s2.pk) is None  # once
    hosting.gate_finish(submission_id=s2.pk, result=hosting.GateResult(
        True, 80, 40, 0.8, 0.3, GateVerdict.BETTER, "s2 - s1: +0.80", "the gate log"))
    bot.refresh_from_db()
    assert bot.active_submission_id == s1.pk  # manual: the owner decides
    client = client_of(owner)
    gate = client.get(f"/api/v1/bots/{bot.name}/versions/{s2.seq}/").json()["gate"]
    assert gate["status"] == "done" and gate["verdict"] == "better" and gate["games"] == 80
    assert gate["against"] == "s1" and gate["score"] == 0.8 and gate["log"] == "the gate log"
    # anyone else: nothing, and no promotion
    stranger = client_of(User.objects.create_user("stranger"))
    assert stranger.get(f"/api/v1/bots/{bot.name}/versions/{s2.seq}/").status_code == 404
    assert stranger.post(f"/api/v1/bots/{bot.name}/versions/{s2.seq}/promote/").status_code == 404
    assert APIClient().post(f"/api/v1/bots/{bot.name}/versions/{s2.seq}/promote/").status_code in (401, 403)
    bot.refresh_from_db()
    assert bot.active_submission_id == s1.pk
    response = client.post(f"/api/v1/bots/{bot.name}/versions/{s2.seq}/promote/")
    assert response.status_code == 200 and response.json()["active"] is True
    assert client.post(f"/api/v1/bots/{bot.name}/versions/{s2.seq}/promote/").json()["version"] == [
        "s2 is already the active version."]
    assert client.post(f"/api/v1/bots/{bot.name}/versions/9/promote/").status_code == 400


def test_the_page_shows_the_gate_and_its_promote_button_to_the_owner_only(owner, bot, client) -> None:
    validated(bot, owner)
    hosting.bot_gate_set(bot=bot, user=owner, gate=Gate.MANUAL)
    s2 = validated(bot, owner)
    hosting.gate_begin(submission_id=s2.pk)
    hosting.gate_finish(submission_id=s2.pk, result=hosting.GateResult(
        True, 64, 32, -0.1, 0.4, GateVerdict.NO_DIFFERENCE, "d", "GATE-LOG-MARK"))
    client.force_login(owner)
    page = client.get(f"/bots/{bot.name}/").content.decode()
    assert "GATE-LOG-MARK" in page and "Promote s2" in page
    assert "64 games" in page
    response = client.post(f"/me/bots/{bot.name}/versions/{s2.seq}/promote/", follow=True)
    assert "s2 is now the active version" in response.content.decode()
    other = User.objects.create_user("other")
    client.force_login(other)
    assert "GATE-LOG-MARK" not in client.get(f"/bots/{bot.name}/").content.decode()
    assert client.post(f"/me/bots/{bot.name}/gate/", {"gate": "off"}).status_code == 404
    client.logout()
    assert "GATE-LOG-MARK" not in client.get(f"/bots/{bot.name}/").content.decode()


@pytest.mark.parametrize(("verdict", "promoted"), [(GateVerdict.BETTER, True), (GateVerdict.NO_DIFFERENCE, True),
                                                   (GateVerdict.UNDECIDED, True), (GateVerdict.WORSE, False)])
def test_the_automatic_gate_promotes_unless_the_new_version_did_worse(owner, bot, verdict, promoted) -> None:
    s1 = validated(bot, owner)
    client_of(owner).post(f"/api/v1/bots/{bot.name}/hosting/", {"gate": "auto"}, format="json")
    bot.refresh_from_db()
    assert bot.gate == Gate.AUTO
    s2 = validated(bot, owner)
    hosting.gate_begin(submission_id=s2.pk)
    hosting.gate_finish(submission_id=s2.pk, result=hosting.GateResult(True, 60, 30, 0.0, 0.1, verdict, "", ""))
    bot.refresh_from_db()
    assert bot.active_submission_id == (s2.pk if promoted else s1.pk)


def test_a_gate_that_could_not_be_played_out_promotes_nothing(owner, bot) -> None:
    s1 = validated(bot, owner)
    hosting.bot_gate_set(bot=bot, user=owner, gate=Gate.AUTO)
    s2 = validated(bot, owner)
    hosting.gate_begin(submission_id=s2.pk)
    hosting.gate_finish(submission_id=s2.pk, result=hosting.GateResult(
        False, 3, 1, None, None, "", "s2 ended on its own during the gate", "Traceback"))
    bot.refresh_from_db()
    s2.refresh_from_db()
    assert bot.active_submission_id == s1.pk and s2.gate_status == "failed"
    assert "ended on its own" in s2.gate_detail


def test_a_bad_gate_setting_is_refused_saying_why(owner, bot) -> None:
    response = client_of(owner).post(f"/api/v1/bots/{bot.name}/hosting/", {"gate": "sometimes"}, format="json")
    assert response.status_code == 400 and "gate" in response.json()
    response = client_of(owner).post(f"/api/v1/bots/{bot.name}/hosting/", {}, format="json")
    assert response.status_code == 400


def test_the_gate_verdict_is_the_arenas_sprt_both_ways() -> None:
    import random

    rng = random.Random(7)
    better = [1.0 + rng.gauss(0, 1) for _ in range(60)]
    assert gate_verdict(better) == GateVerdict.BETTER
    assert gate_verdict([-x for x in better]) == GateVerdict.WORSE
    assert gate_verdict([rng.gauss(0, 0.5) for _ in range(200)]) == GateVerdict.NO_DIFFERENCE
    assert gate_verdict(better[:10]) == GateVerdict.UNDECIDED  # fewer than 30 sets: no decision


def test_the_storage_is_the_owners_to_see_and_clear(owner, bot) -> None:
    s1 = validated(bot, owner)
    session = HostedSession.objects.create(bot=bot, submission=s1)
    hosting.hosted_session_begin(session_id=session.pk, runner="r")
    hosting.hosted_session_end(session_id=session.pk, reason="stopped", fault="none", detail="", exit_code=0, log="",
                               log_bytes=0, log_truncated=False, runner="r", storage=(b"tar", 1234, 3))
    assert hosting.bot_storage_data(bot_id=bot.pk) == b"tar"
    client = client_of(owner)
    body = client.get(f"/api/v1/bots/{bot.name}/storage/").json()
    assert body["size"] == 1234 and body["files"] == 3 and body["cap"] == 8 * 1024 * 1024
    stranger = client_of(User.objects.create_user("stranger"))
    assert stranger.get(f"/api/v1/bots/{bot.name}/storage/").status_code == 404
    assert stranger.delete(f"/api/v1/bots/{bot.name}/storage/").status_code == 404
    assert APIClient().delete(f"/api/v1/bots/{bot.name}/storage/").status_code in (401, 403)
    assert BotStorage.objects.filter(bot=bot).exists()
    assert client.delete(f"/api/v1/bots/{bot.name}/storage/").json()["cleared"] is True
    assert hosting.bot_storage_data(bot_id=bot.pk) == b""
    assert client.get(f"/api/v1/bots/{bot.name}/storage/").json()["size"] == 0
