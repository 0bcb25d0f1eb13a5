"""Sign-in throttling (django-axes) and the sign-up check (once 25 wrong passwords in a
row, then the right one worked; sign-up had no limit)."""

from __future__ import annotations

import base64
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.utils import timezone

from tests.web.factories import make_user

pytestmark = pytest.mark.django_db

PASSWORD = "pw-for-tests-123"
LIMIT = 5


def sign_in(client: Client, username: str, password: str, ip: str = "203.0.113.7"):
    return client.post(
        "/accounts/login/", {"username": username, "password": password}, REMOTE_ADDR=ip
    )


def signed_in(client: Client) -> bool:
    return "_auth_user_id" in client.session


@pytest.fixture(autouse=True)
def _limits(settings):
    settings.AXES_FAILURE_LIMIT = LIMIT
    settings.AXES_COOLOFF_TIME = timedelta(minutes=15)


def test_the_right_password_is_refused_after_too_many_wrong_ones(client):
    make_user("alice")
    for _ in range(LIMIT - 1):
        assert sign_in(client, "alice", "guess").status_code == 200  # the form again, with an error
    locked = sign_in(client, "alice", "guess")
    assert locked.status_code == 429
    right = sign_in(client, "alice", PASSWORD)
    assert right.status_code == 429
    assert not signed_in(client)
    html = right.content.decode()
    assert "Sign-in paused" in html and "15 minutes" in html
    assert right["Retry-After"] == str(15 * 60)


def test_the_lock_ends_after_the_cool_off(client):
    from axes.models import AccessAttempt

    make_user("alice")
    for _ in range(LIMIT):
        sign_in(client, "alice", "guess")
    assert sign_in(client, "alice", PASSWORD).status_code == 429
    AccessAttempt.objects.update(attempt_time=timezone.now() - timedelta(minutes=16))
    response = sign_in(client, "alice", PASSWORD)
    assert response.status_code == 302 and signed_in(client)


def test_the_lock_is_per_account_and_address(client):
    """Nobody locks a user out from elsewhere, and one locked account leaves the others alone."""
    make_user("alice")
    make_user("bob")
    for _ in range(LIMIT):
        sign_in(client, "alice", "guess", ip="203.0.113.7")
    assert sign_in(Client(), "alice", PASSWORD, ip="198.51.100.1").status_code == 302
    assert sign_in(Client(), "bob", PASSWORD, ip="203.0.113.7").status_code == 302


def test_a_successful_sign_in_resets_the_count(client):
    make_user("alice")
    for _ in range(LIMIT - 1):
        sign_in(client, "alice", "typo")
    assert sign_in(client, "alice", PASSWORD).status_code == 302
    client.post("/accounts/logout/")
    for _ in range(LIMIT - 1):
        sign_in(client, "alice", "typo")
    assert sign_in(client, "alice", PASSWORD).status_code == 302


def test_the_admin_sign_in_is_throttled_too(client):
    make_user("root", staff=True)
    for _ in range(LIMIT):
        client.post("/admin/login/", {"username": "root", "password": "guess"}, REMOTE_ADDR="203.0.113.7")
    response = client.post("/admin/login/", {"username": "root", "password": PASSWORD}, REMOTE_ADDR="203.0.113.7")
    assert response.status_code == 429


def test_basic_auth_on_the_token_endpoint_is_throttled_with_a_json_answer(client):
    make_user("alice")

    def post(password: str):
        raw = base64.b64encode(f"alice:{password}".encode()).decode()
        return client.post("/api/v1/tokens/", {"name": "ci"}, HTTP_AUTHORIZATION=f"Basic {raw}",
                           REMOTE_ADDR="203.0.113.7")

    for _ in range(LIMIT - 1):
        assert post("guess").status_code == 401
    assert post("guess").status_code == 429
    locked = post(PASSWORD)
    assert locked.status_code == 429
    assert "Too many failed sign-ins" in locked.json()["detail"]
    assert not get_user_model().objects.get(username="alice").api_tokens.exists()


def signup(client: Client, username: str, ip: str = "203.0.113.7"):
    return client.post(
        "/accounts/signup/",
        {"username": username, "password1": "a-long-pass-phrase-42", "password2": "a-long-pass-phrase-42"},
        REMOTE_ADDR=ip,
    )


def test_one_address_cannot_make_accounts_in_bulk(settings):
    settings.TIENLEN_SIGNUP_RATE = "3/h"
    for i in range(3):
        assert signup(Client(), f"user{i}").status_code == 302
    refused = signup(Client(), "user3")
    assert refused.status_code == 429
    assert "Too many accounts were created from your address" in refused.content.decode()
    assert 'value="user3"' in refused.content.decode()  # the typed name is kept
    assert not get_user_model().objects.filter(username="user3").exists()
    assert signup(Client(), "user4", ip="198.51.100.1").status_code == 302  # another address


def test_sign_up_refuses_weak_passwords(client):
    response = client.post(
        "/accounts/signup/", {"username": "weak", "password1": "12345678", "password2": "12345678"}
    )
    assert response.status_code == 200
    assert "This password is too common." in response.content.decode()
    assert not get_user_model().objects.filter(username="weak").exists()
