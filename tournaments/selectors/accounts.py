"""Accounts: a user's API tokens, an account by username. Private to the user (or staff):
the views check who asks; nothing here is public."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.db.models import QuerySet

from tournaments.models import ApiToken


def api_tokens(*, user: Any) -> QuerySet[ApiToken]:
    """The user's API tokens, newest first."""
    return ApiToken.objects.filter(user=user).order_by("-created_at")


def users() -> QuerySet[Any]:
    """Accounts, for a lookup by username (staff views)."""
    return get_user_model().objects.all()
