"""Logging as it was before a block: for code under test that configures logging for its
process (a Celery worker's `app.log.setup`, Django's `setup()` with LOGGING, a referee's
`main`). Run inside the test process, each would leave a handler bound to that test's
capture stream, and later log lines would fail on the closed stream; tests/conftest.py
fails the test that leaves one."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator


@contextlib.contextmanager
def preserved_logging() -> Iterator[None]:
    manager = logging.Logger.manager
    loggers = [logging.getLogger()] + [
        logger for logger in list(manager.loggerDict.values()) if isinstance(logger, logging.Logger)
    ]
    saved = {id(lg): (lg, lg.handlers[:], lg.level, lg.propagate, lg.disabled) for lg in loggers}
    disable = manager.disable
    try:
        yield
    finally:
        for lg, handlers, level, propagate, disabled in saved.values():
            lg.handlers[:] = handlers
            lg.setLevel(level)
            lg.propagate, lg.disabled = propagate, disabled
        # Loggers made inside the block keep their settings but lose handlers added there.
        for lg in list(manager.loggerDict.values()):
            if isinstance(lg, logging.Logger) and id(lg) not in saved:
                lg.handlers[:] = []
        logging.disable(disable)
