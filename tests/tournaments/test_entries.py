"""Entry with consent (tournaments.services.entries): invitations that the bot's owner
answers, open registration within its window, withdraw and disqualify; through the API
and the web, with several accounts trying what they must not."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth.models import Permission, User
from django.test import Client
from django.utils import timezone
from rest_framework.test import APIClient

from tests.tournaments.conftest import running_round_robin
from tournaments.models import Bot, Entrant, Referee, Table, Tournament
from tournaments.play.pool import bots_seen
from tournaments.services.accounts import bot_create, house_bot_for
from tournaments.services.entries import entrant_disqualify, entry_join, entry_withdraw
from tournaments.services.tournaments import (
    tournament_create,
    tournament_entrant_add,
    tournament_start,
)

pytestmark = pytest.mark.django_db


def api(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def web(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def organiser_named(name: str) -> User:
    user = User.objects.create_user(name, password="pw-for-tests-123")
    user.user_permissions.add(Permission.objects.get(codename="organise_tournaments"))
    return User.objects.get(pk=user.pk)


@pytest.fixture
def field(organiser):
    """A draft of the organiser's with its own bot, and four other owners with a bot each."""
    draft = tournament_create(organiser=organiser, name="Cup", format="round_robin", slug="cup")
    own = bot_create(owner=organiser, name="org-bot")[0]
    others = [bot_create(owner=User.objects.create_user(f"author{i}"), name=f"bot{i}")[0] for i in range(4)]
    return draft, own, others


def test_entering_another_owners_bot_is_an_invitation_that_start_waits_for(organiser, field) -> None:
    draft, own, others = field
    client = api(organiser)
    answers = {b.name: client.post("/api/v1/tournaments/cup/entrants/", {"bot": b.name}, format="json").json()
               for b in (own, *others[:3])}
    answers["house"] = client.post("/api/v1/tournaments/cup/entrants/", {"bot": house_bot_for(kind="random").name},
                                   format="json").json()
    assert answers["org-bot"]["status"] == "active" and answers["house"]["status"] == "active"
    assert {answers[b.name]["status"] for b in others[:3]} == {"invited"}
    start = client.post("/api/v1/tournaments/cup/start/", {}, format="json")
    assert start.status_code == 400
    text = str(start.json()["entrants"])
    assert "Waiting for the owners to accept" in text and "bot0 (of author0)" in text and "bot2 (of author2)" in text
    # The owners see their invitations, and only theirs; they accept or decline.
    listed = api(others[0].owner).get("/api/v1/invitations/").json()
    assert [(i["bot"], i["tournament"], i["organiser"]) for i in listed] == [("bot0", "cup", "org")]
    assert api(others[0].owner).post("/api/v1/tournaments/cup/entrants/bot0/accept/").json()["status"] == "active"
    assert api(others[1].owner).post("/api/v1/tournaments/cup/entrants/bot1/accept/").status_code == 200
    assert api(others[2].owner).post("/api/v1/tournaments/cup/entrants/bot2/decline/").status_code == 204
    assert not draft.entrants.filter(bot=others[2]).exists()
    assert client.post("/api/v1/tournaments/cup/start/", {}, format="json").status_code == 200


