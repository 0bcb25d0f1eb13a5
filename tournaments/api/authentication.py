"""`Authorization: Token tla_...` authentication against hashed API tokens."""

from __future__ import annotations

from django.utils import timezone
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import authentication, exceptions

from tournaments.models import ApiToken
from tournaments.tokens import token_hash


class ApiTokenAuthentication(authentication.BaseAuthentication):
    keyword = "Token"

    def authenticate(self, request):
        header = authentication.get_authorization_header(request).split()
        if not header or header[0].lower() not in (b"token", b"bearer"):
            return None
        if len(header) != 2:
            raise exceptions.AuthenticationFailed("Authorization header must be 'Token <key>'.")
        try:
            key = header[1].decode("ascii")
        except UnicodeDecodeError as exc:
            raise exceptions.AuthenticationFailed("Token contains invalid characters.") from exc
        token = (
            ApiToken.objects.select_related("user")
            .filter(key_hash=token_hash(key), revoked_at__isnull=True)
            .first()
        )
        if token is None or not token.user.is_active:
            raise exceptions.AuthenticationFailed("Invalid or revoked token.")
        ApiToken.objects.filter(pk=token.pk).update(last_used_at=timezone.now())
        return token.user, token

    def authenticate_header(self, request) -> str:
        return self.keyword


class PasswordAuthentication(authentication.BasicAuthentication):
    """HTTP basic authentication (the token endpoint only), answered like the site's sign-in
    when the sign-in throttle locks the account out.

    The throttle (django-axes, see settings) marks the request it was given as locked out,
    and its middleware turns that mark into a 429. DRF hands `authenticate()` its own request
    wrapper, so the mark would stay there and the client would see a plain 401; it is copied
    to the underlying request here.
    """

    def authenticate_credentials(self, userid, password, request=None):
        try:
            return super().authenticate_credentials(userid, password, request)
        except exceptions.AuthenticationFailed:
            if request is not None and getattr(request, "axes_locked_out", False):
                request._request.axes_locked_out = True
                request._request.axes_credentials = getattr(request, "axes_credentials", None)
            raise


class ApiTokenScheme(OpenApiAuthenticationExtension):
    target_class = "tournaments.api.authentication.ApiTokenAuthentication"
    name = "apiToken"

    def get_security_definition(self, auto_schema):
        return {
            "type": "apiKey",
            "in": "header",
            "name": "Authorization",
            "description": "`Token tla_...` (create one with POST /api/v1/tokens/).",
        }


class PasswordScheme(OpenApiAuthenticationExtension):
    target_class = "tournaments.api.authentication.PasswordAuthentication"
    name = "password"

    def get_security_definition(self, auto_schema):
        return {
            "type": "http",
            "scheme": "basic",
            "description": "Username and password: only `POST /api/v1/tokens/` (get a first token).",
        }
