"""The API's OpenAPI schema class: what Swagger UI shows for each operation.

drf-spectacular lists every authentication method on every operation, with an "optional"
entry for those anyone may call, so Swagger UI drew a lock on the public reads too. Here
an operation anyone may call (a read under AllowAny or IsAuthenticatedOrReadOnly) has no
security requirement at all: no lock; the others keep theirs (the token or the session)."""

from __future__ import annotations

from drf_spectacular.openapi import AutoSchema


class PublicAwareAutoSchema(AutoSchema):
    def get_auth(self) -> list[dict]:
        auths = super().get_auth()
        if {} in auths:  # drf-spectacular's mark of an operation that needs no credentials
            return []
        return auths
