"""A referee as the platform runs one: bots' tokens checked in the database, the site's
settings pointing at it (the worker's tables go there). For the tests that play tables
through Celery workers."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

ORGANIZER_TOKEN = "organizer-secret-for-tests"


@contextmanager
def platform_referee(settings: Any) -> Iterator[Any]:
    """The running referee (a RefereeThread); stopped on exit. `settings`: pytest-django's
    fixture, which restores REFEREE_TARGET and REFEREE_ORGANIZER_TOKEN after the test."""
    from referee_service.server import RefereeThread
    from tournaments.token_store import DjangoTokenStore

    thread = RefereeThread(DjangoTokenStore(), organizer_token=ORGANIZER_TOKEN).start()
    settings.REFEREE_TARGET = thread.target
    settings.REFEREE_ORGANIZER_TOKEN = ORGANIZER_TOKEN
    try:
        yield thread
    finally:
        thread.stop()
