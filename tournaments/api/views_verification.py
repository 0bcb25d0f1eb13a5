"""API of verified entry: your own account's status, and staff approving accounts
(tournaments.services.verification has the rule; docs/organiser-guide.md, "Verified entry")."""

from __future__ import annotations

import re

from django.http import Http404
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework import permissions, serializers
from rest_framework.response import Response

from tournaments.api.views import ServiceAPIView
from tournaments.selectors.accounts import users
from tournaments.services import verification


class VerificationOutput(serializers.Serializer):
    username = serializers.CharField()
    verified = serializers.BooleanField(help_text="Bots of this account may enter tournaments with verified entry.")
    verified_by = serializers.CharField(
        allow_null=True,
        help_text="How: 'staff' (a staff account), 'approved' (approved by staff), 'email' (its "
        "current address is confirmed); null when not verified.",
    )


# Django's UnicodeUsernameValidator, with its length limit.
_USERNAME = re.compile(r"[\w.@+-]{1,150}")


def _status(user) -> dict:
    how = verification.user_verification(user=user)
    return {"username": user.username, "verified": bool(how), "verified_by": how or None}


class IsStaff(permissions.BasePermission):
    message = "Only staff can approve accounts."

    def has_permission(self, request, view) -> bool:
        return bool(request.user and request.user.is_authenticated and request.user.is_staff)


class AccountView(ServiceAPIView):
    permission_classes = [permissions.IsAuthenticated]

    @extend_schema(responses=VerificationOutput, summary="Your account: whether it is verified for verified entry")
    def get(self, request):
        return Response(_status(request.user))


class AccountApprovalView(ServiceAPIView):
    permission_classes = [permissions.IsAuthenticated, IsStaff]

    def _user(self, username: str):
        # Only what can be a username reaches the query: PostgreSQL refuses a NUL in a
        # string (a URL's %00 was a 500), and nothing else can name an account anyway.
        if not _USERNAME.fullmatch(username):
            raise Http404("No such account.")
        return get_object_or_404(users(), username=username)

    @extend_schema(responses=VerificationOutput, summary="An account's verification (staff)")
    def get(self, request, username: str):
        return Response(_status(self._user(username)))

    @extend_schema(request=None, responses=VerificationOutput, summary="Approve an account for verified entry (staff)")
    def post(self, request, username: str):
        user = self._user(username)
        verification.account_approve(user=user, by=request.user)
        return Response(_status(user))

    @extend_schema(
        request=None, responses=VerificationOutput,
        summary="Withdraw an account's verification: the approval and its e-mail confirmation (staff)",
    )
    def delete(self, request, username: str):
        user = self._user(username)
        verification.account_approval_revoke(user=user, by=request.user)
        return Response(_status(user))
