"""Swagger UI draws a lock only on what needs credentials: the public reads carry no
security requirement in the OpenAPI schema, the writes and private reads keep theirs."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

pytestmark = pytest.mark.django_db


def test_public_reads_have_no_lock_and_writes_keep_theirs() -> None:
    schema = APIClient().get("/api/v1/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    paths = schema["paths"]
    for path in ("/api/v1/tournaments/", "/api/v1/tournaments/{slug}/standings/", "/api/v1/games/{game_id}/",
                 "/api/v1/tournaments/{slug}/seasons/", "/api/v1/pools/"):
        assert "security" not in paths[path]["get"], path
    post = paths["/api/v1/tournaments/"]["post"]["security"]
    assert {"apiToken": []} in post and {} not in post
    assert paths["/api/v1/tokens/"]["get"]["security"]  # a user's own tokens: signed in only
    assert "apiToken" in schema["components"]["securitySchemes"]
