"""Hostile hosted bots in the real sandbox (bubblewrap as an unprivileged slot uid, real
cgroups): each thing a bot author might try to win by any means, and the containment of
each asserted from both sides, what the bot saw and what the host recorded.

The hostile code is tests/hosting/probe_bot.py, run as a bot's bot.py by the Python
runtime's real launcher; PROBE_MODE picks what it tries."""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import socket
import subprocess
import time
from pathlib import Path

import pytest

from referee_service.organizer_client import OrganizerClient
from tournaments.hosting import BotSpec, ExitReason, Host, Limits
from tournaments.hosting.process import HostedBot, SessionEnd
from tournaments.hosting.sandbox import processes_of

from .conftest import ORGANIZER, OTHER_TOKEN, TOKEN

pytestmark = pytest.mark.timeout(180)

PROBE = (Path(__file__).parent / "probe_bot.py").read_text()


def probe(host: Host, code, mode: str, *, limits: Limits | None = None, env=None,
          referees=(), token: str = TOKEN, files=None, timeout: float = 90) -> SessionEnd:
    folder = code(PROBE, **(files or {}))
    bot = host.start(BotSpec(runtime="python3.11", code_dir=folder, token=token,
                             referees=list(referees), limits=limits or Limits(),
                             env={"PROBE_MODE": mode, **(env or {})}, label=f"probe-{mode}"))
    end = bot.wait(timeout)
    if end is None:
        end = bot.stop(0)
        pytest.fail(f"the {mode} probe did not finish within {timeout} s:\n{end.log[-3000:]}")
    return end


def reported(end: SessionEnd) -> dict:
    lines = [line for line in end.log.splitlines() if line.startswith("PROBE ")]
    assert lines, f"the probe reported nothing ({end.reason}: {end.detail}):\n{end.log[-3000:]}"
    return json.loads(lines[-1][len("PROBE "):])


def host_reaches(address: str) -> bool:
    host, port = address.rsplit(":", 1)
    try:
        socket.create_connection((host, int(port)), 2).close()
        return True
    except OSError:
        return False