def test_nobody_answers_an_invitation_for_someone_elses_bot(organiser, field) -> None:
    draft, _, others = field
    tournament_entrant_add(tournament=draft, bot=others[0])  # a trusted entry: active already
    invited = api(organiser).post("/api/v1/tournaments/cup/entrants/", {"bot": "bot1"}, format="json")
    assert invited.json()["status"] == "invited"
    for intruder in (organiser, others[0].owner):  # the organiser, and another bot owner
        assert api(intruder).post("/api/v1/tournaments/cup/entrants/bot1/accept/").status_code == 403
        assert api(intruder).post("/api/v1/tournaments/cup/entrants/bot1/decline/").status_code == 403
        assert web(intruder).post("/me/bots/bot1/invitations/cup/accept/").status_code == 403
    assert APIClient().post("/api/v1/tournaments/cup/entrants/bot1/accept/").status_code in (401, 403)
    assert draft.entrants.get(bot=others[1]).status == Entrant.Status.INVITED
    # URL editing: another tournament, an unknown one, a bot not entered.
    assert web(others[1].owner).post("/me/bots/bot1/invitations/nope/accept/").status_code == 404
    assert api(others[1].owner).post("/api/v1/tournaments/nope/entrants/bot1/accept/").status_code == 404
    assert api(others[2].owner).post("/api/v1/tournaments/cup/entrants/bot2/accept/").status_code == 400
    # Accepting an active entry is no invitation.
    assert api(others[0].owner).post("/api/v1/tournaments/cup/entrants/bot0/accept/").status_code == 400
    # The web list: on My bots and the bot's own page, for its owner only.
    assert 'data-invitation="bot1@cup"' in web(others[1].owner).get("/me/bots/").content.decode()
    assert 'data-invitation="bot1@cup"' in web(others[1].owner).get("/bots/bot1/").content.decode()
    assert "data-invitation" not in web(others[0].owner).get("/bots/bot1/").content.decode()
    assert "data-invitation" not in Client().get("/bots/bot1/").content.decode()
    answer = web(others[1].owner).post("/me/bots/bot1/invitations/cup/accept/", follow=True).content.decode()
    assert "bot1 accepted the invitation to “Cup”." in answer
    assert draft.entrants.get(bot=others[1]).status == Entrant.Status.ACTIVE


def test_open_registration_within_its_window(organiser, field) -> None:
    _, _, others = field
    me = others[0].owner
    closed = api(me).post("/api/v1/tournaments/cup/join/", {"bot": "bot0"}, format="json")
    assert closed.status_code == 400 and "by invitation of the organiser only" in str(closed.json())
    now = timezone.now()
    tournament_create(organiser=organiser, name="Later", format="round_robin", slug="later", open_registration=True,
                      registration_opens_at=now + timedelta(days=1))
    tournament_create(organiser=organiser, name="Past", format="round_robin", slug="past", open_registration=True,
                      registration_closes_at=now - timedelta(minutes=1))
    opened = tournament_create(organiser=organiser, name="Open", format="knockout", slug="open", open_registration=True,
                               registration_closes_at=now + timedelta(days=1))
    assert "Registration opens at" in str(api(me).post("/api/v1/tournaments/later/join/", {"bot": "bot0"}, format="json").json())
    assert "Registration closed at" in str(api(me).post("/api/v1/tournaments/past/join/", {"bot": "bot0"}, format="json").json())
    # Someone else's bot: refused, whoever asks (its owner only joins with it).
    assert api(others[1].owner).post("/api/v1/tournaments/open/join/", {"bot": "bot0"}, format="json").status_code == 403
    assert web(others[1].owner).post("/tournaments/open/join/", {"bot": "bot0"}).status_code == 403
    assert api(organiser).post("/api/v1/tournaments/open/join/", {"bot": "bot0"}, format="json").status_code == 403
    joined = api(me).post("/api/v1/tournaments/open/join/", {"bot": "bot0"}, format="json")
    assert joined.status_code == 201 and joined.json()["status"] == "active"
    # The owner rule at join: one bot per owner unless the organiser allows more.
    second = bot_create(owner=me, name="bot0-v2")[0]
    refused = api(me).post("/api/v1/tournaments/open/join/", {"bot": second.name}, format="json")
    assert refused.status_code == 400 and "one bot per owner" in str(refused.json())
    Tournament.objects.filter(pk=opened.pk).update(allow_same_owner=True)
    assert api(me).post("/api/v1/tournaments/open/join/", {"bot": second.name}, format="json").status_code == 201
    # Once it runs, a knockout's field is fixed; a ladder stays open.
    Tournament.objects.filter(pk=opened.pk).update(status="running")
    late = api(others[2].owner).post("/api/v1/tournaments/open/join/", {"bot": "bot2"}, format="json")
    assert late.status_code == 400 and "has started" in str(late.json())
    ladder = tournament_create(organiser=organiser, name="Ladder", format="ladder", slug="ladder")
    assert ladder.open_registration  # ladders are open by default
    Tournament.objects.filter(pk=ladder.pk).update(status="running")
    assert api(others[2].owner).post("/api/v1/tournaments/ladder/join/", {"bot": "bot2"}, format="json").status_code == 201


