"""Verified entry: a tournament that admits only approved accounts, and how an account is
approved (staff, or a confirmed e-mail address), on the site and in the API; hostile
cases for every way in (tournaments.services.verification)."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import Permission, User
from django.core import mail
from django.test import Client
from rest_framework.test import APIClient

from tournaments.models import Entrant, Tournament
from tournaments.services import verification
from tournaments.services.accounts import bot_create
from tournaments.services.ladder import ladder_tick
from tournaments.services.tournaments import (
    tournament_create,
    tournament_entrant_add,
    tournament_schedule,
    tournament_start,
)

PASSWORD = "a-long-pass-phrase-42"


@pytest.fixture(autouse=True)
def _fast_hashing(settings) -> None:
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def organiser(db) -> User:
    user = User.objects.create_user("org", password=PASSWORD)
    user.user_permissions.add(Permission.objects.get(codename="organise_tournaments"))
    return User.objects.get(pk=user.pk)


@pytest.fixture
def staff(db) -> User:
    return User.objects.create_user("staffer", password=PASSWORD, is_staff=True)


def api(user: User | None) -> APIClient:
    client = APIClient()
    if user is not None:
        client.force_authenticate(user)
    return client


def people(n: int, prefix: str = "p") -> list[User]:
    return [User.objects.create_user(f"{prefix}{i}", email=f"{prefix}{i}@example.org", password=PASSWORD) for i in range(n)]


def verified_cup(organiser, **fields) -> Tournament:
    return tournament_create(organiser=organiser, name=fields.pop("name", "Verified cup"), format=fields.pop("format", "round_robin"),
                             verified_entry=True, **fields)


def confirmation_link() -> str:
    assert mail.outbox, "no e-mail was sent"
    found = re.search(r"http://testserver(/accounts/confirm/[^\s]+/)", mail.outbox[-1].body)
    assert found, mail.outbox[-1].body
    return found.group(1)


# --- the rule --------------------------------------------------------------------------


@pytest.mark.django_db
def test_only_approved_accounts_enter_and_house_bots_are_exempt(organiser, staff) -> None:
    alice, bob, carol = people(3)
    verification.account_approve(user=alice, by=staff)
    house, _ = bot_create(owner=staff, name="house-greedy", house_bot="greedy")
    staff_bot, _ = bot_create(owner=staff, name="staff-bot")
    a, _ = bot_create(owner=alice, name="alice-bot")
    b, _ = bot_create(owner=bob, name="bob-bot")
    cup = verified_cup(organiser)
    for bot in (house, staff_bot, a):
        tournament_entrant_add(tournament=cup, bot=bot)
    with pytest.raises(Exception) as refused:
        tournament_entrant_add(tournament=cup, bot=b)
    assert "admits only verified accounts" in str(refused.value) and "bob-bot" in str(refused.value)
    assert not Entrant.objects.filter(tournament=cup, bot=b).exists()
    # An open tournament takes anyone.
    open_cup = tournament_create(organiser=organiser, name="Open", format="round_robin")
    tournament_entrant_add(tournament=open_cup, bot=b)
    assert verification.user_verification(user=carol) == ""
    assert [verification.user_verification(user=u) for u in (alice, staff)] == ["approved", "staff"]


@pytest.mark.django_db
def test_start_checks_again_after_an_approval_is_withdrawn(organiser, staff) -> None:
    users = people(4)
    for u in users:
        verification.account_approve(user=u, by=staff)
    bots = [bot_create(owner=u, name=f"v{i}")[0] for i, u in enumerate(users)]
    cup = verified_cup(organiser, seats_per_table=4)
    for bot in bots:
        tournament_entrant_add(tournament=cup, bot=bot)
    verification.account_approval_revoke(user=users[2], by=staff)
    with pytest.raises(Exception) as refused:
        tournament_start(tournament=cup)
    assert "v2" in str(refused.value) and "not verified" in str(refused.value)
    cup.refresh_from_db()
    assert cup.status == Tournament.Status.DRAFT  # nothing was scheduled
    verification.account_approve(user=users[2], by=staff)
    assert tournament_start(tournament=cup).status == Tournament.Status.RUNNING


@pytest.mark.django_db
def test_a_ladder_seats_no_bot_whose_owner_is_no_longer_verified(organiser, staff) -> None:
    users = people(3)
    for u in users:
        verification.account_approve(user=u, by=staff)
    bots = [bot_create(owner=u, name=f"l{i}")[0] for i, u in enumerate(users)]
    ladder = verified_cup(organiser, name="Verified ladder", format="ladder", seats_per_table=2, ladder_tables_per_tick=1)
    for bot in bots:
        tournament_entrant_add(tournament=ladder, bot=bot)
    tournament_start(tournament=ladder)
    tournament_schedule(tournament_id=ladder.pk)
    verification.account_approval_revoke(user=users[0], by=staff)
    verification.account_approval_revoke(user=users[1], by=staff)
    connected = {str(b.pk): "1" for b in bots}
    assert ladder_tick(tournament=ladder, connected=connected) == []  # one verified bot left: no table
    verification.account_approve(user=users[0], by=staff)
    created = ladder_tick(tournament=ladder, connected=connected)
    seated = set(Entrant.objects.filter(table_seats__table_id__in=created).values_list("bot__name", flat=True))
    assert seated == {"l0", "l2"}


# --- the API and the pages say so; hostile entries --------------------------------------


@pytest.mark.django_db
def test_the_api_and_the_page_state_verified_entry(organiser) -> None:
    client = api(organiser)
    created = client.post("/api/v1/tournaments/", {"name": "V", "slug": "v", "format": "round_robin", "verified_entry": True}, format="json")
    assert created.status_code == 201 and created.json()["verified_entry"] is True
    assert api(None).get("/api/v1/tournaments/v/").json()["verified_entry"] is True
    assert api(None).get("/api/v1/tournaments/").json()["results"][0]["verified_entry"] is True
    page = Client().get("/tournaments/v/").content.decode()
    assert 'id="verified-entry"' in page and "Only bots of verified accounts may enter" in page
    plain = client.post("/api/v1/tournaments/", {"name": "P", "slug": "p", "format": "round_robin"}, format="json").json()
    assert plain["verified_entry"] is False
    assert 'id="verified-entry"' not in Client().get("/tournaments/p/").content.decode()


@pytest.mark.django_db
def test_an_unverified_user_cannot_enter_by_any_door(organiser, staff) -> None:
    mallory, = people(1, "mallory")
    bot, _ = bot_create(owner=mallory, name="mallory-bot")
    verified_cup(organiser, name="Ladder", slug="ladder", format="ladder", seats_per_table=2)
    verified_cup(organiser, name="Cup", slug="cup")
    me = api(mallory)
    # The ladder's own door (bot owners join ladders themselves).
    joined = me.post("/api/v1/tournaments/ladder/join/", {"bot": "mallory-bot"}, format="json")
    assert joined.status_code == 400 and "admits only verified accounts" in joined.json()["bot"][0]
    # The organiser's doors are closed to her anyway.
    assert me.post("/api/v1/tournaments/cup/entrants/", {"bot": "mallory-bot"}, format="json").status_code == 403
    web = Client()
    web.force_login(mallory)
    assert web.post("/organise/new/", {"name": "Mine", "format": "round_robin"}).status_code == 403
    # She cannot approve herself, by API or by the admin.
    assert me.post(f"/api/v1/accounts/{mallory.username}/approval/").status_code == 403
    assert web.post("/admin/auth/user/", {"action": "approve_for_verified_entry", "_selected_action": [mallory.pk]}).status_code == 302
    # Nor make the account page say so: a hand-made form field changes nothing.
    web.post("/me/account/", {"action": "approve", "email": mallory.email, "verified": "1"})
    assert not verification.user_verified(user=mallory)
    # Her organiser friend cannot add her bot through the API or the site's form either.
    friend = api(organiser)
    added = friend.post("/api/v1/tournaments/cup/entrants/", {"bot": "mallory-bot"}, format="json")
    assert added.status_code == 400 and "mallory-bot" in added.json()["bot"][0]
    org_web = Client()
    org_web.force_login(organiser)
    form = org_web.post("/organise/new/", {
        "name": "Sneaky", "format": "round_robin", "preset": "south", "seats_per_table": 2, "deal_format": "field",
        "duplicate_sets": 1, "cycles": 1, "advance_per_table": 1, "move_time_ms": 1000, "time_bank_ms": 10000,
        "verified_entry": "on", "entrants": [bot.pk], "house_bots": ["random"],
    })
    assert form.status_code == 200 and "admits only verified accounts" in form.content.decode()
    assert not Tournament.objects.filter(name="Sneaky").exists()  # all or nothing
    assert not Entrant.objects.filter(bot=bot).exists()


@pytest.mark.django_db
def test_staff_approve_and_withdraw_through_the_api_and_the_admin(staff) -> None:
    alice, = people(1, "alice")
    client = api(staff)
    url = f"/api/v1/accounts/{alice.username}/approval/"
    assert client.get(url).json() == {"username": "alice0", "verified": False, "verified_by": None}
    assert client.post(url).json()["verified_by"] == "approved"
    assert api(alice).get("/api/v1/account/").json() == {"username": "alice0", "verified": True, "verified_by": "approved"}
    assert client.delete(url).json()["verified"] is False
    assert client.get("/api/v1/accounts/nobody/approval/").status_code == 404
    assert api(None).post(url).status_code in (401, 403)
    # The admin's action (a superuser: the admin's own permissions apply).
    root = User.objects.create_superuser("root", password=PASSWORD)
    web = Client()
    web.force_login(root)
    done = web.post("/admin/auth/user/", {"action": "approve_for_verified_entry", "_selected_action": [alice.pk]}, follow=True)
    assert done.status_code == 200 and "approved for verified entry" in done.content.decode()
    assert verification.user_verification(user=alice) == "approved"
    listing = web.get("/admin/auth/user/").content.decode()
    assert "verified entry" in listing


# --- e-mail confirmation -----------------------------------------------------------------


def sign_up(client: Client, username: str, email: str, ip: str = "203.0.113.9"):
    return client.post("/accounts/signup/", {"username": username, "email": email, "password1": PASSWORD, "password2": PASSWORD},
                       REMOTE_ADDR=ip)


@pytest.mark.django_db
def test_sign_up_sends_a_link_that_confirms_once(django_capture_on_commit_callbacks) -> None:
    client = Client()
    with django_capture_on_commit_callbacks(execute=True):
        assert sign_up(client, "ann", "Ann@Example.org").status_code == 302
    assert len(mail.outbox) == 1 and mail.outbox[0].to == ["Ann@example.org"]  # the domain normalised by Django
    link = confirmation_link()
    ann = User.objects.get(username="ann")
    assert not verification.user_verified(user=ann)
    # Opening the link (a mail scanner, a preview) confirms nothing: it shows a button.
    shown = client.get(link)
    assert shown.status_code == 200 and "Confirm Ann@example.org" in shown.content.decode()
    assert shown["Cache-Control"] == "no-store" and shown["Referrer-Policy"] == "no-referrer"
    assert not verification.user_verified(user=ann)
    confirmed = client.post(link, follow=True)
    assert "is confirmed" in confirmed.content.decode()
    assert verification.user_verification(user=ann) == "email"
    # Single use: the same link again is refused, by GET and POST.
    again = Client().post(link)
    assert again.status_code == 400 and 'id="link-invalid"' in again.content.decode()
    assert Client().get(link).status_code == 400


@pytest.mark.django_db
def test_a_link_is_bound_to_its_user_and_address_and_expires(settings, monkeypatch) -> None:
    ann, bob = people(2)
    uid, token = verification.email_confirmation_token(user=ann)
    bob_uid, _ = verification.email_confirmation_token(user=bob)
    # Another user's id with ann's token: invalid.
    assert Client().post(f"/accounts/confirm/{bob_uid}/{token}/").status_code == 400
    # Tampered tokens and ids: invalid, never an error page.
    for bad in (f"{uid}/{token[:-1]}x", f"{uid}/nonsense", f"!!!/{token}", f"{uid}/{token}-1", f"{uid}/zzzzzzzzzzzzz-abc"):
        assert Client().post(f"/accounts/confirm/{bad}/").status_code in (400, 404)
    assert not verification.user_verified(user=bob) and not verification.user_verified(user=ann)
    # Expired: a link older than the timeout is refused.
    settings.TIENLEN_EMAIL_CONFIRM_TIMEOUT_S = 60
    now = verification.tokens._now()
    monkeypatch.setattr(verification.tokens, "_now", lambda: now.replace(year=now.year + 1))
    assert Client().post(f"/accounts/confirm/{uid}/{token}/").status_code == 400
    monkeypatch.undo()
    # Bound to the address: once it changes, the old link is dead and the new one works.
    verification.user_email_change(user=ann, email="ann.new@example.org")
    assert Client().post(f"/accounts/confirm/{uid}/{token}/").status_code == 400
    uid2, token2 = verification.email_confirmation_token(user=ann)
    assert Client().post(f"/accounts/confirm/{uid2}/{token2}/").status_code == 302
    assert verification.user_verification(user=User.objects.get(pk=ann.pk)) == "email"


@pytest.mark.django_db
def test_changing_the_address_needs_a_new_confirmation(django_capture_on_commit_callbacks) -> None:
    ann, = people(1, "ann")
    uid, token = verification.email_confirmation_token(user=ann)
    verification.email_confirm(uidb64=uid, token=token)
    assert verification.user_verification(user=ann) == "email"
    client = Client()
    client.force_login(ann)
    assert 'id="verified"' in client.get("/me/account/").content.decode()
    with django_capture_on_commit_callbacks(execute=True):
        changed = client.post("/me/account/", {"action": "change", "email": "other@example.org"}, follow=True)
    assert "open the link we sent to other@example.org" in changed.content.decode()
    ann.refresh_from_db()
    assert ann.email == "other@example.org" and not verification.user_verified(user=ann)
    assert 'id="not-verified"' in client.get("/me/bots/").content.decode()
    # Changing back to the confirmed address does not bring the old link back to life.
    verification.user_email_change(user=ann, email="ann0@example.org")
    assert verification.email_confirm(uidb64=uid, token=token) is None
    assert not verification.user_verified(user=User.objects.get(pk=ann.pk))
    # The new address's link, asked for again, confirms it.
    with django_capture_on_commit_callbacks(execute=True):
        client.post("/me/account/", {"action": "resend"})
    assert client.post(confirmation_link()).status_code == 302
    assert verification.user_verification(user=User.objects.get(pk=ann.pk)) == "email"
    # An admin editing the address has the same effect: the rule compares the addresses.
    User.objects.filter(pk=ann.pk).update(email="edited@example.org")
    assert not verification.user_verified(user=User.objects.get(pk=ann.pk))


@pytest.mark.django_db
def test_one_address_confirms_one_account(django_capture_on_commit_callbacks) -> None:
    ann, bob = people(2)
    uid, token = verification.email_confirmation_token(user=ann)
    verification.email_confirm(uidb64=uid, token=token)
    bob.email = "P0@example.org"  # ann's address, another case: set behind the service's back
    bob.save()
    uid_b, token_b = verification.email_confirmation_token(user=bob)
    refused = Client().post(f"/accounts/confirm/{uid_b}/{token_b}/")
    assert refused.status_code == 409 and not verification.user_verified(user=bob)
    taken = sign_up(Client(), "carl", "p0@example.org")
    assert taken.status_code == 200 and "already confirms another account" in taken.content.decode()
    client = Client()
    client.force_login(bob)
    assert "already confirms another account" in client.post("/me/account/", {"action": "change", "email": "p0@EXAMPLE.org"}).content.decode()


@pytest.mark.django_db
def test_the_sign_up_limit_still_holds_and_confirmation_mails_are_limited(settings, django_capture_on_commit_callbacks) -> None:
    settings.TIENLEN_SIGNUP_RATE = "2/h"
    settings.TIENLEN_EMAIL_RATE = "2/h"
    with django_capture_on_commit_callbacks(execute=True):
        assert sign_up(Client(), "u1", "u1@example.org").status_code == 302
        assert sign_up(Client(), "u2", "u2@example.org").status_code == 302
        refused = sign_up(Client(), "u3", "u3@example.org")
    assert refused.status_code == 429 and not User.objects.filter(username="u3").exists()
    assert [m.to for m in mail.outbox] == [["u1@example.org"], ["u2@example.org"]]  # none for the refused one
    client = Client()
    client.force_login(User.objects.get(username="u1"))
    with django_capture_on_commit_callbacks(execute=True):
        assert client.post("/me/account/", {"action": "resend"}).status_code == 302
        assert client.post("/me/account/", {"action": "resend"}).status_code == 302
        limited = client.post("/me/account/", {"action": "resend"})
    assert limited.status_code == 429 and len(mail.outbox) == 4
