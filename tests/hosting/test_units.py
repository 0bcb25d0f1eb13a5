"""The parts of hosting that need no sandbox: the bounded log, the exit classification,
the bwrap command line, the socket names the relay and both SDKs agree on, the slots, the
configuration and the check's one-line refusals."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bots_sdk.client import ClientError, parse_target, referee_socket_map, referee_socket_name
from tournaments.hosting import nohop
from tournaments.hosting.cgroups import CgroupHost, CgroupUsage, mounted_hierarchies
from tournaments.hosting.check import SandboxUnavailable, problems, require_sandbox
from tournaments.hosting.process import (
    UNSANDBOXED_VALUE,
    BoundedLog,
    ExitReason,
    HostingConfig,
    SessionEnd,
    _copy_code,
    check_code,
    classify,
)
from tournaments.hosting.sandbox import Binds, Limits, SlotPool, bwrap_argv, secret_args

from .conftest import CGROUP_BASE

ROOT = Path(__file__).resolve().parents[2]

# ---------------------------------------------------------------------- the bounded log


@given(st.lists(st.binary(max_size=5000), max_size=60), st.integers(1024, 20_000))
def test_the_log_keeps_its_beginning_and_end_within_its_limit(chunks, limit):
    log = BoundedLog(limit)
    for chunk in chunks:
        log.write(chunk)
    everything = b"".join(chunks)
    assert log.total == len(everything)
    kept = bytes(log.head) + log.tail_bytes()
    assert len(kept) <= log.limit
    if len(everything) <= log.limit:
        assert not log.truncated and kept == everything
    else:
        assert log.truncated
        assert everything.startswith(bytes(log.head)) and len(log.head) == log.limit // 4
        assert everything.endswith(log.tail_bytes())
        assert f"{len(everything) - len(kept)} bytes left out" in log.text()


def test_a_flood_costs_no_more_than_the_limit():
    log = BoundedLog(64 * 1024)
    chunk = b"x" * 65536
    for _ in range(2048):  # 128 MiB
        log.write(chunk)
    log.write(b"\nTraceback (most recent call last):\n  File \"bot.py\", line 3\nValueError: boom\n")
    assert log.total > 128 * 1024 * 1024 and log.truncated
    assert len(log.text()) < 64 * 1024 + 200
    assert log.last_lines().startswith("Traceback") and log.last_lines().endswith("ValueError: boom")


# ---------------------------------------------------------------------- whose fault


def usage(**kw) -> CgroupUsage:
    base = dict(memory_peak_bytes=10 << 20, memory_current_bytes=0, memory_limit_hits=0,
                oom_kills=0, pids_limit_hits=0, cpu_seconds=1.0, cpu_throttled=0)
    return CgroupUsage(**{**base, **kw})


CAP = 256 << 20


@pytest.mark.parametrize("kw, reason, fault", [
    (dict(started=False, status=1), ExitReason.START_FAILED, "platform"),
    (dict(started=True, status=1, start_error="cannot write to cgroup.procs"),
     ExitReason.START_FAILED, "platform"),
    (dict(started=False, status=-9, stop_requested=True), ExitReason.STOPPED, "none"),
    (dict(started=True, status=0, stop_requested=True), ExitReason.STOPPED, "none"),
    (dict(started=True, status=137, usage=usage(oom_kills=1, memory_limit_hits=4)),
     ExitReason.OUT_OF_MEMORY, "bot"),
    (dict(started=True, status=137, usage=usage(oom_kills=1, memory_peak_bytes=CAP)),
     ExitReason.OUT_OF_MEMORY, "bot"),
    (dict(started=True, status=137, usage=usage(oom_kills=1), host_oom_delta=1),
     ExitReason.HOST_OUT_OF_MEMORY, "platform"),
    # a SIGKILL of its own, with no OOM anywhere, is the bot's
    (dict(started=True, status=137, host_oom_delta=1), ExitReason.CRASHED, "bot"),
    (dict(started=True, status=2), ExitReason.CRASHED, "bot"),
    (dict(started=True, status=134), ExitReason.CRASHED, "bot"),
    (dict(started=True, status=0), ExitReason.EXITED, "bot"),
    (dict(started=True, status=-9, deadline_hit=True), ExitReason.TIMED_OUT, "bot"),
])
def test_each_end_is_the_fault_of_the_right_party(kw, reason, fault):
    args = dict(started=True, stop_requested=False, deadline_hit=False, status=None, usage=None,
                memory_cap=CAP, host_oom_delta=0)
    got, detail, code, sig = classify(**{**args, **kw})
    assert got is reason, detail
    end = SessionEnd(reason=got, detail=detail, exit_code=code, signal=sig, log="", log_bytes=0,
                     log_truncated=False, last_lines="", started=True, sandboxed=True,
                     started_at=0, ended_at=0, usage=None, relay=None)
    assert end.fault == fault and end.counts_against_bot == (fault == "bot")
    if kw.get("status") == 134:
        assert sig == 6 and "SIGABRT" in detail
    if reason is ExitReason.OUT_OF_MEMORY:
        assert "256 MiB" in detail


# ---------------------------------------------------------------------- the command line


def test_the_bwrap_command_line_keeps_secrets_off_it_and_remounts_the_root_last():
    argv = bwrap_argv(["/runtime/venv/bin/python", "bot.py"],
                      binds=Binds(runtime=Path("/rt"), bot=Path("/code"), sockets=Path("/socks")),
                      env={"TIENLEN_SERVER": "unix:/run/tienlen/referee/seed.sock"},
                      limits=Limits(tmp_mib=32), args_fd=7, json_status_fd=8, block_fd=9)
    for flag in ("--unshare-all", "--die-with-parent", "--new-session", "--clearenv",
                 "--disable-userns"):
        assert flag in argv
    assert argv[argv.index("--cap-drop") + 1] == "ALL"
    # --setenv after --clearenv (before it, it would be wiped); the secrets come by fd
    assert argv.index("--clearenv") < argv.index("--setenv") < argv.index("--args")
    assert argv[argv.index("--args") + 1] == "7"
    mounts = [i for i, a in enumerate(argv) if a in ("--ro-bind", "--bind", "--tmpfs", "--proc",
                                                     "--dev", "--symlink", "--remount-ro",
                                                     "--ro-bind-try", "--dev-bind")]
    assert argv[mounts[-1]:mounts[-1] + 2] == ["--remount-ro", "/"]
    assert "--bind" not in argv and "--dev-bind" not in argv  # nothing writable is bound
    assert argv[argv.index("--tmpfs") - 4:argv.index("--tmpfs") + 2] == [
        "--size", str(32 << 20), "--perms", "1777", "--tmpfs", "/tmp"]
    assert tuple(argv[argv.index("/socks"):argv.index("/socks") + 2]) == ("/socks", "/run/tienlen/referee")
    assert argv[-3:] == ["--", "/runtime/venv/bin/python", "bot.py"]
    assert secret_args({"TIENLEN_TOKEN": "s3cr3t"}) == b"--setenv\0TIENLEN_TOKEN\0s3cr3t\0"
    with pytest.raises(ValueError):
        secret_args({"A": "x\0y"})


def test_limits_refuse_nonsense():
    with pytest.raises(ValueError, match="memory_mib"):
        Limits(memory_mib=0)
    with pytest.raises(ValueError, match="cpu_cores"):
        Limits(cpu_cores=0)


# ---------------------------------------------------------------------- the SDKs


def test_the_sdk_accepts_unix_targets_and_maps_pool_addresses_to_sockets():
    assert parse_target("unix:/run/tienlen/referee/seed.sock") == "unix:/run/tienlen/referee/seed.sock"
    assert parse_target("10.0.0.5:50051") == "10.0.0.5:50051"
    for bad in ("unix:", "unix:/", "nowhere", "host:99999"):
        with pytest.raises(ClientError, match="HOST:PORT or unix:PATH|needs a socket path"):
            parse_target(bad)
    mapping = referee_socket_map("/run/tienlen/referee/")
    name = referee_socket_name("10.0.0.5:50051")
    assert mapping("10.0.0.5:50051") == f"unix:/run/tienlen/referee/{name}"
    assert name.endswith(".sock") and len(name) == 21
    assert referee_socket_name("10.0.0.6:50051") != name


@pytest.mark.skipif(shutil.which("node") is None, reason="Node.js is not installed")
def test_the_javascript_example_dials_the_same_socket_names():
    example = ROOT / "bots_sdk" / "examples" / "javascript" / "bot.js"
    source = example.read_text()
    start = source.index("function dialAddress")
    end = source.index("\n}\n", start) + 3
    script = source[start:end] + 'console.log(dialAddress("10.0.0.5:50051", "/run/tienlen/referee/"));'
    out = subprocess.run(["node", "-e", script], capture_output=True, text=True, timeout=30)
    assert out.stdout.strip() == referee_socket_map("/run/tienlen/referee")("10.0.0.5:50051")


def test_the_cli_takes_a_unix_server():
    import argparse

    from bots_sdk.runner import add_connection_args

    parser = argparse.ArgumentParser()
    add_connection_args(parser)
    assert parser.parse_args(["--server", "unix:/tmp/x.sock"]).server == "unix:/tmp/x.sock"
    assert "unix:PATH" in parser.format_help()


# ---------------------------------------------------------------------- slots, code, config


def test_two_processes_never_hold_one_slot(tmp_path):
    pool = SlotPool(tmp_path, uid_base=1_700_000, count=2)
    first = pool.claim()
    assert first is not None and first.slot.uid == 1_700_000
    # another process sees slot 0 taken, takes slot 1, and then none is left
    script = (f"import sys; sys.path.insert(0, {str(ROOT)!r});"
              "from pathlib import Path; from tournaments.hosting.sandbox import SlotPool;"
              f"p = SlotPool(Path({str(tmp_path)!r}), 1_700_000, 2); a = p.claim(); b = p.claim();"
              "print(a.slot.index, b)")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert out.stdout.split() == ["1", "None"], out.stderr
    first.release()
    again = pool.claim()
    assert again is not None and again.slot.index == 0  # the dead process's slot is free too
    again.release()


def test_a_bots_code_may_not_smuggle_links_or_devices(tmp_path):
    src = tmp_path / "src"
    (src / "pkg").mkdir(parents=True)
    (src / "bot.py").write_text("x = 1\n")
    (src / "pkg" / "util.py").write_text("y = 2\n")
    _copy_code(src, tmp_path / "ok", None)
    assert (tmp_path / "ok" / "pkg" / "util.py").read_text() == "y = 2\n"
    os.symlink("/etc/shadow", src / "shadow")
    with pytest.raises(ValueError, match="only files and folders: shadow"):
        check_code(src)
    with pytest.raises(ValueError, match="only files and folders: shadow"):
        _copy_code(src, tmp_path / "bad", None)
    assert not (tmp_path / "bad").exists()


def test_the_development_mode_takes_one_explicit_value():
    assert not HostingConfig.from_env(Path("/v"), {}).unsandboxed
    assert HostingConfig.from_env(Path("/v"), {"TIENLEN_HOSTING_UNSANDBOXED": UNSANDBOXED_VALUE}).unsandboxed
    for value in ("1", "yes", "true"):
        with pytest.raises(ValueError, match="trusted-bots-only"):
            HostingConfig.from_env(Path("/v"), {"TIENLEN_HOSTING_UNSANDBOXED": value})
    config = HostingConfig.from_env(Path("/v"), {"TIENLEN_SANDBOX_UID_BASE": "2000000",
                                                 "TIENLEN_SANDBOX_SLOTS": "3"})
    assert (config.uid_base, config.slots, config.state_dir) == (2_000_000, 3, Path("/v/hosting"))


def test_the_check_refuses_in_one_line_naming_what_is_missing(tmp_path, hosting_config):
    config = HostingConfig(state_dir=tmp_path / ("x" * 80), runtimes_dir=tmp_path,
                           bwrap="no-such-bwrap-here", uid_base=0 + 1000, slots=1,
                           cgroup_base=CGROUP_BASE)
    found = problems(config, probe=False)
    assert any("bubblewrap is not installed" in p for p in found)
    assert any("too long for the unix socket paths" in p for p in found)
    with pytest.raises(SandboxUnavailable) as info:
        require_sandbox(config)
    assert "\n" not in str(info.value)
    assert str(info.value).startswith("cannot run hosted bots on this host: ")


def test_a_runtime_not_built_is_named_with_the_command_that_builds_it(tmp_path, capsys, monkeypatch):
    from tournaments.hosting import check

    config = HostingConfig(state_dir=tmp_path / "state", runtimes_dir=tmp_path / "runtimes")
    found = check.runtime_problems(config)
    assert [p.split(" is not built")[0] for p in found] == ["runtime node20", "runtime python3.11"]
    assert all("make hosting-runtimes" in p and str(tmp_path / "runtimes") in p for p in found)
    assert check.runtime_problems(config, ["python3.11"]) == found[1:]
    # `python -m tournaments.hosting.check` says so too (exit status 1), even in the
    # development mode, which skips only the sandbox
    monkeypatch.setenv("TIENLEN_HOSTING_RUNTIMES", str(tmp_path / "runtimes"))
    monkeypatch.setenv("TIENLEN_HOSTING_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("TIENLEN_HOSTING_UNSANDBOXED", "trusted-bots-only")
    assert check.main([]) == 1
    out = capsys.readouterr().out
    assert "runtime python3.11 is not built" in out and "make hosting-runtimes" in out


def test_missing_cgroup_controllers_are_named(tmp_path):
    mountinfo = tmp_path / "mountinfo"
    mountinfo.write_text(
        "30 25 0:26 / /sys/fs/cgroup/pids rw,relatime shared:9 - cgroup cgroup rw,pids\n"
        "31 25 0:27 / /nowhere/unified rw,relatime shared:10 - cgroup2 cgroup2 rw\n")
    hierarchies = mounted_hierarchies(mountinfo)
    assert [(h.version, sorted(h.controllers)) for h in hierarchies] == [(1, ["pids"]), (2, [])]
    host = CgroupHost(hierarchies)
    assert host.missing() == ["memory", "cpu"]


def test_on_cgroup_v2_the_limits_go_to_the_v2_files(tmp_path):
    """The v2 files a session's limits are written to (this machine's v2 hierarchy has no
    controllers to try them on for real: a directory stands in for the hierarchy)."""
    from tournaments.hosting.cgroups import CgroupLimits, Hierarchy

    root = tmp_path / "unified"
    root.mkdir()
    (root / "cgroup.controllers").write_text("cpuset cpu io memory hugetlb pids\n")
    v2 = Hierarchy(2, root, frozenset({"cpu", "memory", "pids", "io"}))
    host = CgroupHost([v2], base="tienlen-sandbox")
    assert host.missing() == [] and host.describe().startswith("memory: v2, pids: v2, cpu: v2")
    cg = host.create("3-abc", CgroupLimits(memory_bytes=256 << 20, pids=64, cpu_cores=0.5,
                                           cpu_weight=50))
    session = root / "tienlen-sandbox" / "3-abc"
    assert (root / "cgroup.subtree_control").read_text() == "+memory +pids +cpu"
    assert (root / "tienlen-sandbox" / "cgroup.subtree_control").read_text() == "+memory +pids +cpu"
    assert (session / "memory.max").read_text() == str(256 << 20)
    assert (session / "pids.max").read_text() == "64"
    assert (session / "cpu.max").read_text() == "50000 100000"
    assert (session / "cpu.weight").read_text() == "50"
    (session / "memory.events").write_text("low 0\nhigh 0\nmax 9\noom 2\noom_kill 1\n")
    (session / "memory.peak").write_text(f"{256 << 20}\n")
    (session / "cpu.stat").write_text("usage_usec 1500000\nnr_throttled 7\n")
    (session / "pids.events").write_text("max 3\n")
    use = cg.usage()
    assert (use.oom_kills, use.memory_limit_hits, use.pids_limit_hits, use.cpu_seconds,
            use.cpu_throttled) == (1, 2, 3, 1.5, 7)


@pytest.fixture
def open_dir():
    """A directory every user may enter (pytest's tmp_path is under a 0700 one)."""
    import shutil
    import tempfile

    path = Path(tempfile.mkdtemp(prefix="tlh-reach-", dir="/var/tmp"))
    os.chmod(path, 0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def test_a_checkout_others_cannot_enter_keeps_its_hosting_state_where_the_sandbox_can_reach(open_dir):
    """`mktemp -d` (a fresh clone in CI) and a 0700 home keep the slot uids out of var/:
    every sandbox failed with "Can't find source path ... Permission denied". The default
    then moves to a directory of the checkout's own under /var/tmp, and the host check
    names a directory the sandbox cannot reach."""
    from tournaments.hosting import runtimes
    from tournaments.hosting.check import problems
    from tournaments.hosting.process import HostingConfig

    closed = open_dir / "closed"
    (closed / "checkout" / "var").mkdir(parents=True)
    os.chmod(closed, 0o700)
    var = closed / "checkout" / "var"
    moved = runtimes.default_hosting_dir(var)
    assert moved.parent == Path("/var/tmp") and moved.name.startswith("tienlen-hosting-")
    assert runtimes.default_hosting_dir(var) == moved  # the same checkout: the same place
    assert runtimes.reachable_by_others(moved)
    assert HostingConfig.from_env(var, env={}).state_dir == moved
    os.chmod(closed, 0o755)
    assert runtimes.default_hosting_dir(var) == var / "hosting"
    os.chmod(closed, 0o700)
    unreachable = HostingConfig(state_dir=var / "hosting", runtimes_dir=var / "hosting" / "runtimes")
    found = problems(unreachable, probe=False)
    assert any("other users cannot enter" in p and "TIENLEN_HOSTING_DIR" in p for p in found), found
    assert any("TIENLEN_HOSTING_RUNTIMES" in p for p in found), found


# ---------------------------------------------------------------------- no hop


@pytest.fixture
def open_tmp() -> Iterator[Path]:
    """A temporary directory other users can enter (pytest's own keep them out)."""
    path = Path(tempfile.mkdtemp(prefix="tlu-", dir="/tmp"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def test_no_hop_dials_a_referees_own_socket_when_it_has_one_else_the_relay(open_tmp):
    tmp_path = open_tmp
    local = tmp_path / "local"
    local.mkdir()
    here, elsewhere = "10.0.0.5:50051", "10.0.0.6:50051"
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(local / referee_socket_name(here)))
    mapping = referee_socket_map("/run/tienlen/referee", str(local))
    assert mapping(here) == f"unix:{local}/{referee_socket_name(here)}"
    assert mapping(elsewhere) == f"unix:/run/tienlen/referee/{referee_socket_name(elsewhere)}"
    assert referee_socket_map("/run/tienlen/referee")(here) == f"unix:/run/tienlen/referee/{referee_socket_name(here)}"
    # the runner's side: what it finds there, and the seed only on a live socket
    assert nohop.directory_problem(local) is None
    assert nohop.local_sockets(local, [elsewhere, here]) == {here: local / referee_socket_name(here)}
    assert nohop.first_accepting([local / referee_socket_name(here)]) is None  # bound, not listening
    listener.listen()
    assert nohop.first_accepting([local / referee_socket_name(here)]) == local / referee_socket_name(here)
    listener.close()
    (local / "notes").write_text("x")
    assert "holds more than referee sockets (notes)" in (nohop.directory_problem(local) or "")
    (local / "notes").unlink()
    local.chmod(0o777)
    assert "writable by every user" in (nohop.directory_problem(local) or "")
    local.chmod(0o750)
    assert f"other users cannot enter {local}" in (nohop.directory_problem(local) or "")
    local.chmod(0o755)
    tmp_path.chmod(0o700)
    assert f"other users cannot enter {tmp_path}" in (nohop.directory_problem(local) or "")
    tmp_path.chmod(0o755)
    (tmp_path / "link").symlink_to(local)
    assert "not a directory" in (nohop.directory_problem(tmp_path / "link") or "")
    assert "No such file" in (nohop.directory_problem(tmp_path / "nowhere") or "")
    if shutil.which("node"):
        example = ROOT / "bots_sdk" / "examples" / "javascript" / "bot.js"
        source = example.read_text()
        start = source.index("function dialAddress")
        end = source.index("\n}\n", start) + 3
        (local / referee_socket_name(here)).touch()  # existence is what the bot checks
        script = source[start:end] + "".join(
            f'console.log(dialAddress("{a}", "/run/tienlen/referee/", "{local}"));' for a in (here, elsewhere))
        out = subprocess.run(["node", "-e", script], capture_output=True, text=True, timeout=30)
        assert out.stdout.split() == [mapping(here), mapping(elsewhere)]


def test_no_hop_binds_the_referees_directory_read_only_and_is_named_by_the_environment(tmp_path):
    argv = bwrap_argv(["true"], binds=Binds(runtime=Path("/rt"), bot=Path("/code"), sockets=Path("/socks"),
                                            local=Path("/run/tienlen/referees")),
                      env={}, limits=Limits())
    at = argv.index("/run/tienlen/referees")
    assert argv[at - 1:at + 2] == ["--ro-bind", "/run/tienlen/referees", "/run/tienlen/local"]
    assert "/run/tienlen/referees" not in bwrap_argv(["true"], binds=Binds(runtime=Path("/rt"), bot=Path("/code")),
                                                     env={}, limits=Limits())
    assert HostingConfig.from_env(Path("/v"), {"TIENLEN_HOSTING_REFEREE_SOCKETS": str(tmp_path)}).referee_sockets \
        == tmp_path
    assert HostingConfig.from_env(Path("/v"), {"TIENLEN_HOSTING_REFEREE_SOCKETS": "none"}).referee_sockets is None
    default = HostingConfig.from_env(Path("/v"), {}).referee_sockets
    assert default == (Path("/run/tienlen/referees") if Path("/run/tienlen/referees").is_dir() else None)