def test_withdraw_before_the_start_and_from_a_running_ladder(organiser, field) -> None:
    _, _, others = field
    opened = tournament_create(organiser=organiser, name="Open", format="round_robin", slug="open",
                               open_registration=True)
    me = others[0].owner
    entry_join(tournament=opened, bot=others[0], user=me)
    # Another user cannot take my bot out (API and web); I can.
    assert api(others[1].owner).post("/api/v1/tournaments/open/leave/", {"bot": "bot0"}, format="json").status_code == 403
    assert web(others[1].owner).post("/tournaments/open/withdraw/", {"bot": "bot0"}).status_code == 403
    assert api(me).post("/api/v1/tournaments/open/leave/", {"bot": "bot0"}, format="json").status_code == 204
    assert not opened.entrants.exists()  # before the start: the entry is gone
    ladder = tournament_create(organiser=organiser, name="Ladder", format="ladder", slug="ladder")
    entry_join(tournament=ladder, bot=others[0], user=me)
    Tournament.objects.filter(pk=ladder.pk).update(status="running")
    entry_withdraw(tournament=ladder, bot=others[0], user=me)
    assert ladder.entrants.get().status == Entrant.Status.WITHDRAWN  # kept: its games stay
    assert entry_join(tournament=ladder, bot=others[0], user=me).status == Entrant.Status.ACTIVE  # back in


def test_disqualify_is_the_organisers_with_a_reason_shown_on_the_page(organiser, field) -> None:
    draft, _, others = field
    for bot in (*others, house_bot_for(kind="random")):
        tournament_entrant_add(tournament=draft, bot=bot)
    rival = organiser_named("rival")
    url = "/api/v1/tournaments/cup/entrants/bot0/disqualify/"
    assert api(rival).post(url, {"reason": "mine now"}, format="json").status_code == 403
    assert web(rival).post("/organise/cup/disqualify/", {"bot": "bot0", "reason": "x"}).status_code == 403
    assert api(others[0].owner).post(url, {"reason": "x"}, format="json").status_code == 403  # not an organiser
    assert web(organiser).post("/organise/nope/disqualify/", {"bot": "bot0", "reason": "x"}).status_code == 404
    assert api(organiser).post(url, {"reason": ""}, format="json").status_code == 400
    answer = api(organiser).post(url, {"reason": "shared its hand with bot1's owner"}, format="json").json()
    assert answer["status"] == "disqualified" and answer["status_reason"] == "shared its hand with bot1's owner"
    page = Client().get("/tournaments/cup/").content.decode()
    assert 'id="entrants-apart"' in page and "shared its hand with bot1&#x27;s owner" in page
    # A disqualified bot is not seated, and its owner cannot join again.
    Tournament.objects.filter(pk=draft.pk).update(open_registration=True)
    draft.refresh_from_db()
    again = api(others[0].owner).post("/api/v1/tournaments/cup/join/", {"bot": "bot0"}, format="json")
    assert again.status_code == 400 and "was disqualified" in str(again.json())
    tournament_start(tournament=draft)
    from tournaments.services.tournaments import tournament_schedule

    tournament_schedule(tournament_id=draft.pk)
    seated = set(Table.objects.filter(tournament=draft).values_list("seats__entrant__bot__name", flat=True))
    assert "bot0" not in seated and seated


