"""Becoming an organiser and getting an API token: the token page, HTTP basic
authentication on the token endpoint, and the `create_api_token` / `make_organiser`
commands. Every token must work against the API as its user, and stop once revoked."""

from __future__ import annotations

import base64
import io
import re

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command
from rest_framework.test import APIClient

from tests.web.factories import make_user
from tournaments.models import ApiToken

pytestmark = pytest.mark.django_db

PASSWORD = "pw-for-tests-123"


def api(key: str | None = None, *, basic: tuple[str, str] | None = None) -> APIClient:
    client = APIClient()
    if key:
        client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    if basic:
        raw = base64.b64encode(f"{basic[0]}:{basic[1]}".encode()).decode()
        client.credentials(HTTP_AUTHORIZATION=f"Basic {raw}")
    return client


def test_the_token_page_needs_a_signed_in_user(client):
    response = client.get("/me/tokens/")
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")


def test_a_token_made_on_the_page_is_shown_once_and_works(client):
    alice = make_user("alice")
    client.force_login(alice)
    response = client.post("/me/tokens/", {"name": "laptop script"})
    assert response.status_code == 200
    assert response["Cache-Control"] == "no-store"
    html = response.content.decode()
    key = re.search(r'<code id="api-token">(tla_[^<]+)</code>', html).group(1)
    assert "shown only this once" in html
    assert api(key).get("/api/v1/tokens/").json()["results"][0]["name"] == "laptop script"
    # Afterwards the page lists it by prefix only.
    again = client.get("/me/tokens/").content.decode()
    assert key not in again
    assert ApiToken.objects.get(user=alice).prefix in again and "laptop script" in again


def test_revoking_on_the_page_stops_the_token_and_nobody_revokes_anothers(client):
    from tournaments.services.accounts import api_token_create

    alice, bob = make_user("alice"), make_user("bob")
    token, key = api_token_create(user=alice, name="ci")
    client.force_login(bob)
    assert client.post(f"/me/tokens/{token.id}/revoke/").status_code == 404
    assert api(key).get("/api/v1/tokens/").status_code == 200  # still works
    client.force_login(alice)
    assert client.get(f"/me/tokens/{token.id}/revoke/").status_code == 405  # a POST only
    response = client.post(f"/me/tokens/{token.id}/revoke/", follow=True)
    assert "revoked: it no longer works" in response.content.decode()
    assert api(key).get("/api/v1/tokens/").status_code == 401


def test_a_script_gets_its_first_token_with_basic_authentication():
    make_user("alice")
    response = api(basic=("alice", PASSWORD)).post("/api/v1/tokens/", {"name": "ci"}, format="json")
    assert response.status_code == 201
    key = response.json()["token"]
    assert api(key).get("/api/v1/tokens/").json()["count"] == 1
    wrong = api(basic=("alice", "not-the-password")).post("/api/v1/tokens/", {"name": "x"}, format="json")
    assert wrong.status_code == 401
    # Basic authentication is for the token endpoint only: elsewhere use the token.
    elsewhere = api(basic=("alice", PASSWORD)).post("/api/v1/bots/", {"name": "viabasic"}, format="json")
    assert elsewhere.status_code in (401, 403)


def test_an_anonymous_browser_is_not_asked_for_a_basic_auth_password(client):
    response = client.get("/api/v1/tokens/", HTTP_ACCEPT="application/json")
    assert response.status_code == 401
    assert response["WWW-Authenticate"] == "Token"


def test_create_api_token_prints_a_working_token_for_an_organiser():
    organiser = make_user("olga")
    call_command("make_organiser", "olga", stdout=io.StringIO())
    out, err = io.StringIO(), io.StringIO()
    call_command("create_api_token", "olga", "--name", "cron", stdout=out, stderr=err)
    key = out.getvalue().strip()
    assert key.startswith("tla_") and "\n" not in key  # the token alone, for $(...)
    assert "(organiser)" in err.getvalue()
    created = api(key).post(
        "/api/v1/tournaments/", {"name": "Night cup", "format": "round_robin"}, format="json"
    )
    assert created.status_code == 201, created.json()
    assert created.json()["organiser"] == organiser.username


def test_create_api_token_refuses_unknown_and_inactive_users():
    with pytest.raises(CommandError, match="no user named 'ghost'.*createsuperuser"):
        call_command("create_api_token", "ghost")
    make_user("sleepy")
    get_user_model().objects.filter(username="sleepy").update(is_active=False)
    with pytest.raises(CommandError, match="inactive"):
        call_command("create_api_token", "sleepy")
    assert not ApiToken.objects.exists()


def test_make_organiser_grants_and_revokes_the_permission(client):
    from tournaments.services.accounts import user_is_organiser

    make_user("olga")
    call_command("make_organiser", "olga", stdout=io.StringIO())
    olga = get_user_model().objects.get(username="olga")
    assert user_is_organiser(user=olga)
    client.force_login(olga)
    assert '<a href="/organise/">Organise</a>' in client.get("/").content.decode()  # not staff
    call_command("make_organiser", "olga", "--revoke", stdout=io.StringIO())
    olga = olga.__class__.objects.get(pk=olga.pk)  # permissions are cached per instance
    assert not user_is_organiser(user=olga)
    with pytest.raises(CommandError, match="no user named"):
        call_command("make_organiser", "ghost")
