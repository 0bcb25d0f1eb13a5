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
    from demo.run import DemoConfig

    config = DemoConfig(bots=("random", "random", "greedy", "random"))
    assert config.bot_names() == ["demo-random", "demo-random-2", "demo-greedy", "demo-random-3"]


def test_demo_bot_names_are_unique_and_name_their_example() -> None:
    from hypothesis import given
    from hypothesis import strategies as st

    from demo.run import DemoConfig

    @given(st.lists(st.sampled_from(["random", "greedy", "heuristic"]), min_size=1, max_size=12))
    def check(kinds: list[str]) -> None:
        names = DemoConfig(bots=tuple(kinds)).bot_names()
        assert len(set(names)) == len(names) == len(kinds)
        for kind, name in zip(kinds, names, strict=True):
            assert name == f"demo-{kind}" or name.startswith(f"demo-{kind}-")

    check()


@pytest.mark.django_db
def test_the_demo_never_takes_over_somebody_elses_bot() -> None:
    from django.contrib.auth import get_user_model

    from demo.run import DemoConfig, DemoError, demo_bots_register
    from tournaments import services

    alice = get_user_model().objects.create(username="alice")
    bot, _ = services.bot_create(owner=alice, name="demo-greedy")
    with pytest.raises(DemoError, match="belongs to alice"):
        demo_bots_register(config=DemoConfig())
    bot.refresh_from_db()
    assert bot.owner == alice


@pytest.mark.django_db
def test_a_second_demo_run_reuses_its_bots_with_fresh_tokens() -> None:
    from demo.run import DemoConfig, demo_bots_register
    from tournaments.models import Bot
    from tournaments.tokens import token_hash

    first, _ = demo_bots_register(config=DemoConfig())
    second, _ = demo_bots_register(config=DemoConfig())
    assert [b.bot_id for b in first] == [b.bot_id for b in second]
    assert Bot.objects.count() == 4
    for old, new in zip(first, second, strict=True):
        assert old.token != new.token
        assert Bot.objects.get(pk=new.bot_id).token_hash == token_hash(new.token)
