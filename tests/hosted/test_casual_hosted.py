"""A person's casual table against a hosted bot, end to end, on PostgreSQL and Redis: a real
Celery worker consuming the table queue and the runner queue, a real referee
(DjangoTokenStore) on loopback, the real sandbox and runtime. The person creates the table on
/play/ and plays their seat through the page's own JSON; the hosted bot's session is started
on the runner for that casual table, plays it with no process of its author's, and is
stopped when the table closes; its log is its owner's only. A hosted bot whose owner did
not accept casual games is not offered, and a hostile POST naming it is refused."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import pytest
from django.test import Client

from tests.celery_helpers import isolated_celery_worker
from tests.hosted.support import hosted_with_version, runner_in_this_process
from tests.platform_referee import platform_referee
from tests.waits import wait_until as wait_for
from tournaments.hosting.process import HostingConfig

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

BOT = b'''\
import sys

from bots_sdk.examples import GreedyBot


class CasualGreedy(GreedyBot):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        print("hosted casual bot thinking", file=sys.stderr, flush=True)
'''


@pytest.fixture
def runner_env(monkeypatch) -> Iterator[HostingConfig]:
    yield from runner_in_this_process(monkeypatch, prefix="tlh-c-", why="a worker, a referee and the site share the table")


def _hosted(owner, name: str):
    from tournaments.services.accounts import bot_create

    bot, token = bot_create(owner=owner, name=name)
    return hosted_with_version(bot, owner, BOT), token


def test_a_person_plays_a_casual_table_against_a_hosted_bot_run_by_a_runner(runner_env, settings) -> None:
    from django.contrib.auth.models import User

    from tournaments.models import CasualGame, CasualTable, HostedSession
    from tournaments.selectors.casual import people_record
    from tournaments.services import casual as casual_services
    from tournaments.services.accounts import bot_create

    author, alice = User.objects.create_user("hosted-author"), User.objects.create_user("alice")
    willing, author_token = _hosted(author, "hosted-willing")
    shy, _ = _hosted(author, "hosted-shy")
    casual_services.casual_bot_consent(user=author, bot=willing, accept=True)
    house = bot_create(owner=User.objects.create_user("boss", is_staff=True), name="house-random",
                       house_bot="random")[0]
    person = Client()
    person.force_login(alice)
    page = person.get("/play/").content.decode()
    assert "hosted-willing" in page and "hosted-shy" not in page
    form = {"preset": "south", "games": 2, "move_time_s": 5, "time_bank_s": 5, "seat": 1}
    refused = person.post("/play/", {**form, "opponent": [shy.pk, house.pk]})
    assert refused.status_code == 400 and "does not accept casual games" in refused.content.decode()

    with platform_referee(settings), isolated_celery_worker(runner=True, concurrency=4, analysis=False):
        created = person.post("/play/", {**form, "opponent": [willing.pk, house.pk]})
        assert created.status_code == 302, created.content.decode()
        table = CasualTable.objects.get()
        url = f"/play/{table.pk}/"
        deadline = time.monotonic() + 300
        answered = 0
        while time.monotonic() < deadline:
            state = person.get(url + "state.json").json()
            if state["status"] in ("done", "failed"):
                break
            seat = state["seat"] or {}
            if seat.get("move_id") is not None:
                plays = seat["legal_plays"]
                body = {"pass": True} if seat["can_pass"] else {"cards": plays[0]}
                done = person.post(url + "move/", json.dumps({"move_id": seat["move_id"], **body}),
                                   content_type="application/json")
                answered += done.status_code == 200
            time.sleep(0.05)
        # the runner stops the session once its casual table closed
        wait_for(lambda: not HostedSession.objects.exclude(status="ended").exists(), 60, "the session's end")

    table.refresh_from_db()
    assert table.status == CasualTable.Status.DONE, table.detail
    assert answered > 0 and CasualGame.objects.filter(table=table).count() == 2
    session = HostedSession.objects.get(bot=willing)
    assert session.casual_table_id == table.pk and session.table_id is None
    assert (session.status, session.reason, session.fault) == ("ended", "stopped", "none")
    assert "hosted casual bot thinking" in session.log
    assert author_token not in session.log  # nothing of the author's ran
    assert not HostedSession.objects.filter(bot=shy).exists()  # never seated, never started
    # the bot played both games: they count in its "people vs bots" record, nowhere else
    assert people_record(bot=willing).games == 2
    # its log is its owner's only, not the person's who played the table
    owner = Client()
    owner.force_login(author)
    assert "hosted casual bot thinking" in owner.get("/bots/hosted-willing/").content.decode()
    assert "hosted casual bot thinking" not in person.get("/bots/hosted-willing/").content.decode()
    theirs = person.get(f"/api/v1/bots/hosted-willing/sessions/?casual_table={table.pk}")
    assert theirs.status_code == 404 and b"hosted casual bot thinking" not in theirs.content
