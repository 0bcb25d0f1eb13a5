"""What some tests need beyond Python, in one place: PostgreSQL, Redis, Debian's chromium,
docker-compose and hadolint.

Without it a test skips and says what to install, so a laptop without servers still runs
the rest. With `TIENLEN_REQUIRE_SERVERS` set (CI sets it in `.ci/run`, which starts
PostgreSQL and Redis; `make test` installs chromium and docker-compose) the same test
fails instead: a green CI run never hides a test that did not run.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import NoReturn

import pytest

# Debian's chromium, or the one TIENLEN_CHROMIUM names (another distribution's, Playwright's).
CHROMIUM = (os.environ.get("TIENLEN_CHROMIUM") or shutil.which("chromium")
            or "/usr/bin/chromium")
_VENV_BIN = Path(__file__).resolve().parent.parent / ".venv" / "bin"


def servers_required() -> bool:
    return bool(os.environ.get("TIENLEN_REQUIRE_SERVERS"))


def unavailable(reason: str) -> NoReturn:
    """Skip with `reason`, or fail with it when TIENLEN_REQUIRE_SERVERS is set."""
    if servers_required():
        pytest.fail(f"{reason} (TIENLEN_REQUIRE_SERVERS is set: this test must run)", pytrace=False)
    pytest.skip(f"{reason}; set TIENLEN_REQUIRE_SERVERS to fail instead")


def need_postgresql(why: str) -> None:
    """The test database must be PostgreSQL (DATABASE_URL), e.g. for row locks or several
    writers at once (SQLite's in-memory test database serialises or locks them)."""
    from django.db import connection

    if connection.vendor != "postgresql":
        unavailable(f"needs PostgreSQL (DATABASE_URL): {why}")


def need_chromium() -> str:
    """Debian's chromium, which the browser tests drive through Playwright. Missing, every
    browser test skips with the same reason, so pytest's summary says it in one line."""
    if not (Path(CHROMIUM).exists() or shutil.which(CHROMIUM)):
        unavailable(f"no chromium at {CHROMIUM}: the browser tests need it "
                    "(make chromium, or TIENLEN_CHROMIUM=/path/to/chromium)")
    return CHROMIUM


def need_tool(name: str, install: str) -> str:
    """A command-line tool on PATH or in the project's .venv/bin."""
    found = shutil.which(name) or (str(_VENV_BIN / name) if (_VENV_BIN / name).exists() else None)
    if found is None:
        unavailable(f"{name} is not installed ({install})")
    return found
