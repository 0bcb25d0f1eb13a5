"""A hosted bot's owner in real Chromium: turns the gate on, sees a gated version's result
(games, score, the SPRT's verdict) in the versions table, promotes it with its button, sees
the rating marked provisional again, and clears the bot's storage; another signed-in user
sees none of it."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def login(page, url: str, username: str) -> None:
    page.goto(f"{url}/accounts/login/")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", "pw-for-tests-123")
    page.click("main button[type=submit]")


def test_the_owner_gates_promotes_and_clears_storage_and_nobody_else_sees_it(live_server, page) -> None:
    from tests.hosted.gate_helpers import validated
    from tests.web.factories import make_user
    from tournaments.models import BotStorage, GateVerdict, HostedSession, Rating
    from tournaments.services import hosting
    from tournaments.services.accounts import bot_create
    from tournaments.services.ratings import rating_pool_get

    owner = make_user("ann")
    bot, _ = bot_create(owner=owner, name="anns-bot")
    s1 = validated(bot, owner)
    Rating.objects.create(pool=rating_pool_get(preset="south", seats=4), bot=bot, rating=1580.0, games=40)
    session = HostedSession.objects.create(bot=bot, submission=s1)
    hosting.hosted_session_begin(session_id=session.pk, runner="r")
    hosting.hosted_session_end(session_id=session.pk, reason="stopped", fault="none", detail="", exit_code=0, log="",
                               log_bytes=0, log_truncated=False, runner="r", storage=(b"tar", 4321, 2))

    page.set_default_timeout(30_000)  # a loaded machine: every wait has its bound, none is timed
    login(page, live_server.url, "ann")
    page.goto(f"{live_server.url}/bots/{bot.name}/")
    assert "provisional" not in page.inner_text("#ratings")
    page.select_option("select[name=gate]", "manual")
    page.click("form[action$='/gate/'] button[type=submit]")
    page.wait_for_selector("text=Saved: what a new ready version does first.")
    bot.refresh_from_db()
    assert bot.gate == "manual"

    s2 = validated(bot, owner)  # ready: gated, so s1 still plays
    hosting.gate_begin(submission_id=s2.pk)
    hosting.gate_finish(submission_id=s2.pk, result=hosting.GateResult(
        True, 72, 36, 0.62, 0.21, GateVerdict.BETTER, "s2 - s1: +0.62 points/game", "both logs"))
    page.reload()
    gate = page.inner_text("#hosting td.gate >> nth=0")
    assert "gate done" in gate and "against s1" in gate and "Better" in gate and "72 games" in gate
    assert "0.62 points/game" in gate
    page.click("text=Promote s2")
    page.wait_for_selector("text=s2 is now the active version")
    bot.refresh_from_db()
    assert bot.active_submission_id == s2.pk
    assert "provisional" in page.inner_text("#ratings")  # kept, provisional again

    assert "4321" in page.inner_text("#storage")
    page.click("#storage button[type=submit]")
    page.wait_for_selector("text=Its storage is empty")
    assert not BotStorage.objects.filter(bot=bot).exists()

    make_user("bob")
    page.context.clear_cookies()
    login(page, live_server.url, "bob")
    page.goto(f"{live_server.url}/bots/{bot.name}/")
    body = page.inner_text("body")
    assert "Promote" not in body and "gate done" not in body and "4321" not in body
    assert page.query_selector("#hosting") is None