def test_disqualified_in_a_running_round_robin_its_tables_not_started_are_cancelled(organiser, bots) -> None:
    tournament = running_round_robin(organiser, bots[:5], seats_per_table=4)
    target = bots[0]
    mine = Table.objects.filter(tournament=tournament, seats__entrant__bot=target)
    others = Table.objects.filter(tournament=tournament).exclude(pk__in=mine.values("pk"))
    assert mine.exists() and others.exists()
    playing = mine.first()
    Table.objects.filter(pk=playing.pk).update(status=Table.Status.RUNNING)
    entrant_disqualify(tournament=tournament, bot=target, user=organiser, reason="timed out on purpose")
    statuses = dict(Table.objects.filter(pk__in=mine.values("pk")).values_list("pk", "status"))
    assert statuses.pop(playing.pk) == Table.Status.RUNNING  # the one it plays now finishes
    assert set(statuses.values()) == {Table.Status.CANCELLED}
    assert not others.exclude(status=Table.Status.PENDING).exists()  # the others' tables play on
    tournament.refresh_from_db()
    assert tournament.status == Tournament.Status.RUNNING


def test_my_bots_shows_connection_last_seen_entries_and_join(organiser, field) -> None:
    draft, _, others = field
    me = others[0].owner
    spare = bot_create(owner=me, name="bot0-spare")[0]
    tournament_entrant_add(tournament=draft, bot=others[0])
    tournament_create(organiser=organiser, name="Open ladder", format="ladder", slug="open-ladder")
    assert bots_seen(bot_ids=[str(others[0].pk), "house:random"]) == 1
    assert bots_seen(bot_ids=[str(others[0].pk)]) == 0  # at most once a minute
    Referee.objects.create(referee_id="r1", address="127.0.0.1:1", capacity=4, started_at=timezone.now(),
                           last_heartbeat=timezone.now(), bots={str(others[0].pk): {"free": 1, "active": 0}})
    html = web(me).get("/me/bots/").content.decode()
    row0 = html[html.index('data-bot="bot0"'):html.index('data-bot="bot0-spare"')]
    assert "connected now" in row0 and "Cup" in row0 and "draft" in row0 and "Join Open ladder" in row0
    spare_row = html[html.index('data-bot="bot0-spare"'):]
    assert "never connected" in spare_row
    # One bot per owner in the open ladder: once bot0 joins, the spare is offered no more.
    web(me).post("/tournaments/open-ladder/join/", {"bot": "bot0", "next": "/me/bots/"})
    html = web(me).get("/me/bots/").content.decode()
    assert "Join Open ladder" not in html
    Referee.objects.all().delete()
    html = web(me).get("/me/bots/").content.decode()
    assert "last seen" in html[html.index('data-bot="bot0"'):html.index('data-bot="bot0-spare"')]
    assert spare.pk and Bot.objects.get(pk=others[0].pk).last_seen_at is not None
    # Nobody else sees my bots there: the page is the signed-in owner's own.
    assert 'data-bot="bot0"' not in web(others[1].owner).get("/me/bots/").content.decode()
    assert Client().get("/me/bots/").status_code == 302


def test_a_bot_whose_owner_accepts_every_invitation_enters_at_once(organiser, field) -> None:
    draft, _, others = field
    me = others[0].owner
    # Its owner says so (web edit page); nobody else can (another user's edit page is a 404).
    assert web(others[1].owner).post("/me/bots/bot0/edit/", {"description": "", "accepts_invitations": "on"}).status_code == 404
    assert api(others[1].owner).patch("/api/v1/bots/bot0/", {"accepts_invitations": True}, format="json").status_code == 403
    web(me).post("/me/bots/bot0/edit/", {"description": "", "accepts_invitations": "on"})
    assert Bot.objects.get(pk=others[0].pk).accepts_invitations
    entered = api(organiser).post("/api/v1/tournaments/cup/entrants/", {"bot": "bot0"}, format="json").json()
    assert entered["status"] == "active"
    assert api(organiser).post("/api/v1/tournaments/cup/entrants/", {"bot": "bot1"}, format="json").json()["status"] == "invited"
    assert draft.entrants.count() == 2
