"""Structured logs: one JSON object per line, with the event's fields as keys.

Tables and sessions log with `extra={...}`; this formatter lifts those fields to the top
level so the logs can be filtered by table_id, bot_id or event. Tokens are never passed
to a logger anywhere in the referee.
"""

from __future__ import annotations

import contextlib
import json
import logging
import sys
import time
from collections.abc import Iterator

_STANDARD = set(vars(logging.makeLogRecord({}))) | {"message", "asctime"}


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        data = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
            + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        for key, value in vars(record).items():
            if key not in _STANDARD and not key.startswith("_"):
                data[key] = value
        if record.exc_info:
            data["exception"] = self.formatException(record.exc_info)
        return json.dumps(data, default=str, ensure_ascii=False)


def configure(level: str = "info", fmt: str = "json") -> None:
    handler = logging.StreamHandler(sys.stderr)
    if fmt == "json":
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s %(message)s"))
    root = logging.getLogger("referee_service")
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    root.propagate = False


@contextlib.contextmanager
def configured(level: str = "info", fmt: str = "json") -> Iterator[None]:
    """`configure` for the life of the block, then the referee's logger as it was: a
    referee run inside another process (a test, an embedding program) must not leave its
    handler bound to a stream that closes after it (a later log line then fails with
    "I/O operation on closed file") nor stop the logger propagating to the host's handlers."""
    root = logging.getLogger("referee_service")
    saved = (root.handlers[:], root.level, root.propagate)
    configure(level, fmt)
    try:
        yield
    finally:
        root.handlers[:], root.propagate = saved[0], saved[2]
        root.setLevel(saved[1])
