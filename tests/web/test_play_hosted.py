"""Hosted bots as casual opponents (docs/bot-guide.md, "Casual games"; docs/hosting.md): a
hosted bot that can run (a ready version, hosting not stopped) is offered and seated like a
remote one, with its owner's consent (off by default) for other people's tables; its
session is created for the casual table, ended when that table closes, and its log is its
owner's only. The sandbox end to end is tests/hosted/test_casual_hosted.py."""

from __future__ import annotations

import pytest
from django.test import Client

from tests.web.factories import make_user
from tournaments.models import CasualTable, HostedSession
from tournaments.services import casual as casual_services
from tournaments.services import hosting
from tournaments.services.accounts import bot_create


def _client(user=None) -> Client:
    client = Client()
    if user is not None:
        client.force_login(user)
    return client


def hosted_bot(owner, name: str, *, ready: bool = True):
    import io
    import zipfile

    bot, _ = bot_create(owner=owner, name=name)
    if not ready:
        return bot
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zf:
        zf.writestr("bot.py", "from bots_sdk.examples import GreedyBot as Bot\n")
    submission = hosting.submission_create(bot=bot, user=owner, data=buffer.getvalue(), runtime="python3.11")
    assert hosting.submission_validation_begin(submission_id=submission.pk)
    hosting.submission_validation_finish(submission_id=submission.pk, ok=True, log="", detail="")
    bot.refresh_from_db()
    return hosting.bot_hosting_set(bot=bot, user=owner, hosting="hosted")


@pytest.fixture
def people(db):
    boss, alice, bob = make_user("boss", staff=True), make_user("alice"), make_user("bob")
    house = bot_create(owner=boss, name="house-random", house_bot="random")[0]
    return {"alice": alice, "bob": bob, "house": house, "willing": hosted_bot(bob, "bob-willing"),
            "shy": hosted_bot(bob, "bob-shy")}


def _form(*bots) -> dict:
    return {"preset": "south", "opponent": [b.pk for b in bots], "games": 1, "move_time_s": 30,
            "time_bank_s": 60, "seat": 1}


def test_a_hosted_bot_is_offered_with_consent_and_one_that_declined_never_is(people):
    alice, bob, willing, shy = people["alice"], people["bob"], people["willing"], people["shy"]
    assert willing.hosting == "hosted" and not willing.casual_games  # off by default
    casual_services.casual_bot_consent(user=bob, bot=willing, accept=True)
    page = _client(alice).get("/play/").content.decode()
    assert "bob-willing" in page and "bob-shy" not in page
    # a hostile POST naming the bot that declined: refused, nothing created
    refused = _client(alice).post("/play/", _form(shy, people["house"]))
    assert refused.status_code == 400 and "does not accept casual games" in refused.content.decode()
    assert not CasualTable.objects.exists()
    # its owner may seat it; a hosted bot with no ready version is seated by nobody
    assert "bob-shy" in _client(bob).get("/play/").content.decode()
    unready = hosted_bot(bob, "bob-unready", ready=False)
    unready.hosting = "hosted"
    unready.casual_games = True
    unready.save()
    assert "bob-unready" not in _client(alice).get("/play/").content.decode()
    assert "bob-unready" not in _client(bob).get("/play/").content.decode()
    assert _client(bob).post("/play/", _form(unready)).status_code == 400
    # with consent, seated; consent withdrawn before the table starts: it never starts
    assert _client(alice).post("/play/", _form(willing)).status_code == 302
    table = CasualTable.objects.get()
    casual_services.casual_bot_consent(user=bob, bot=willing, accept=False)
    assert casual_services.casual_start(table_id=table.pk) is None
    assert not HostedSession.objects.exists()  # no session was started for it


def test_a_casual_tables_session_lives_with_its_table_and_its_log_is_the_owners(people):
    alice, bob, willing = people["alice"], people["bob"], people["willing"]
    casual_services.casual_bot_consent(user=bob, bot=willing, accept=True)
    table = casual_services.casual_table_create(user=alice, preset="south", bot_ids=[willing.pk, people["house"].pk],
                                                games=1, move_time_ms=30_000, time_bank_ms=0)
    assert casual_services.casual_start(table_id=table.pk) is not None
    created = hosting.casual_hosted_sessions_ensure(casual_table_id=table.pk)
    assert len(created) == 1
    assert hosting.casual_hosted_sessions_ensure(casual_table_id=table.pk) == []  # once per table
    session = HostedSession.objects.get(pk=created[0])
    assert session.casual_table_id == table.pk and session.table_id is None
    assert session.submission_id == willing.active_submission_id
    start = hosting.hosted_session_begin(session_id=session.pk, runner="runner-a")
    assert start is not None and not hosting.hosted_session_should_stop(session_id=session.pk)
    assert hosting.hosted_session_token_bot(token=start.token).pk == willing.pk
    casual_services.casual_finish(table_id=table.pk, completed=True)
    assert hosting.hosted_session_should_stop(session_id=session.pk)  # the table closed: the runner stops it
    hosting.hosted_session_end(session_id=session.pk, reason="stopped", fault="none", detail="", exit_code=0,
                               log="secret thoughts of bob-willing", log_bytes=30, log_truncated=False,
                               runner="runner-a")
    # the owner sees the session and its log, on the bot's page and in the API; the person who
    # played the table (and anyone else) does not
    page = _client(bob).get("/bots/bob-willing/").content.decode()
    assert "secret thoughts of bob-willing" in page and f"casual table #{table.pk}" in page
    assert "secret thoughts" not in _client(alice).get("/bots/bob-willing/").content.decode()
    mine = _client(bob).get(f"/api/v1/bots/bob-willing/sessions/?casual_table={table.pk}").json()
    assert [s["casual_table"] for s in mine] == [table.pk] and "secret thoughts" in mine[0]["log"]
    theirs = _client(alice).get(f"/api/v1/bots/bob-willing/sessions/?casual_table={table.pk}")
    assert theirs.status_code == 404 and b"secret thoughts" not in theirs.content
    # a session for a table closed before any runner took it never starts
    later = casual_services.casual_table_create(user=alice, preset="south", bot_ids=[willing.pk], games=1,
                                                move_time_ms=30_000, time_bank_ms=0)
    assert casual_services.casual_start(table_id=later.pk) is not None
    [queued] = hosting.casual_hosted_sessions_ensure(casual_table_id=later.pk)
    casual_services.casual_finish(table_id=later.pk, completed=False, detail="left")
    assert hosting.hosted_session_begin(session_id=queued, runner="runner-a") is None
    assert HostedSession.objects.get(pk=queued).status == "ended"


def test_a_hosted_bot_plays_at_most_two_open_casual_tables(people):
    """Each one is a sandbox on a runner: people cannot take the runners from tournaments."""
    bob, willing = people["bob"], people["willing"]
    casual_services.casual_bot_consent(user=bob, bot=willing, accept=True)
    carol, dave = make_user("carol"), make_user("dave")
    for who in (people["alice"], carol):
        assert _client(who).post("/play/", _form(willing)).status_code == 302
    refused = _client(dave).post("/play/", _form(willing))
    assert refused.status_code == 409
    assert "bob-willing is playing 2 casual tables already" in refused.content.decode()
    assert CasualTable.objects.count() == 2
    # a remote bot or a house bot has no such limit (the referee's own per-bot limit applies)
    assert _client(dave).post("/play/", _form(people["house"])).status_code == 302
    # one of them finished: its place is free
    casual_services.casual_finish(table_id=CasualTable.objects.filter(owner=carol).get().pk, completed=True)
    assert _client(dave).post("/play/", _form(willing)).status_code == 302
