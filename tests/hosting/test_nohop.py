"""No hop (tournaments.hosting.nohop): a sandboxed bot on a runner that shares its host
with referees connects straight to their own unix sockets (`--unix-dir`), not through
the relay; the directory it is shown holds the referees' sockets and nothing else, a
directory that holds anything else is not shown at all (the relay instead), and a
referee that dies mid-table is left for the pool's other one as through the relay."""

from __future__ import annotations

import dataclasses
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from bots_sdk.client import referee_socket_name
from bots_sdk.protocol.tienlen.v1 import organizer_pb2 as org
from referee_service.auth import BotIdentity, StaticTokenStore
from referee_service.organizer_client import OrganizerClient
from referee_service.pool import MemoryPoolRegistry
from referee_service.server import RefereeThread
from tournaments.hosting import BotSpec, ExitReason, Host, nohop
from tournaments.hosting.process import HostingConfig

from .conftest import ORGANIZER, TOKEN, host_checked_clean
from .test_containment import probe, reported
from .test_tables import (
    JS_BOT,
    PYTHON_BOT,
    my_moves,
    table_moves_off_a_crashed_referee,
    until_connected,
)

pytestmark = pytest.mark.timeout(300)


@pytest.fixture
def referee_home() -> Iterator[Path]:
    """A referee's own directory (short: unix socket paths live under it), with a file of
    its own beside the directory of its socket."""
    home = Path(tempfile.mkdtemp(prefix="tlr-", dir="/tmp"))
    home.chmod(0o755)  # the sandbox's slot uid must reach the sockets directory
    (home / "referee.env").write_text("TIENLEN_ORGANIZER_TOKEN=the-referees-secret\n")
    (home / "referee.env").chmod(0o644)  # even one every local user could read
    yield home
    shutil.rmtree(home, ignore_errors=True)


@pytest.fixture
def local_host(hosting_config: HostingConfig, python_runtime, referee_home: Path) -> Iterator[Host]:
    yield from host_checked_clean(
        Host(dataclasses.replace(hosting_config, referee_sockets=referee_home / "sockets")))


def store() -> StaticTokenStore:
    return StaticTokenStore({TOKEN: BotIdentity("hosted", "Hosted bot")})


@pytest.fixture
def local_referee(referee_home: Path) -> Iterator[RefereeThread]:
    with RefereeThread(store(), organizer_token=ORGANIZER,
                       unix_dir=str(referee_home / "sockets")) as thread:
        yield thread


@pytest.mark.parametrize("runtime", ["python3.11", "node20"])
def test_a_sandboxed_bot_plays_straight_on_the_referees_own_socket(runtime, request, local_host, code,
                                                                    local_referee):
    request.getfixturevalue("node_runtime" if runtime == "node20" else "python_runtime")
    name = referee_socket_name(local_referee.target)
    folder = code(JS_BOT, name="bot.js") if runtime == "node20" else code(PYTHON_BOT)
    bot = local_host.start(BotSpec(runtime=runtime, code_dir=folder, token=TOKEN,
                                   referees=[local_referee.target], bot_version="s1"))
    try:
        assert bot.local_dir is not None and list(bot.local) == [local_referee.target]
        until_connected(bot, local_referee.target)
        with OrganizerClient(local_referee.target, ORGANIZER, timeout=240) as client:
            events = list(client.play_table(table_id="nohop", games=8,
                                            seats=["hosted", "house:greedy", "house:random"]))
        result = events[-1]
        assert result.status == org.TABLE_STATUS_COMPLETED and result.strikes[0] == 0
        mine = my_moves(events)
        assert len(mine) > 30 and all(m["attempts"] == 1 and m["fallback"] is None for m in mine)
        assert f"connected to unix:/run/tienlen/local/{name}" in bot.log.text()
    finally:
        end = bot.stop(grace_s=20)
    assert end.reason is ExitReason.STOPPED and end.exit_code == 0, end.log[-2000:]
    # not one byte through the relay: its sockets were there, the bot never used them
    assert end.relay is not None and end.relay.accepted == 0 and end.relay.bytes_up == 0


