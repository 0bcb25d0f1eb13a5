"""The demo's hosted bot (`run_demo --hosted-bot KIND`), without running the demo: the
option is checked, and the bot.py it submits is self-contained and loads as the same bot.
(The demo itself was run with `--hosted-bot planner-v1`: see docs/hosting.md.)"""

from __future__ import annotations

import subprocess
import sys

import pytest

from demo.run import DemoBot, DemoConfig

OPTIONS = {"bots": "planner-v2,planner-v1", "seats": 4, "preset": "south", "move_time_ms": 1000,
           "concurrency": 2, "no_serve": False, "host": "127.0.0.1", "port": 8000, "referee_port": 0,
           "timeout": 60}


def test_the_hosted_bot_must_be_one_of_the_bots_and_needs_the_site() -> None:
    assert DemoConfig.from_options({**OPTIONS, "hosted_bot": "planner-v1"}).hosted_name() == "demo-planner-v1"
    assert DemoConfig.from_options(OPTIONS).hosted_name() == ""
    with pytest.raises(ValueError, match="not one of --bots"):
        DemoConfig.from_options({**OPTIONS, "hosted_bot": "greedy"})
    with pytest.raises(ValueError, match="needs the web site"):
        DemoConfig.from_options({**OPTIONS, "hosted_bot": "planner-v1", "no_serve": True})


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
