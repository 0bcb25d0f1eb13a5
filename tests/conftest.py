"""Settings for the whole suite.

Hypothesis: no per-example deadline. A property's examples are checked for what they
assert, not for how fast they run; on a loaded 2-core CI machine a 200 ms deadline failed
examples that were correct (speed is measured by benchmarks/, not by tests)."""

import gc
import logging
import os
import signal
import time
from pathlib import Path

import pytest
from hypothesis import settings

settings.register_profile("tienlen", deadline=None)
settings.load_profile("tienlen")

# A suite started in the background by a non-interactive shell (`make test &`, a CI runner's
# script) inherits SIGINT ignored, as POSIX has such shells do for asynchronous commands;
# every process the tests start would inherit that too, and the tests that press Ctrl-C on
# one (the arena, `tienlen-bot run`, the demo) would wait for it forever. Python's own
# handler again, so children start with the default disposition and install theirs.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


# --- nothing left behind for the next test -----------------------------------------------
# A test that leaves a process running or a logging handler installed breaks a later one in
# ways that point nowhere near it (a handler bound to a closed capture stream printed
# "I/O operation on closed file" in a referee's log; a bot process left connected took a
# later test's table). Each test is checked when it ends, and fails naming what it left.


# multiprocessing's own helpers live as long as the test process, started by whichever
# test first needs them: not something a test left behind.
_PROCESS_HELPERS = ("multiprocessing.resource_tracker", "multiprocessing.forkserver")
_WATCHED_LOGGERS = ("", "referee_service", "bots_sdk", "tournaments", "celery")


def _children() -> dict[int, str]:
    """This process's live children (zombies excluded): pid -> command line."""
    me, found = os.getpid(), {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            fields = stat[stat.rindex(")") + 2:].split()
            if int(fields[1]) == me and fields[0] != "Z":
                cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
                if not any(helper in cmd for helper in _PROCESS_HELPERS):
                    found[int(entry.name)] = cmd
        except (OSError, ValueError):
            continue
    return found


def _handlers() -> dict[str, list[logging.Handler]]:
    return {name: list(logging.getLogger(name).handlers) for name in _WATCHED_LOGGERS}


def _foreign(handlers: list[logging.Handler]) -> list[logging.Handler]:
    # pytest's own capture handlers come and go with each test phase.
    return [h for h in handlers if type(h).__module__.split(".")[0] != "_pytest"]


_monitor: list = []  # one connection to the server's `postgres` database, made on first use


def _db_sessions() -> dict[int, str] | None:
    """The server's sessions on this run's test database (pid -> their last query), seen
    from a connection to another database (so it never holds the test database itself);
    None when the tests do not run on PostgreSQL."""
    from django.conf import settings

    db = settings.DATABASES["default"]
    if "postgresql" not in db["ENGINE"] or not str(db["NAME"]).startswith("test_"):
        return None
    if not _monitor:
        import psycopg

        _monitor.append(psycopg.connect(host=db.get("HOST") or None, port=db.get("PORT") or None,
                                        user=db.get("USER") or None, password=db.get("PASSWORD") or None,
                                        dbname="postgres", autocommit=True))
    rows = _monitor[0].execute(
        "SELECT pid, left(query, 160) FROM pg_stat_activity WHERE datname = %s", [db["NAME"]]).fetchall()
    return dict(rows)


@pytest.fixture(autouse=True)
def _leaves_nothing_behind(request):
    if not Path("/proc/self/stat").exists():  # not Linux: nothing to look at
        yield
        return
    before_children = set(_children())
    before_handlers = {name: _foreign(h) for name, h in _handlers().items()}
    before_db = _db_sessions()
    yield
    problems = []
    if before_db is not None:
        deadline = time.monotonic() + 5.0  # a thread closing its connection at the very end
        while True:
            after_db = _db_sessions() or {}
            opened = {pid: q for pid, q in after_db.items() if pid not in before_db}
            if not opened or time.monotonic() > deadline:
                break
            # A finished thread's connection closes when it is collected (Django keeps one
            # per thread): collect, so only connections something still holds count.
            gc.collect()
            time.sleep(0.1)
        for pid, query in opened.items():
            problems.append(f"database connection {pid} still open (its last query: {query!r})")
        if opened:
            import threading

            problems.append("threads alive: " + ", ".join(sorted(t.name for t in threading.enumerate())))
    left = {}
    deadline = time.monotonic() + 5.0  # a child stopped at the very end may take a moment
    while True:
        left = {pid: cmd for pid, cmd in _children().items() if pid not in before_children}
        if not left or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    for pid, cmd in left.items():
        problems.append(f"process {pid} still running: {cmd[:200]}")
        try:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
        except (ProcessLookupError, ChildProcessError):
            pass
    for name, handlers in _handlers().items():
        added = [h for h in _foreign(handlers) if h not in before_handlers[name]]
        if added:
            logger = logging.getLogger(name)
            for h in added:
                logger.removeHandler(h)
            problems.append(f"logging handler(s) left on logger {name or 'root'!r}: {added}")
    if problems:
        pytest.fail(f"{request.node.nodeid} left behind:\n  " + "\n  ".join(problems), pytrace=False)


def pytest_runtest_setup(item) -> None:
    """A browser test without chromium skips (fails with TIENLEN_REQUIRE_SERVERS) before its
    fixtures start a server: the skip is raised here, in tests/needs.py, so pytest's summary
    folds every browser test's skip into one line instead of one line per test."""
    if item.get_closest_marker("browser"):
        from tests.needs import need_chromium

        need_chromium()
