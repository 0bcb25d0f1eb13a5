"""Helpers of the end-to-end tests: the environment of the processes they start, and a
way to find (and finally kill) every process a test started, grandchildren included."""

from __future__ import annotations

import contextlib
import os
import signal
import uuid
from collections.abc import Iterator, Mapping
from pathlib import Path
from urllib.parse import quote

import pytest

MARKER_VARIABLE = "TIENLEN_E2E_MARKER"


def database_url(settings_dict: Mapping[str, object]) -> str:
    """The URL of the database the test runs on (pytest-django's test database)."""
    engine = str(settings_dict["ENGINE"])
    name = str(settings_dict["NAME"])
    if engine.endswith("sqlite3"):
        return f"sqlite:///{Path(name).resolve()}"
    if engine.endswith("postgresql"):
        user = quote(str(settings_dict.get("USER") or ""))
        password = quote(str(settings_dict.get("PASSWORD") or ""))
        auth = f"{user}:{password}@" if password else (f"{user}@" if user else "")
        host = settings_dict.get("HOST") or "127.0.0.1"
        port = settings_dict.get("PORT") or 5432
        return f"postgres://{auth}{host}:{port}/{name}"
    raise ValueError(f"no URL form for database engine {engine}")


def new_marker() -> str:
    return uuid.uuid4().hex


@pytest.fixture
def marker() -> Iterator[str]:
    """A fresh marker for the processes a test starts; when the test ends, whatever its
    outcome, every process carrying it is killed (a killed soak's PostgreSQL instance too).
    The e2e and hosted conftests expose it."""
    value = new_marker()
    yield value
    kill_marked(value)


def marked_pids(marker: str) -> list[int]:
    """Processes whose environment carries `marker`: everything a test started."""
    needle = f"{MARKER_VARIABLE}={marker}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            environ = (entry / "environ").read_bytes()
        except OSError:
            continue
        if needle in environ.split(b"\0"):
            found.append(int(entry.name))
    return found


def kill_marked(marker: str) -> list[int]:
    """SIGKILL every process carrying `marker`; returns the pids that were still alive."""
    pids = marked_pids(marker)
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    return pids


def broker_clear_stale(url: str) -> None:
    """Drop messages that earlier runs left in a Redis broker (a killed worker's unacked
    task is restored into the queue later, and a worker of this test would take it)."""
    if not url.startswith(("redis://", "rediss://")):
        return
    import redis

    client = redis.Redis.from_url(url)
    stale = [key for key in client.scan_iter(match="celery*")]
    client.delete("unacked", "unacked_index", "unacked_mutex", *stale)


def pg_dump_and_restore(settings_dict: Mapping[str, object], dump: Path, target: str) -> str:
    """The backup procedure of docs/deployment.md: `pg_dump -Fc`, then `pg_restore` into a
    fresh database `target`; returns the restored database's URL."""
    import subprocess

    env = {**os.environ, "PGPASSWORD": str(settings_dict.get("PASSWORD") or "")}
    conn = [
        "-h", str(settings_dict.get("HOST") or "127.0.0.1"),
        "-p", str(settings_dict.get("PORT") or 5432),
        "-U", str(settings_dict.get("USER") or "postgres"),
    ]
    run = lambda *argv: subprocess.run(argv, env=env, check=True, capture_output=True)  # noqa: E731
    run("pg_dump", *conn, "-d", str(settings_dict["NAME"]), "-Fc", "-f", str(dump))
    run("dropdb", *conn, "--if-exists", target)
    run("createdb", *conn, target)
    run("pg_restore", *conn, "-d", target, "--no-owner", str(dump))
    return database_url({**settings_dict, "NAME": target})


def pg_drop(settings_dict: Mapping[str, object], name: str) -> None:
    import subprocess

    subprocess.run(
        ["dropdb", "-h", str(settings_dict.get("HOST") or "127.0.0.1"),
         "-p", str(settings_dict.get("PORT") or 5432),
         "-U", str(settings_dict.get("USER") or "postgres"), "--if-exists", name],
        env={**os.environ, "PGPASSWORD": str(settings_dict.get("PASSWORD") or "")},
        check=False, capture_output=True,
    )
