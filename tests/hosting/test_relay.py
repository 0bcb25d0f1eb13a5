"""The relay, on its own: unix sockets forwarded byte for byte to TCP listeners on
loopback (real sockets, real threads), the seed socket falling over to the next referee,
the pool's sockets following set_targets, and the cap on connections a bot may hold; each
both in a thread (RelayHub) and in the process of its own a runner uses (RelayProcess):
that process is another process, its loop's thread asks for a short scheduling slice, it
ends with the runner's pipe, and a runner that cannot start it relays in a thread."""

from __future__ import annotations

import contextlib
import os
import socket
import stat
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from bots_sdk.client import referee_socket_name
from tournaments.hosting import latency
from tournaments.hosting.relay import SEED_SOCKET, RelayError, RelayHub
from tournaments.hosting.relay_process import NO_PROCESS_ENV, RelayProcess

pytestmark = pytest.mark.timeout(60)


class Echo:
    """A TCP server on loopback answering every connection with a prefix and an echo."""

    def __init__(self, prefix: bytes) -> None:
        self.prefix = prefix
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.address = f"127.0.0.1:{self.sock.getsockname()[1]}"
        self.connections = 0
        self.clients: list[socket.socket] = []
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.connections += 1
            self.clients.append(conn)
            threading.Thread(target=self._echo, args=(conn,), daemon=True).start()

    def _echo(self, conn: socket.socket) -> None:
        with conn:
            try:
                while data := conn.recv(65536):
                    conn.sendall(self.prefix + data)
            except OSError:
                pass

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)  # wakes the accept()
        self.sock.close()
        for conn in self.clients:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
            conn.close()
        self.thread.join(5)


@pytest.fixture(params=["thread", "process"])
def hub(request) -> Iterator[RelayHub | RelayProcess]:
    hub = RelayHub() if request.param == "thread" else RelayProcess()
    yield hub
    hub.close()


@pytest.fixture
def echoes() -> Iterator[list[Echo]]:
    servers = [Echo(b"A:"), Echo(b"B:")]
    yield servers
    for server in servers:
        server.close()


@pytest.fixture
def sockdir() -> Iterator[Path]:
    import tempfile

    with tempfile.TemporaryDirectory(prefix="tlr-", dir="/tmp") as d:
        yield Path(d)


def talk(path: Path, message: bytes, expect: int | None = None) -> bytes:
    with socket.socket(socket.AF_UNIX) as s:
        s.settimeout(10)
        s.connect(str(path))
        s.sendall(message)
        want = expect if expect is not None else len(message) + 2
        got = b""
        while len(got) < want:
            chunk = s.recv(65536)
            if not chunk:
                break
            got += chunk
        return got


def test_each_referee_has_its_socket_and_the_seed_reaches_the_first(hub, echoes, sockdir):
    a, b = echoes
    relay = hub.open(sockdir, [a.address, b.address])
    names = sorted(os.listdir(sockdir))
    assert names == sorted([SEED_SOCKET, referee_socket_name(a.address), referee_socket_name(b.address)])
    for name in names:
        mode = os.stat(sockdir / name).st_mode
        assert stat.S_ISSOCK(mode) and stat.S_IMODE(mode) == 0o660  # no one else connects
    assert talk(sockdir / SEED_SOCKET, b"hello") == b"A:hello"
    assert talk(relay.socket_path(b.address), b"hi b") == b"B:hi b"
    assert relay.stats.accepted == 2 and relay.stats.bytes_up == len(b"hello") + len(b"hi b")


def test_large_messages_cross_intact(hub, sockdir):
    received = bytearray()
    done = threading.Event()
    server = socket.create_server(("127.0.0.1", 0))
    address = f"127.0.0.1:{server.getsockname()[1]}"

    def sink() -> None:
        conn, _ = server.accept()
        with conn:
            while data := conn.recv(1 << 20):
                received.extend(data)
        done.set()

    threading.Thread(target=sink, daemon=True).start()
    hub.open(sockdir, [address])
    payload = os.urandom(8 * 1024 * 1024)
    with socket.socket(socket.AF_UNIX) as s:
        s.connect(str(sockdir / SEED_SOCKET))
        s.sendall(payload)
        s.shutdown(socket.SHUT_WR)  # the half-close reaches the referee's side
        assert done.wait(20), "the far end never saw the end of the stream"
    server.close()
    assert bytes(received) == payload


def test_the_seed_falls_over_to_a_live_referee(hub, echoes, sockdir):
    a, b = echoes
    hub.open(sockdir, [a.address, b.address])
    a.close()
    assert talk(sockdir / SEED_SOCKET, b"x") == b"B:x"