def test_the_referees_directory_shows_its_sockets_and_nothing_else(local_host, code, local_referee,
                                                                   referee_home):
    name = referee_socket_name(local_referee.target)
    end = probe(local_host, code, "nohop", referees=[local_referee.target],
                env={"PROBE_SECRET": str(referee_home / "referee.env")})
    found = reported(end)
    assert found["env_local"] == "/run/tienlen/local"
    assert found["server"] == f"unix:/run/tienlen/local/{name}"  # the seed: straight there
    assert found["run_tienlen"] == ["local", "referee"]
    assert found["local"] == [name]  # the socket, not the referee's other files
    assert found["connect"] == {name: "ok"}
    # the referee's file beside it: by its host path and by the mount's parent, neither
    assert found["secret_by_host_path"].startswith(("FileNotFoundError", "OSError: errno 2"))
    assert found["secret_beside"].startswith(("FileNotFoundError", "OSError: errno 2"))
    # read-only: nothing planted beside the referee's socket, no fake referee socket
    assert found["write"].startswith("OSError: errno 30"), found["write"]
    assert found["bind"].startswith("OSError: errno 30"), found["bind"]
    assert sorted(p.name for p in (referee_home / "sockets").iterdir()) == [name]
    assert end.reason is ExitReason.EXITED


def test_a_directory_holding_anything_else_is_not_shown_and_the_relay_plays(
        local_host, code, local_referee, referee_home, caplog):
    stray = referee_home / "sockets" / "notes.txt"  # put there after the referee started
    stray.write_text("not a socket")
    end = probe(local_host, code, "nohop", referees=[local_referee.target],
                env={"PROBE_SECRET": str(stray)})
    found = reported(end)
    assert found["env_local"] == "" and found["run_tienlen"] == ["referee"]
    assert found["server"] == "unix:/run/tienlen/referee/seed.sock"
    assert found["secret_by_host_path"].startswith(("FileNotFoundError", "OSError: errno 2"))
    assert "no hop refused" in caplog.text and "notes.txt" in caplog.text
    stray.unlink()
    # and the bot plays, through the relay
    bot = local_host.start(BotSpec(runtime="python3.11", code_dir=code(PYTHON_BOT), token=TOKEN,
                                   referees=[local_referee.target]))
    try:
        assert bot.local_dir is not None  # clean again: shown
    finally:
        bot.stop(0)
    (referee_home / "sockets" / "sub").mkdir()
    bot = local_host.start(BotSpec(runtime="python3.11", code_dir=code(PYTHON_BOT), token=TOKEN,
                                   referees=[local_referee.target]))
    try:
        assert bot.local_dir is None
        until_connected(bot, local_referee.target)
    finally:
        end = bot.stop(grace_s=0)
    assert end.relay is not None and end.relay.accepted >= 1


def test_a_bot_straight_on_a_local_referee_follows_the_pool_when_it_dies(local_host, code, referee_home):
    registry = MemoryPoolRegistry(timeout_s=1.0)
    sockets = referee_home / "sockets"
    a, b = (RefereeThread(store(), organizer_token=ORGANIZER, pool=registry, pool_heartbeat_s=0.05,
                          unix_dir=str(sockets)).start() for _ in range(2))
    try:
        bot = local_host.start(BotSpec(runtime="python3.11", code_dir=code(PYTHON_BOT), token=TOKEN,
                                       referees=[b.target, a.target], max_tables=2))
        try:
            assert set(bot.local) == {a.target, b.target}
            until_connected(bot, a.target, b.target)
            table_moves_off_a_crashed_referee(a, b)
            assert bot.running
        finally:
            end = bot.stop(grace_s=0)
    finally:
        for thread in (a, b):
            thread.stop()
    log = end.log
    assert "moved" in log, log[-3000:]
    # both referees straight on their own sockets: the seed (b) and the pool's other (a)
    assert f"connected to unix:/run/tienlen/local/{referee_socket_name(b.target)}" in log, log[-3000:]
    assert f"at {a.target} through unix:/run/tienlen/local/{referee_socket_name(a.target)}" in log, log[-3000:]
    assert end.relay is not None and end.relay.accepted == 0


@pytest.mark.parametrize("runtime", ["python3.11", "node20"])
def test_a_local_seed_gone_before_the_bot_connects_falls_back_on_the_relay(runtime, request, local_host, code,
                                                                           local_referee, referee_home,
                                                                           monkeypatch):
    request.getfixturevalue("node_runtime" if runtime == "node20" else "python_runtime")
    # the referee's socket accepted when the runner looked, and is gone when the bot dials
    monkeypatch.setattr(nohop, "first_accepting", lambda paths: referee_home / "sockets" / "gone.sock")
    folder = code(JS_BOT, name="bot.js") if runtime == "node20" else code(PYTHON_BOT)
    bot = local_host.start(BotSpec(runtime=runtime, code_dir=folder, token=TOKEN,
                                   referees=[local_referee.target]))
    try:
        until_connected(bot, local_referee.target)
    finally:
        end = bot.stop(grace_s=0)
    assert "no referee at unix:/run/tienlen/local/gone.sock: trying unix:/run/tienlen/referee/seed.sock" \
        in end.log, end.log[-3000:]
    assert end.relay is not None and end.relay.accepted >= 1
