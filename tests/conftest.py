"""Settings for the whole suite.

Hypothesis: no per-example deadline. A property's examples are checked for what they
assert, not for how fast they run; on a loaded 2-core CI machine a 200 ms deadline failed
examples that were correct (speed is measured by benchmarks/, not by tests)."""

import gc
import logging
import os
import re
import signal
import sys
import threading
import time
import traceback
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
# A test that leaves a process running, a thread, a listening socket, a database connection
# or a logging handler breaks a later one in ways that point nowhere near it (a handler bound
# to a closed capture stream printed "I/O operation on closed file" in a referee's log; a bot
# process left connected took a later test's table; a server left listening keeps serving
# a test that meant to reach a new one). Each test is checked when it ends, and fails naming
# what it left.


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


# Threads a library starts once for the whole process, on first use by whichever test needs
# it, and keeps for the process's life by design: shared, not something a test left behind.
# Matched by name and by the function the thread runs, both, so a test's own thread that
# happens to share a name is still caught.
_PROCESS_THREADS: tuple[tuple[str, str], ...] = (
    # grpc.aio's one completion-queue poller for the whole process: started with the first
    # grpc.aio channel or server to exist, shared by all of them, stopped when the last is
    # deallocated. That is not when a test stops its server: pytest holds the test's
    # fixture values (the stopped referee and its server object) until after this check,
    # so the poller outlives every test that started it. A server left running is still
    # caught, by its listening port.
    (r"Thread-\d+ \(_poll_wrapper\)", r"grpc\._cython\.cygrpc\.PollerCompletionQueue\._poll_wrapper"),
    # The platform's table-lease keeper (tournaments/play/leases.py): one per process by
    # design, started by the first lease kept in it, then waiting for the next while holding
    # nothing, not even a database connection. Shared only while it keeps no lease: one
    # still kept after a test is that test's leak (see _idle_keeper).
    (r"table-leases", r"tournaments\.play\.leases\._Keeper\._run"),
)


def _threads() -> set[threading.Thread]:
    return {t for t in threading.enumerate() if t.is_alive()}


def _thread_target(thread: threading.Thread) -> str:
    """What a thread runs, `module.qualname` (its target's, else its class's run)."""
    target = getattr(thread, "_target", None)
    if target is None:
        target = type(thread).run
    func = getattr(target, "__func__", target)
    return f"{getattr(func, '__module__', '?')}.{getattr(func, '__qualname__', repr(func))}"


def _idle_keeper(thread: threading.Thread) -> bool:
    keeper = getattr(getattr(thread, "_target", None), "__self__", None)
    with keeper._lock:  # type: ignore[union-attr]
        return not keeper._leases  # type: ignore[union-attr]


def _asgiref_thread(thread: threading.Thread) -> bool:
    """asgiref's one thread for thread-sensitive sync code called from async code
    (`sync_to_async`, Django's async views and test client): the threads of one
    class-level executor, `SyncToAsync.single_thread_executor`, made once per process and
    never shut down; the first test to call through it starts its thread."""
    sync = sys.modules.get("asgiref.sync")
    executor = getattr(getattr(sync, "SyncToAsync", None), "single_thread_executor", None)
    return thread in getattr(executor, "_threads", ())


def _shared(thread: threading.Thread) -> bool:
    if _asgiref_thread(thread):
        return True
    target = _thread_target(thread)
    shared = any(re.fullmatch(name, thread.name) and re.fullmatch(func, target)
                 for name, func in _PROCESS_THREADS)
    if shared and thread.name == "table-leases":
        return _idle_keeper(thread)
    return shared


def _describe_thread(thread: threading.Thread) -> str:
    frame = sys._current_frames().get(thread.ident or -1)
    where = ""
    if frame is not None:
        # The innermost frame of our code or a library's, not the interpreter's wait.
        stack = traceback.extract_stack(frame)
        outer = [f for f in stack if "/threading.py" not in f.filename] or stack
        where = f", at {outer[-1].filename}:{outer[-1].lineno} in {outer[-1].name}"
    kind = "daemon thread" if thread.daemon else "thread"
    return f"{kind} {thread.name!r} still running {_thread_target(thread)}{where}"


def _socket_inodes(pids: list[int | str]) -> dict[int, int | str]:
    """The socket inodes the given processes hold: inode -> pid."""
    found: dict[int, int | str] = {}
    for pid in pids:
        try:
            fds = os.scandir(f"/proc/{pid}/fd")
        except OSError:
            continue
        with fds:
            for fd in fds:
                try:
                    target = os.readlink(fd.path)
                except OSError:
                    continue
                if target.startswith("socket:["):
                    found[int(target[8:-1])] = pid
    return found


