"""The referee's unix socket (`--unix-dir`, "no hop" for hosted bots on the same host):
named after the advertised address in a directory of referee sockets only, reachable by
any local uid, gone when the referee stops, and under the same per-bot limits as TCP."""

from __future__ import annotations

import asyncio
import socket
import stat
from pathlib import Path

import grpc
import pytest

from bots_sdk.connecting import referee_socket_name
from referee_service.__main__ import build_parser
from referee_service.auth import StaticTokenStore
from referee_service.server import RefereeUnixError, running_referee

from .harness import ORGANIZER_TOKEN, RawBot


@pytest.fixture
def sockets(tmp_path: Path) -> Path:
    return tmp_path / "referees"  # made by the referee


async def test_a_bot_plays_on_the_unix_socket_under_the_same_per_bot_limits(
        token_store: StaticTokenStore, sockets: Path) -> None:
    async with running_referee(token_store, organizer_token=ORGANIZER_TOKEN,
                               max_streams_per_bot=2, unix_dir=str(sockets)) as ref:
        path = sockets / referee_socket_name(ref.advertise)
        assert ref.unix_path == path and stat.S_ISSOCK(path.lstat().st_mode)
        assert stat.S_IMODE(path.stat().st_mode) == 0o666  # every slot uid may connect
        assert [p.name for p in sockets.iterdir()] == [path.name]
        first = await RawBot(f"unix:{path}", "alice").start().connected()
        assert first.of_kind("welcome")[0].bot_id == "alice"
        second = await RawBot(ref.target, "alice").start().connected()  # TCP and unix: one bot
        third = RawBot(f"unix:{path}", "alice").start()
        assert third.task is not None
        await asyncio.wait_for(third.task, 10)
        # what the relay's per-session connection cap did, the referee's per-bot cap does
        assert third.status == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert "already has 2 open streams" in third.details
        for bot in (first, second):
            await bot.close()
    assert not path.exists()  # a hosted bot connected straight here fails over at once


async def test_a_directory_with_anything_but_sockets_is_refused(
        token_store: StaticTokenStore, sockets: Path) -> None:
    sockets.mkdir()
    (sockets / "referee.env").write_text("TIENLEN_ORGANIZER_TOKEN=secret\n")
    with pytest.raises(RefereeUnixError, match=r"referee sockets only .* referee\.env"):
        async with running_referee(token_store, unix_dir=str(sockets)):
            pass
    (sockets / "referee.env").unlink()
    (sockets / "sub").symlink_to("/etc")
    with pytest.raises(RefereeUnixError, match="sub"):
        async with running_referee(token_store, unix_dir=str(sockets)):
            pass
    link = sockets.parent / "link"
    (sockets / "sub").unlink()
    link.symlink_to(sockets)
    with pytest.raises(RefereeUnixError, match="not a directory"):
        async with running_referee(token_store, unix_dir=str(link)):
            pass


async def test_a_stale_socket_is_replaced_and_a_live_one_refused(
        token_store: StaticTokenStore, sockets: Path) -> None:
    async with running_referee(token_store, unix_dir=str(sockets)) as ref:
        advertise = ref.advertise
        with pytest.raises(RefereeUnixError, match="another referee already listens"):
            async with running_referee(token_store, unix_dir=str(sockets), advertise=advertise):
                pass
        assert ref.unix_path is not None and ref.unix_path.exists()  # untouched
    sockets.mkdir(exist_ok=True)
    stale = sockets / referee_socket_name("127.0.0.1:1")
    dead = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    dead.bind(str(stale))
    dead.close()  # a referee that died: its socket file stays, nobody listens
    async with running_referee(token_store, unix_dir=str(sockets), advertise="127.0.0.1:1") as ref:
        assert ref.unix_path == stale
        bot = await RawBot(f"unix:{stale}", "alice").start().connected()
        await bot.close()


def test_the_command_line_and_the_environment_name_the_directory(monkeypatch) -> None:
    default = "/run/tienlen/referees" if Path("/run/tienlen/referees").is_dir() else None
    assert build_parser().parse_args([]).unix_dir == default  # where runners look too
    assert build_parser().parse_args(["--unix-dir", "/run/x"]).unix_dir == "/run/x"
    monkeypatch.setenv("TIENLEN_REFEREE_UNIX_DIR", "/run/tienlen/referees")
    assert build_parser().parse_args([]).unix_dir == "/run/tienlen/referees"


async def test_a_seed_never_welcomed_falls_back_and_finds_the_referee(
        token_store: StaticTokenStore, sockets: Path, tmp_path: Path) -> None:
    from bots_sdk.bot import Bot
    from bots_sdk.client import BotClient

    from .harness import token_of

    class Passer(Bot):
        def play(self, view):  # type: ignore[no-untyped-def]
            return view.legal_plays()[0]

    async with running_referee(token_store, organizer_token=ORGANIZER_TOKEN,
                               unix_dir=str(sockets)) as ref:
        gone = tmp_path / "gone.sock"  # a local referee that died as the bot started
        client = BotClient(Passer, target=f"unix:{gone}", token=token_of("alice"),
                           retry_first_connection=True, backoff_initial_s=0.05,
                           seed_fallback=f"unix:{ref.unix_path}")
        task = asyncio.ensure_future(client.run())
        try:
            for _ in range(500):
                if client.connected is not None and client.connected.is_set():
                    break
                await asyncio.sleep(0.01)
            assert client.connected is not None and client.connected.is_set()
            assert client.links[0].target == f"unix:{ref.unix_path}"
        finally:
            client.stop(force=True)
            await asyncio.wait_for(task, 10)
        # without a fallback it keeps trying the given address (as before)
        client = BotClient(Passer, target=f"unix:{gone}", token=token_of("alice"),
                           retry_first_connection=True, backoff_initial_s=0.05)
        task = asyncio.ensure_future(client.run())
        try:
            await asyncio.sleep(0.5)
            assert client.connected is not None and not client.connected.is_set()
            assert client.links[0].target == f"unix:{gone}"
        finally:
            client.stop(force=True)
            await asyncio.wait_for(task, 10)