def test_the_pool_changes_and_the_sockets_follow(hub, echoes, sockdir):
    a, b = echoes
    relay = hub.open(sockdir, [a.address])
    held = socket.socket(socket.AF_UNIX)
    held.settimeout(10)
    held.connect(str(relay.socket_path(a.address)))
    held.sendall(b"1")
    assert held.recv(10) == b"A:1"
    relay.set_targets([b.address])  # a left the pool: its socket goes, its stream is cut
    assert not relay.socket_path(a.address).exists()
    assert held.recv(10) == b""
    held.close()
    assert talk(relay.socket_path(b.address), b"2") == b"B:2"
    assert talk(sockdir / SEED_SOCKET, b"3") == b"B:3"
    relay.set_targets([])
    assert os.listdir(sockdir) == []


def test_a_bot_cannot_hold_more_connections_than_its_cap(hub, echoes, sockdir):
    a, _ = echoes
    relay = hub.open(sockdir, [a.address], max_connections=3)
    held = []
    for _ in range(3):
        s = socket.socket(socket.AF_UNIX)
        s.settimeout(10)
        s.connect(str(sockdir / SEED_SOCKET))
        s.sendall(b"k")
        assert s.recv(10) == b"A:k"
        held.append(s)
    with socket.socket(socket.AF_UNIX) as extra:
        extra.settimeout(10)
        extra.connect(str(sockdir / SEED_SOCKET))
        assert extra.recv(10) == b""  # closed at once, the referee never sees it
    assert a.connections == 3 and relay.stats.refused == 1
    for s in held:
        s.close()


def test_only_host_port_targets_and_short_paths(hub, sockdir, tmp_path):
    with pytest.raises(RelayError, match="HOST:PORT"):
        hub.open(sockdir, ["unix:/etc/passwd"])
    deep = tmp_path / ("d" * 90)
    with pytest.raises(RelayError, match="too long"):
        hub.open(deep, ["127.0.0.1:1"])


def _task_ids(pid: int) -> list[int]:
    return [int(t) for t in os.listdir(f"/proc/{pid}/task")]


def test_a_runner_relays_in_a_process_of_its_own_with_short_slices(echoes, sockdir):
    a, _ = echoes
    hub = RelayProcess()
    try:
        relay = hub.open(sockdir, [a.address])
        assert talk(sockdir / SEED_SOCKET, b"hello") == b"A:hello"
        pid = hub.pid
        assert pid is not None and pid != os.getpid()  # not a thread of the runner: no lock shared
        assert "tournaments.hosting.relay_process" in Path(f"/proc/{pid}/cmdline").read_text()
        slices = [attr.runtime_ns for tid in _task_ids(pid) if (attr := latency.get_attr(tid)) is not None]
        probe: list[str | None] = []  # does this kernel take one? (asked by a thread of its own)
        asker = threading.Thread(target=lambda: probe.append(latency.request_short_slice()))
        asker.start()
        asker.join(10)
        if probe == [None]:
            assert latency.RELAY_SLICE_NS in slices, slices  # the loop's thread asked and got it
        relay.close()
        assert relay.stats.accepted == 1 and relay.stats.bytes_up == len(b"hello")
        assert not (sockdir / SEED_SOCKET).exists()  # its sockets went with it
    finally:
        hub.close()
    assert hub.pid is None
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)  # ended and reaped


def test_the_relay_process_ends_with_the_runner_pipe_and_removes_its_sockets(echoes, sockdir):
    a, _ = echoes
    hub = RelayProcess()
    hub.open(sockdir, [a.address])
    proc = hub._proc
    assert proc is not None and proc.stdin is not None
    proc.stdin.close()  # as when the runner dies: its end of the pipe closes
    assert proc.wait(10) == 0
    assert not (sockdir / SEED_SOCKET).exists()
    hub.close()


def test_without_the_process_the_relay_runs_in_a_thread_and_says_so(echoes, sockdir, monkeypatch, caplog):
    a, _ = echoes
    monkeypatch.setenv(NO_PROCESS_ENV, "1")
    hub = RelayProcess()
    try:
        relay = hub.open(sockdir, [a.address])
        assert hub.pid is None and "relaying in a thread of the runner" in caplog.text
        assert talk(relay.socket_path(None), b"hi") == b"A:hi"
    finally:
        hub.close()


def test_the_relay_thread_asks_for_a_short_slice_or_says_why_not(echoes, sockdir):
    a, _ = echoes
    hub = RelayHub()
    try:
        hub.open(sockdir, [a.address])
        assert hub.thread_id is not None
        attr = latency.get_attr(hub.thread_id)
        if hub.slice_problem is None:
            assert attr is not None and attr.policy == latency.SCHED_OTHER and attr.runtime_ns == latency.RELAY_SLICE_NS
        else:
            assert "sched_setattr" in hub.slice_problem or "6.12" in hub.slice_problem
    finally:
        hub.close()