def _listening(children: list[int]) -> dict[int, str]:
    """Listening sockets (TCP over IPv4 and IPv6, Unix stream) held by this process or one of
    its children: inode -> what it is. /proc/net lists the whole network namespace's
    sockets; the processes' fds say which are ours."""
    mine = _socket_inodes(["self", *children])
    if not mine:
        return {}
    found: dict[int, str] = {}
    for family in ("tcp", "tcp6"):
        try:
            lines = Path(f"/proc/self/net/{family}").read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if fields[3] != "0A":  # TCP_LISTEN
                continue
            inode = int(fields[9])
            if inode in mine:
                host, port = fields[1].rsplit(":", 1)
                found[inode] = f"TCP port {int(port, 16)} ({family}, pid {mine[inode]})"
    try:
        lines = Path("/proc/self/net/unix").read_text().splitlines()[1:]
    except OSError:
        lines = []
    for line in lines:
        fields = line.split()
        # Flags __SO_ACCEPTCON: a listening socket.
        if int(fields[3], 16) & 0x10000 and int(fields[6]) in mine:
            path = fields[7] if len(fields) > 7 else "(unnamed)"
            found[int(fields[6])] = f"Unix socket {path} (pid {mine[int(fields[6])]})"
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
    return {pid: query for pid, query in rows if pid not in _own_backends()}


def _own_backends() -> set[int]:
    """The test process's own connections (this thread's: Django keeps them between tests)."""
    from django.db import connections

    pids = set()
    for conn in connections.all(initialized_only=True):
        raw = conn.connection
        if raw is not None and not raw.closed:
            pids.add(raw.info.backend_pid)
    return pids


def _snapshot() -> dict:
    """What is running and open now, to compare with after a test."""
    children = _children()
    return {"children": set(children), "handlers": {name: _foreign(h) for name, h in _handlers().items()},
            "db": _db_sessions(), "threads": _threads(), "listening": set(_listening(list(children)))}


def _left_behind(before: dict, grace: float = 5.0) -> list[str]:
    """What was started since `before` and is still there after up to `grace` seconds for it
    to end (a thread closing its connection, a child stopped at the very end may take a
    moment): one line each. Processes left are killed and handlers left removed, so they do
    not go on to break the next test; a thread cannot be stopped from outside, and a socket
    is closed by whatever holds it."""
    problems = []
    if before["db"] is not None:
        deadline = time.monotonic() + grace
        while True:
            after_db = _db_sessions() or {}
            opened = {pid: q for pid, q in after_db.items() if pid not in before["db"]}
            if not opened or time.monotonic() > deadline:
                break
            # A finished thread's connection closes when it is collected (Django keeps one
            # per thread): collect, so only connections something still holds count.
            gc.collect()
            time.sleep(0.1)
        for pid, query in opened.items():
            problems.append(f"database connection {pid} still open (its last query: {query!r})")
        if opened:
            problems.append("threads alive: " + ", ".join(sorted(t.name for t in threading.enumerate())))
    left = {}
    deadline = time.monotonic() + grace
    while True:
        left = {pid: cmd for pid, cmd in _children().items() if pid not in before["children"]}
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
    # Threads, then sockets: a thread on its way out may be what still holds a socket, and an
    # object nothing refers to any more (a stopped server's executor, a closed channel) lets
    # its threads go and its sockets close when collected.
    deadline = time.monotonic() + grace
    while True:
        threads = [t for t in _threads() - before["threads"] if not _shared(t)]
        if not threads or time.monotonic() > deadline:
            break
        gc.collect()
        time.sleep(0.05)
    problems.extend(sorted(_describe_thread(t) for t in threads))
    deadline = time.monotonic() + grace
    while True:
        listening = {inode: what for inode, what in _listening(list(_children())).items()
                     if inode not in before["listening"]}
        if not listening or time.monotonic() > deadline:
            break
        gc.collect()
        time.sleep(0.05)
    problems.extend(f"listening socket still open: {what}" for what in sorted(listening.values()))
    for name, handlers in _handlers().items():
        added = [h for h in _foreign(handlers) if h not in before["handlers"][name]]
        if added:
            logger = logging.getLogger(name)
            for h in added:
                logger.removeHandler(h)
            problems.append(f"logging handler(s) left on logger {name or 'root'!r}: {added}")
    return problems


@pytest.fixture(autouse=True)
def _fresh_pool_view():
    """Each test routes over the pool as its own rows say: a worker process keeps its view
    of the referee pool for a heartbeat period (tournaments.play.routing.PoolView.recent),
    which must not carry a previous test's referees into the next test."""
    yield
    routing = sys.modules.get("tournaments.play.routing")
    if routing is not None:
        routing.pool_view_forget()


@pytest.fixture(autouse=True)
def _leaves_nothing_behind(request):
    """Fails a test that leaves anything of the above behind. Function-scoped and autouse, so
    it is set up after the module- and session-scoped fixtures the test uses and torn down
    before them, after the test's own function-scoped fixtures: what a wider fixture keeps
    from test to test is in both snapshots and never blamed on a test."""
    if not Path("/proc/self/stat").exists():  # not Linux: nothing to look at
        yield
        return
    before = _snapshot()
    yield
    problems = _left_behind(before)
    if problems:
        pytest.fail(f"{request.node.nodeid} left behind:\n  " + "\n  ".join(problems), pytrace=False)


def pytest_runtest_setup(item) -> None:
    """A browser test without chromium skips (fails with TIENLEN_REQUIRE_SERVERS) before its
    fixtures start a server: the skip is raised here, in tests/needs.py, so pytest's summary
    folds every browser test's skip into one line instead of one line per test."""
    if item.get_closest_marker("browser"):
        from tests.needs import need_chromium

        need_chromium()
