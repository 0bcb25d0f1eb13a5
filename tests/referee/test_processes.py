"""Everything in separate processes: `tienlen-referee`, SDK bots (`tienlen-bot run`) and
the tournament workers' `OrganizerClient`, as they run in production."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from bots_sdk.protocol.tienlen.v1 import organizer_pb2 as org
from referee_service.organizer_client import OrganizerClient, RefereeError
from referee_service.server import referee_in_thread

ROOT = Path(__file__).resolve().parents[2]
ORGANIZER = "process-org-token"
BOT_TOKENS = {"rnd": "tok-rnd-1", "grd": "tok-grd-2", "heu": "tok-heu-3", "rn2": "tok-rn2-4"}
BOT_KIND = {"rnd": "random", "grd": "greedy", "heu": "heuristic", "rn2": "random"}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_serving(target: str, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    with grpc.insecure_channel(target) as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        while True:
            try:
                if stub.Check(health_pb2.HealthCheckRequest(), timeout=1).status == 1:
                    return
            except grpc.RpcError:
                if time.monotonic() > deadline:
                    raise
            time.sleep(0.1)


@pytest.fixture
def referee_process(tmp_path: Path) -> Iterator[tuple[str, subprocess.Popen]]:
    port = free_port()
    env = {**os.environ,
           "TIENLEN_BOT_TOKENS": ",".join(f"{b}:{t}" for b, t in BOT_TOKENS.items()),
           "TIENLEN_ORGANIZER_TOKEN": ORGANIZER}
    log = open(tmp_path / "referee.log", "w")  # noqa: SIM115 - closed below
    proc = subprocess.Popen(
        [sys.executable, "-m", "referee_service", "--listen", f"127.0.0.1:{port}",
         "--shutdown-grace", "5"], cwd=ROOT, env=env, stderr=log)
    target = f"127.0.0.1:{port}"
    try:
        wait_serving(target)
        yield target, proc
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        log.close()


def start_sdk_bots(target: str, names: list[str]) -> list[subprocess.Popen]:
    procs = []
    for name in names:
        env = {**os.environ, "TIENLEN_TOKEN": BOT_TOKENS[name]}
        procs.append(subprocess.Popen(
            [sys.executable, "-c", "from bots_sdk.cli import main; raise SystemExit(main())",
             "run", BOT_KIND[name], "--server", target, "--max-tables", "4",
             "--name", name, "--log-level", "WARNING"],
            cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE))
    return procs


def stop_all(procs: list[subprocess.Popen]) -> None:
    for proc in procs:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
    for proc in procs:
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def wait_for_bots(client: OrganizerClient, names: set[str], timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while {b.bot_id for b in client.list_bots()} < names:
        assert time.monotonic() < deadline, "bots did not connect"
        time.sleep(0.1)


def test_referee_sdk_bots_and_organizer_client_in_separate_processes(
        referee_process: tuple[str, subprocess.Popen]) -> None:
    target, referee = referee_process
    bots = start_sdk_bots(target, list(BOT_TOKENS))
    try:
        with OrganizerClient(target, ORGANIZER, timeout=120) as client:
            wait_for_bots(client, set(BOT_TOKENS))
            listed = {b.bot_id: b for b in client.list_bots()}
            assert listed["heu"].max_tables == 4
            out = list(client.play_table(table_id="proc-4", seats=list(BOT_TOKENS), games=3,
                                         seed="processes", move_time_ms=2000,
                                         # fixed deals without an instant win (no moves)
                                         deal_seeds=[f"processes/game/{i}" for i in range(3)]))
            started, games, result = out[0], out[1:-1], out[-1]
            assert isinstance(started, org.TableStarted) and started.seed == "processes"
            assert [g.game_index for g in games] == [0, 1, 2]
            assert isinstance(result, org.TableResult) and result.status == org.TABLE_STATUS_COMPLETED
            assert list(result.strikes) == [0, 0, 0, 0] and list(result.forfeited) == []
            assert list(result.totals) == [sum(g.result.points[i] for g in games) for i in range(4)]
            for game in games:
                assert json.loads(game.replay_json)["schema"] == "tienlen.replay/1"
                remote = [m for m in json.loads(game.timing_json)["moves"] if not m["house"]]
                assert remote and not any(m["fallback"] for m in remote)
                # the SDK reports its thinking time: the record splits it from the network
                for m in remote:
                    assert 0 <= m["thinking_ms"] <= m["elapsed_ms"]
                    assert m["network_ms"] == pytest.approx(
                        m["elapsed_ms"] - m["thinking_ms"], abs=0.01)
            # 2- and 3-seat tables with a house bot, concurrently on the same streams
            out3 = list(client.play_table(table_id="proc-3", seats=["rnd", "grd", "house:heuristic"],
                                          duplicate_sets=1, seed="p3"))
            assert out3[-1].status == org.TABLE_STATUS_COMPLETED and len(out3) == 5
            with pytest.raises(RefereeError) as info:
                list(client.play_table(table_id="bad", seats=["rnd"], games=1))
            assert info.value.code == "INVALID_ARGUMENT" and not info.value.retryable
    finally:
        stop_all(bots)
    for bot in bots:
        assert bot.returncode == 0, bot.stderr.read().decode() if bot.stderr else ""
    referee.send_signal(signal.SIGTERM)
    assert referee.wait(15) == 0


def test_referee_logs_are_structured_and_never_contain_tokens(
        referee_process: tuple[str, subprocess.Popen], tmp_path: Path) -> None:
    target, referee = referee_process
    bots = start_sdk_bots(target, ["rnd", "grd"])
    try:
        with OrganizerClient(target, ORGANIZER, timeout=60) as client:
            wait_for_bots(client, {"rnd", "grd"})
            list(client.play_table(table_id="logs", seats=["rnd", "grd"], games=1))
        with OrganizerClient(target, "wrong-organizer-token") as client, \
                pytest.raises(RefereeError) as info:
            client.list_bots()
        assert info.value.code == "UNAUTHENTICATED"
    finally:
        stop_all(bots)
    referee.send_signal(signal.SIGTERM)
    assert referee.wait(15) == 0
    text = (tmp_path / "referee.log").read_text()
    records = [json.loads(line) for line in text.splitlines() if line.strip()]
    events = {r.get("event") for r in records}
    assert {"listening", "bot_connected", "table_started", "game_finished",
            "table_finished", "stopped"} <= events
    assert all({"ts", "level", "message"} <= set(r) for r in records)
    for token in [*BOT_TOKENS.values(), ORGANIZER, "wrong-organizer-token"]:
        assert token not in text


def test_organizer_client_against_an_in_process_referee() -> None:
    with referee_in_thread(organizer_token="t0ken") as referee, \
            OrganizerClient(referee.target, "t0ken") as client:
        assert client.list_bots() == []
        out = list(client.play_table(table_id="thread", seats=["house:greedy", "house:random"],
                                     games=2, seed="th", options={}))
        assert [type(o) for o in out] == [org.TableStarted, org.GameRecord, org.GameRecord, org.TableResult]
        assert list(out[0].participants) == ["house:greedy", "house:random"]
        assert list(out[1].seat_names) == ["house:greedy", "house:random"]
        with pytest.raises(RefereeError) as info:
            list(client.play_table(table_id="absent", seats=["ghost", "house:random"],
                                   games=1, connect_deadline_ms=100))
        assert info.value.code == "FAILED_PRECONDITION" and info.value.retryable
        assert "ghost" in info.value.message


@pytest.mark.parametrize("args, env, words", [
    (["--token-store", "nosuchmodule:Store"], {}, "cannot import nosuchmodule"),
    (["--token-store", "file:/nonexistent/tokens.json"], {}, "does not exist"),
    ([], {"TIENLEN_BOT_TOKENS": "no-colon"}, "entry 1 must be bot_id:token"),
    ([], {"TIENLEN_RATE_LIMIT": "abc"}, "argument --rate-limit: invalid int value"),
    (["--rate-limit", "0"], {}, "--rate-limit must be at least 1"),
    (["--max-streams-per-bot", "0"], {}, "--max-streams-per-bot must be at least 1"),
    ([], {"TIENLEN_MAX_TABLES_PER_BOT": "many"},
     "argument --max-tables-per-bot: invalid int value: 'many'"),
    ([], {"TIENLEN_MAX_TABLES_PER_STREAM": "8"},
     "TIENLEN_MAX_TABLES_PER_STREAM is gone: the cap is per bot now, set "
     "TIENLEN_MAX_TABLES_PER_BOT"),
    (["--log-level", "loud"], {}, "argument --log-level: invalid choice"),
    (["--tls-cert", "/nonexistent.pem"], {}, "--tls-cert and --tls-key go together"),
    (["--listen", "999.1.1.1:99999"], {}, "cannot listen on 999.1.1.1:99999"),
])
def test_bad_configuration_gives_a_one_line_error(args: list[str], env: dict,
                                                  words: str) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "referee_service", "--listen", "127.0.0.1:0", *args],
        cwd=ROOT, capture_output=True, text=True, timeout=30,
        env={**os.environ, "TIENLEN_BOT_TOKENS": "", **env})
    assert proc.returncode in (1, 2)
    assert words in proc.stderr
    assert "Traceback" not in proc.stderr
