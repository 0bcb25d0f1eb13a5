"""`run_demo` refuses bad arguments with a clear message before starting anything."""

from __future__ import annotations

import socket

import pytest
from django.core.management import CommandError, call_command


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--bots", "heuristic,clever"], "unknown example bot(s) clever"),
        (["--bots", "random,greedy", "--seats", "4"], "need at least 4 bots"),
        (["--preset", "atlantis"], "unknown preset 'atlantis'"),
    ],
)
def test_bad_arguments_are_refused_with_the_reason(args, message) -> None:
    with pytest.raises(CommandError, match=message.replace("(", r"\(").replace(")", r"\)")):
        call_command("run_demo", "--no-serve", *args)


def test_a_busy_web_port_is_refused_before_anything_starts() -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        with pytest.raises(CommandError, match=f"127.0.0.1:{port} is in use"):
            call_command("run_demo", "--port", str(port))


def test_demo_bot_names_are_unique() -> None:
    from tournaments.demo import DemoConfig

    config = DemoConfig(bots=("random", "random", "greedy", "random"))
    assert config.bot_names() == ["demo-random", "demo-random-2", "demo-greedy", "demo-random-3"]


def test_demo_bot_names_are_unique_and_name_their_example() -> None:
    from hypothesis import given
    from hypothesis import strategies as st

    from tournaments.demo import DemoConfig

    @given(st.lists(st.sampled_from(["random", "greedy", "heuristic"]), min_size=1, max_size=12))
    def check(kinds: list[str]) -> None:
        names = DemoConfig(bots=tuple(kinds)).bot_names()
        assert len(set(names)) == len(names) == len(kinds)
        for kind, name in zip(kinds, names, strict=True):
            assert name == f"demo-{kind}" or name.startswith(f"demo-{kind}-")

    check()
