"""The end-to-end tests start real processes (referee, Celery worker, bots, web) that must
see the test database: on SQLite it therefore lives in a file, not in memory."""

from __future__ import annotations

import tempfile
from pathlib import Path

from django.conf import settings

_default = settings.DATABASES["default"]
if _default["ENGINE"] == "django.db.backends.sqlite3":
    _default.setdefault("TEST", {})
    if not _default["TEST"].get("NAME"):
        _default["TEST"]["NAME"] = str(
            Path(tempfile.mkdtemp(prefix="tienlen-e2e-")) / "test.sqlite3"
        )

from tests.e2e.stack import marker  # noqa: E402,F401  (the one `marker` fixture, for every e2e test)