def outside_address() -> str | None:
    """An address of this host that is not loopback, if it has one."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.connect(("10.255.255.255", 1))
            ip = s.getsockname()[0]
        except OSError:
            return None
    return None if ip.startswith("127.") else ip


def test_no_network_but_the_relay(host, code, referee):
    web = socket.create_server(("0.0.0.0", 0))  # stands for the web site's port
    web.setblocking(False)
    port = web.getsockname()[1]
    targets = {"postgresql": "127.0.0.1:5432", "redis": "127.0.0.1:6379",
               "web": f"127.0.0.1:{port}", "referee_tcp": referee.target}
    ip = outside_address()
    if ip:
        targets["web_outside"] = f"{ip}:{port}"
    reachable_from_host = {name: host_reaches(a) for name, a in targets.items()}
    assert reachable_from_host["web"] and reachable_from_host["referee_tcp"]
    while True:  # forget the host's own test connections
        try:
            web.accept()[0].close()
        except BlockingIOError:
            break
    end = probe(host, code, "net", env={"PROBE_TARGETS": json.dumps(targets)},
                referees=[referee.target])
    found = reported(end)
    for name in targets:
        assert found[name].startswith(("ConnectionRefusedError", "OSError: errno 101")), (name, found)
    assert found["dns"].startswith("gaierror") and found["udp_dns"] == "OSError: errno 101"
    assert found["interfaces"] == ["lo"] and not found["resolv_conf"]
    with pytest.raises(BlockingIOError):
        web.accept()  # nothing ever arrived at the web port
    web.close()
    assert end.reason is ExitReason.EXITED


def test_no_secret_no_other_bot_and_nowhere_to_write(host, code, monkeypatch):
    canary = f"canary-{secrets.token_hex(8)}"
    monkeypatch.setenv("TIENLEN_TEST_CANARY", canary)  # a platform secret in the runner's env
    monkeypatch.setenv("DATABASE_URL", f"postgres://user:{canary}@db/tienlen")
    marker = f"SECRET-OF-BOT-A-{secrets.token_hex(8)}"
    other = host.start(BotSpec(runtime="python3.11", token=OTHER_TOKEN,
                               code_dir=code(PROBE, **{"strategy__py": f"KEY = {marker!r}\n"}),
                               env={"PROBE_MODE": "sleep"}, label="bot-a"))
    try:
        assert other.wait_started(30)
        other_code = other.dir / "bot"
        assert marker in (other_code / "strategy.py").read_text()
        end = probe(host, code, "files", limits=Limits(file_size_mib=8, tmp_mib=48),
                    env={"PROBE_OTHER_PATH": str(other_code), "PROBE_MARKER": marker})
        found = reported(end)
        # the other bot's code: not in its sandbox, not by its host path either
        assert found["marker_seen_at"] == []
        assert found["other_host_path"].startswith("FileNotFoundError")
        # and on the host, the slot uid of one bot cannot read another bot's session
        uid = host.config.uid_base + 5
        peek = subprocess.run(["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups",
                               "cat", str(other_code / "strategy.py")], capture_output=True, text=True)
        assert peek.returncode != 0 and "Permission denied" in peek.stderr
    finally:
        other.stop(0)
    assert found["uid"] == 1000 and found["cap_eff"] == "0000000000000000"
    assert found["shadow"].startswith("FileNotFoundError") and found["passwd"].startswith("FileNotFoundError")
    assert found["pids"] == [1, 2]  # its own PID namespace: nothing of the host
    everything = json.dumps(found["proc"])
    assert canary not in everything and canary not in end.log
    assert "DATABASE_URL" not in everything
    # its own token, in its own environment only (the sandbox's PID 1 never had it)
    assert TOKEN in found["proc"]["2/environ"] and TOKEN not in found["proc_1_environ"]
    assert TOKEN not in found["proc"]["2/cmdline"]
    for path, result in found["writes"].items():
        if path == "/tmp/x":
            assert result == "ok"
        else:
            assert result.startswith(("OSError: errno 30", "PermissionError", "FileNotFoundError",
                                      "OSError: errno 2")), (path, result)
    assert found["one_big_file"] == {"written_mib": 8, "error": "errno 27"}  # EFBIG at 8 MiB
    assert found["fill_error"] == "errno 28" and found["tmp_filled_mib"] <= 48  # ENOSPC
    assert found["unshare_user"] != "ok" and found["mount_tmpfs"] != "ok"


def test_the_token_is_on_no_command_line(host, code):
    bot = host.start(BotSpec(runtime="python3.11", code_dir=code(PROBE), token=TOKEN,
                             env={"PROBE_MODE": "sleep"}))
    try:
        assert bot.wait_started(30)
        lines = {}
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                with contextlib.suppress(OSError):
                    lines[entry] = Path(f"/proc/{entry}/cmdline").read_bytes()
        assert not [pid for pid, line in lines.items() if TOKEN.encode() in line]
        main = bot.bot_pid()
        assert main is not None and TOKEN.encode() in Path(f"/proc/{main}/environ").read_bytes()
        status = Path(f"/proc/{main}/status").read_text()
        uid = int(next(line for line in status.splitlines() if line.startswith("Uid:")).split()[1])
        assert uid == bot.slot.uid and uid != 0  # an unprivileged host uid, never root
    finally:
        bot.stop(0)


def test_three_hundred_forks_stop_at_the_process_cap(host, code):
    end = probe(host, code, "forks", limits=Limits(pids=64))
    found = reported(end)
    assert found["children"] < 64 and found["error"] == "errno 11"  # EAGAIN
    assert end.usage is not None and end.usage.pids_limit_hits > 0


def test_three_gib_is_killed_at_the_memory_cap(host, code):
    end = probe(host, code, "memory", limits=Limits(memory_mib=256))
    assert end.reason is ExitReason.OUT_OF_MEMORY and end.counts_against_bot, end.detail
    assert end.usage is not None and end.usage.oom_kills >= 1
    assert end.signal == 9 and "256 MiB" in end.detail
    allocated = [int(line.split()[1]) for line in end.log.splitlines() if line.startswith("allocated")]
    assert allocated and max(allocated) <= 256
    assert end.usage.memory_peak_bytes is not None and end.usage.memory_peak_bytes <= 256 << 20


def test_eight_spinning_threads_get_their_cpu_quota_and_a_table_plays_beside_them(host, code, referee):
    spinner = host.start(BotSpec(runtime="python3.11", code_dir=code(PROBE),
                                 limits=Limits(cpu_cores=0.25),
                                 env={"PROBE_MODE": "spin", "PROBE_SECONDS": "6"}))
    player = host.start(BotSpec(runtime="python3.11", code_dir=code(PROBE), token=TOKEN,
                                referees=[referee.target]))
    try:
        with OrganizerClient(referee.target, ORGANIZER, timeout=120) as client:
            deadline = time.monotonic() + 60
            while "hosted" not in {b.bot_id for b in client.list_bots()}:
                assert player.running and time.monotonic() < deadline, player.wait(0)
                time.sleep(0.05)
            events = list(client.play_table(table_id="beside-the-spinner", games=4,
                                            seats=["hosted", "house:greedy", "house:random"]))
        assert events[-1].status == 1 and list(events[-1].strikes) == [0, 0, 0]
        end = spinner.wait(60)
        assert end is not None, "the spinner did not finish"
    finally:
        spinner.stop(0)
        player.stop(0)
    found = reported(end)
    assert end.usage is not None and end.usage.cpu_seconds is not None
    # 8 threads that could use 8 cores' time got a quarter of a core (a margin for the
    # interpreter's start and accounting granularity; unthrottled they would take every
    # core of this machine)
    quota = 0.25 * found["wall"]
    assert end.usage.cpu_seconds <= quota * 1.25 + 0.5, (end.usage, found)
    if end.usage.cpu_seconds >= 0.7 * quota:  # it ran at its cap (not starved by other load)
        assert end.usage.cpu_throttled > 0, end.usage


def test_sleeping_past_the_clock_is_the_referees_business(host, code, referee):
    sleeper = code('''
        import time
        from bots_sdk import Bot

        class Sleeper(Bot):
            threaded = False  # play on the event loop: the whole process stops answering

            def play(self, view):
                time.sleep(2)
                return view.legal_plays()[0] if view.legal_plays() else view.pass_turn()
    ''')
    bot = host.start(BotSpec(runtime="python3.11", code_dir=sleeper, token=TOKEN,
                             referees=[referee.target]))
    try:
        with OrganizerClient(referee.target, ORGANIZER, timeout=120) as client:
            deadline = time.monotonic() + 60
            while "hosted" not in {b.bot_id for b in client.list_bots()}:
                assert bot.running and time.monotonic() < deadline, bot.wait(0)
                time.sleep(0.05)
            started = time.monotonic()
            events = list(client.play_table(table_id="asleep", games=1, move_time_ms=200,
                                            seats=["hosted", "house:greedy"]))
            took = time.monotonic() - started
        result = events[-1]
        assert result.status == 1  # completed: the clock moved for it, no hang
        assert result.strikes[0] > 0
        assert took < 90
        assert bot.running  # still alive: timeouts are the referee's to judge, not the runner's
    finally:
        bot.stop(0)


def test_a_gigabyte_of_stderr_keeps_a_bounded_log(host, code, hosting_config):
    end = probe(host, code, "flood")
    assert end.reason is ExitReason.EXITED and end.log_truncated
    assert end.log_bytes >= 1 << 30
    assert len(end.log.encode()) <= 1024 * 1024 + 200
    assert "bytes left out" in end.log and end.log.rstrip().endswith("flood done")
    used = sum(f.stat().st_size for f in Path(hosting_config.state_dir).rglob("*") if f.is_file())
    assert used < 1 << 20  # nothing of it went to disk


def test_a_double_forked_grandchild_ignoring_sigterm_dies_on_stop(host, code):
    bot = host.start(BotSpec(runtime="python3.11", code_dir=code(PROBE),
                             env={"PROBE_MODE": "grandchild"}))
    deadline = time.monotonic() + 30
    while "grandchild" not in bot.log.text():
        assert bot.running and time.monotonic() < deadline, bot.wait(0)
        time.sleep(0.05)
    assert len(processes_of(bot.slot.uid)) >= 4  # bwrap, its pid 1, the bot, the grandchild
    end = bot.stop(grace_s=1)
    assert end.reason is ExitReason.STOPPED and not end.counts_against_bot
    assert processes_of(bot.slot.uid) == []
    assert not host.cgroups.sessions()


def test_a_crash_is_the_bots_and_a_broken_start_is_the_platforms(host, code, hosting_config):
    end = probe(host, code, "crash")
    assert end.reason is ExitReason.CRASHED and end.exit_code == 2 and end.counts_against_bot
    assert "ValueError: the bot's own bug" in end.last_lines
    end = probe(host, code, "exit3")
    assert (end.reason, end.exit_code) == (ExitReason.CRASHED, 3)

    import tempfile

    # a runtime that lost its interpreter (where the slot uids can read it)
    broken = Path(tempfile.mkdtemp(prefix="broken-runtime-", dir=hosting_config.state_dir))
    os.chmod(broken, 0o755)
    from tournaments.hosting.runtimes import Runtime

    host._runtimes["python3.11"] = Runtime("python3.11", broken, {})
    try:
        end = probe(host, code, "sleep")
    finally:
        del host._runtimes["python3.11"]
    assert end.reason is ExitReason.START_FAILED and end.fault == "platform"
    assert not end.counts_against_bot and not end.started
    assert "bwrap: execvp /runtime/venv/bin/python: No such file" in end.detail, end.detail
    broken.rmdir()


def test_a_stopped_bot_leaves_cleanly(host, code, referee):
    bot = host.start(BotSpec(runtime="python3.11", code_dir=code(PROBE), token=TOKEN,
                             referees=[referee.target]))
    with OrganizerClient(referee.target, ORGANIZER, timeout=60) as client:
        deadline = time.monotonic() + 60
        while "hosted" not in {b.bot_id for b in client.list_bots()}:
            assert bot.running and time.monotonic() < deadline, bot.wait(0)
            time.sleep(0.05)
    end = bot.stop(grace_s=20)
    assert end.reason is ExitReason.STOPPED and end.exit_code == 0  # the SDK left on SIGTERM
    assert "bye:" in end.log and end.relay is not None and end.relay.accepted >= 1
    assert end.usage is not None and end.usage.memory_peak_bytes


def test_the_development_mode_runs_without_a_sandbox_and_says_so(hosting_config, code, caplog,
                                                                 python_runtime):
    import dataclasses

    config = dataclasses.replace(hosting_config, unsandboxed=True)
    dev = Host(config)
    try:
        with caplog.at_level("WARNING", logger="tournaments.hosting"):
            bot: HostedBot = dev.start(BotSpec(runtime="python3.11", code_dir=code(PROBE),
                                               env={"PROBE_MODE": "net", "PROBE_TARGETS": "{}"}))
            end = bot.wait(60)
        assert end is not None and not end.sandboxed
        assert "UNSANDBOXED DEVELOPMENT MODE" in end.detail
        assert sum("UNSANDBOXED DEVELOPMENT MODE" in r.message for r in caplog.records) >= 2
        # no network namespace of its own: it sees the host's interfaces
        assert reported(end)["interfaces"] == sorted(n for _, n in socket.if_nameindex())
    finally:
        dev.close()


def test_bad_code_or_a_bad_spec_is_refused_before_anything_starts(host, code):
    folder = code(PROBE)
    os.symlink("/etc/shadow", folder / "shadow")
    with pytest.raises(ValueError, match="only files and folders: shadow"):
        host.start(BotSpec(runtime="python3.11", code_dir=folder))
    with pytest.raises(ValueError, match="unknown runtime 'cobol'"):
        host.start(BotSpec(runtime="cobol", code_dir=code(PROBE)))
    with pytest.raises(ValueError, match="no bot.js"):
        host.start(BotSpec(runtime="python3.11", entry="bot.js", code_dir=code(PROBE)))
    assert not host.sessions and not host.cgroups.sessions()


def test_without_a_v2_hierarchy_the_v1_freezer_kills_the_tree(host, code):
    """A pure v1 host (no unified hierarchy): limits from v1, the kill by freezing the
    cgroup and SIGKILLing what is in it."""
    from tournaments.hosting.cgroups import CgroupHost, mounted_hierarchies

    v1 = CgroupHost([h for h in mounted_hierarchies() if h.version == 1], host.cgroups.base)
    if "freezer" not in v1.placement or v1.missing():
        pytest.skip("this host has no writable v1 memory, pids, cpu and freezer hierarchies")
    host.cgroups = v1
    bot = host.start(BotSpec(runtime="python3.11", code_dir=code(PROBE),
                             env={"PROBE_MODE": "grandchild"}))
    deadline = time.monotonic() + 30
    while "grandchild" not in bot.log.text():
        assert bot.running and time.monotonic() < deadline, bot.wait(0)
        time.sleep(0.05)
    assert bot.cgroup is not None and "freezer" in {h.mount.name for h in bot.cgroup.paths}
    assert len(bot.cgroup.procs()) >= 3  # its pid 1, the bot, the grandchild (and its parent)
    bot.cgroup.kill()  # freeze, SIGKILL each, thaw: what stop() does after the grace
    end = bot.wait(30)
    assert end is not None and end.signal == 9 and end.usage is not None
    assert end.usage.cpu_seconds is not None  # from v1 cpuacct
    assert processes_of(bot.slot.uid) == [] and not v1.sessions()
