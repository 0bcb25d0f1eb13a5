"""The suite's check that a test leaves nothing behind (tests/conftest.py) sees a thread and a
listening socket a test started and did not stop, and not ones it did stop: were it blind,
a test leaving a server up would again break a later one far from the cause."""

import socket
import threading

import pytest

from tests.conftest import _left_behind, _snapshot

GRACE_S = 0.3  # the check's grace, short here: these leaks are deliberate


def _thread(name: str, daemon: bool, until: threading.Event) -> threading.Thread:
    thread = threading.Thread(target=until.wait, name=name, daemon=daemon)
    thread.start()
    return thread


@pytest.mark.parametrize("daemon", [False, True], ids=["thread", "daemon-thread"])
def test_a_thread_still_running_is_named(daemon: bool) -> None:
    before = _snapshot()
    stop = threading.Event()
    thread = _thread("left-running", daemon, stop)
    try:
        problems = _left_behind(before, grace=GRACE_S)
        kind = "daemon thread" if daemon else "thread"
        assert [p for p in problems if p.startswith(f"{kind} 'left-running'")], problems
        # It says what the thread runs, so the leak can be traced to the code that started it.
        assert any("threading.Event.wait" in p for p in problems), problems
    finally:
        stop.set()
        thread.join(5)
    assert _left_behind(before, grace=GRACE_S) == []


def test_a_thread_ending_within_the_grace_is_not_a_leak() -> None:
    before = _snapshot()
    stop = threading.Event()
    _thread("on-its-way-out", False, stop)
    threading.Timer(0.1, stop.set).start()
    assert _left_behind(before, grace=5.0) == []


@pytest.mark.parametrize("family, host", [(socket.AF_INET, "127.0.0.1"), (socket.AF_INET6, "::1")],
                         ids=["tcp", "tcp6"])
def test_a_listening_port_still_open_is_named(family: socket.AddressFamily, host: str) -> None:
    before = _snapshot()
    try:
        server = socket.socket(family, socket.SOCK_STREAM)
    except OSError:
        pytest.skip(f"no {family.name} on this machine")
    with server:
        try:
            server.bind((host, 0))
        except OSError:
            pytest.skip(f"cannot bind {host} on this machine")
        port = server.getsockname()[1]
        # Bound but not listening yet: no port anyone can reach, not reported.
        assert _left_behind(before, grace=0) == []
        server.listen()
        problems = _left_behind(before, grace=GRACE_S)
        assert [p for p in problems if f"TCP port {port} " in p], problems
    assert _left_behind(before, grace=GRACE_S) == []


def test_a_listening_unix_socket_still_open_is_named(tmp_path) -> None:
    before = _snapshot()
    path = tmp_path / "server.sock"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as server:
        server.bind(str(path))
        server.listen()
        problems = _left_behind(before, grace=GRACE_S)
        assert [p for p in problems if f"Unix socket {path} " in p], problems
    assert _left_behind(before, grace=GRACE_S) == []


def test_a_port_held_only_by_a_thread_goes_with_it() -> None:
    """A server thread stopping at the very end of a test, closing its socket as it goes:
    within the grace, so not a leak."""
    before = _snapshot()
    server = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def serve() -> None:
        with server:
            stop.wait()

    threading.Thread(target=serve, name="closing-server").start()
    threading.Timer(0.1, stop.set).start()
    assert _left_behind(before, grace=5.0) == []


def test_a_thread_named_like_a_shared_one_is_still_a_leak() -> None:
    """The threads a library shares across the process are exempt by name and by what they
    run, both: a test's own thread under such a name is still caught."""
    before = _snapshot()
    stop = threading.Event()
    thread = _thread("Thread-999 (_poll_wrapper)", True, stop)
    try:
        problems = _left_behind(before, grace=GRACE_S)
        assert [p for p in problems if "'Thread-999 (_poll_wrapper)'" in p], problems
    finally:
        stop.set()
        thread.join(5)


def test_asgirefs_process_wide_thread_is_shared_but_an_executor_of_the_tests_own_is_not() -> None:
    """asgiref's one thread for thread-sensitive code (made once per process, never shut
    down) is not blamed on the test that happened to start it; a thread pool the test made
    and left running is."""
    from concurrent.futures import ThreadPoolExecutor

    from asgiref.sync import SyncToAsync

    before = _snapshot()
    SyncToAsync.single_thread_executor.submit(lambda: None).result(5)
    stop = threading.Event()
    own = ThreadPoolExecutor(max_workers=1)
    own.submit(stop.wait, 0)
    try:
        problems = _left_behind(before, grace=GRACE_S)
        ours = [t for t in own._threads]
        assert len(problems) == 1 and ours[0].name in problems[0], problems
    finally:
        own.shutdown(wait=True)
    assert _left_behind(before, grace=GRACE_S) == []
