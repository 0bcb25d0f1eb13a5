"""A test that needs a server or a tool skips on a laptop and fails in CI (tests/needs.py)."""

from __future__ import annotations

import pytest

from tests.needs import need_postgresql, need_tool, unavailable


def test_without_the_variable_a_missing_need_skips(monkeypatch) -> None:
    monkeypatch.delenv("TIENLEN_REQUIRE_SERVERS", raising=False)
    with pytest.raises(pytest.skip.Exception, match="no-such-tool-xyz is not installed"):
        need_tool("no-such-tool-xyz", "nowhere")


def test_with_the_variable_a_missing_need_fails(monkeypatch) -> None:
    monkeypatch.setenv("TIENLEN_REQUIRE_SERVERS", "1")
    with pytest.raises(pytest.fail.Exception, match="Redis is down .*this test must run"):
        unavailable("Redis is down")
    with pytest.raises(pytest.fail.Exception, match="no-such-tool-xyz is not installed"):
        need_tool("no-such-tool-xyz", "nowhere")


@pytest.mark.django_db
def test_the_database_check_reads_the_test_database(monkeypatch) -> None:
    from django.db import connection

    monkeypatch.setenv("TIENLEN_REQUIRE_SERVERS", "1")
    if connection.vendor == "postgresql":
        need_postgresql("row locks")  # passes quietly
    else:
        with pytest.raises(pytest.fail.Exception, match="needs PostgreSQL"):
            need_postgresql("row locks")
