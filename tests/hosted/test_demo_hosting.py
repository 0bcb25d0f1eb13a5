"""The demo's hosted bot (planner-v1 by default, `run_demo --hosted-bot KIND|none`),
without running the demo: the option is checked, the bot.py it submits is self-contained
and loads as the same bot, and a host that cannot sandbox is said in one line. (The demo
itself, hosted and not, runs in tests/e2e/test_demo.py and tests/e2e/test_demo_command.py.)"""

from __future__ import annotations

import subprocess
import sys

import pytest

from demo.run import DemoBot, DemoConfig

OPTIONS = {"bots": "planner-v2,planner-v1", "seats": 4, "preset": "south", "move_time_ms": 1000,
           "concurrency": 2, "no_serve": False, "host": "127.0.0.1", "port": 8000, "referee_port": 0,
           "timeout": 60}


def test_the_demo_hosts_planner_v1_by_default_and_the_hosted_bot_must_be_one_of_the_bots() -> None:
    assert DemoConfig.from_options(OPTIONS).hosted_name() == "demo-planner-v1"  # by default
    assert DemoConfig.from_options({**OPTIONS, "hosted_bot": "planner-v2"}).hosted_name() == "demo-planner-v2"
    for none in ("none", ""):
        assert DemoConfig.from_options({**OPTIONS, "hosted_bot": none}).hosted_name() == ""
    # without the site (--no-serve) it is submitted through the service the API calls
    assert DemoConfig.from_options({**OPTIONS, "no_serve": True}).hosted_name() == "demo-planner-v1"
    # other bots, and no planner-v1 among them: none hosted unless asked for
    assert DemoConfig.from_options({**OPTIONS, "bots": "greedy,random"}).hosted_name() == ""
    with pytest.raises(ValueError, match="not one of --bots"):
        DemoConfig.from_options({**OPTIONS, "hosted_bot": "greedy"})


def test_a_host_that_cannot_sandbox_is_said_in_one_line_naming_what_is_missing(monkeypatch, settings, tmp_path) -> None:
    from demo.hosting import hosting_problem

    monkeypatch.setenv("PATH", "/nonexistent")  # no bwrap on the PATH
    problem = hosting_problem()
    assert problem is not None and "bubblewrap is not installed" in problem and "\n" not in problem
    monkeypatch.undo()
    monkeypatch.setenv("TIENLEN_HOSTING_RUNTIMES", str(tmp_path / "none"))
    problem = hosting_problem()
    assert problem is not None and "\n" not in problem
    from tournaments.hosting.check import problems
    from tournaments.hosting.process import HostingConfig

    if not problems(HostingConfig.from_env(settings.VAR_DIR)):  # the sandbox is fine: the runtime is named
        assert "runtime python3.11 is not built" in problem and "make hosting-runtimes" in problem


@pytest.mark.parametrize(("kind", "expected"), [("planner-v1", ("planner", "1.0.0")), ("greedy", ("greedy", None))])
def test_the_submitted_file_is_self_contained_and_the_same_bot(kind, expected, tmp_path) -> None:
    from demo.hosting import bot_source

    target = DemoBot(bot_id=0, name="x", kind=kind, token="t").run_target
    (tmp_path / "bot.py").write_text(bot_source(target))
    assert "demo" not in (tmp_path / "bot.py").read_text().split("class ")[0]  # the runtime has no demo package
    code = ("import sys; sys.path = [p for p in sys.path if not p.endswith('platform')]\n"
            "from bots_sdk.loader import load_bot_class\n"
            f"b = load_bot_class({str(tmp_path / 'bot.py')!r}); print(b.name, b.version)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=tmp_path)
    name, version = out.stdout.split()
    assert name == expected[0] and (expected[1] is None or version == expected[1])
