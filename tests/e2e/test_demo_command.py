"""`run_demo` refuses bad arguments with a clear message before starting anything."""

from __future__ import annotations

import socket

import pytest
from django.core.management import CommandError, call_command

from tests.needs import need_postgresql


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--bots", "heuristic,clever"], "unknown example bot(s) clever"),
        (["--bots", "random,greedy", "--house-bots", "", "--seats", "4"], "need at least 4 bots"),
        (["--house-bots", "greedy,oracle"], "unknown house bot(s) oracle"),
        (["--preset", "atlantis"], "unknown preset 'atlantis'"),
        (["--games-per-table", "4", "--duplicate-sets", "1"], "give one of them, not both"),
        (["--hosted-bot", "search"], "--hosted-bot: 'search' is not one of --bots (planner-v2, planner-v1)"),
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
    from tournaments.services.accounts import bot_create

    alice = get_user_model().objects.create(username="alice")
    bot, _ = bot_create(owner=alice, name="demo-planner-v1")
    with pytest.raises(DemoError, match="belongs to alice"):
        demo_bots_register(config=DemoConfig())
    bot.refresh_from_db()
    assert bot.owner == alice
    # Nor a bot named like one of its house bots.
    from demo.run import demo_house_bots_register
    from tournaments.models import Bot

    # Made as before `house-` names were kept for house bots (bot_create refuses it now).
    other = Bot.objects.create(owner=alice, name="house-greedy")
    with pytest.raises(DemoError, match="is not the demo's house bot"):
        demo_house_bots_register(config=DemoConfig(), owner=get_user_model().objects.create(username="o", is_staff=True))
    other.refresh_from_db()
    assert other.owner == alice and other.house_bot == ""


@pytest.mark.django_db
def test_each_demo_bot_has_an_owner_of_its_own_and_an_older_runs_bots_move_to_them() -> None:
    """So a newcomer's bot with three demo bots is four owners at a table of 4 (the owner
    rule refused the demo's bots as one owner's), and the demo's round robin is bound by no
    same-owner pair."""
    from django.contrib.auth import get_user_model

    from demo.run import ORGANISER, DemoConfig, demo_bots_register
    from tournaments.models import Bot
    from tournaments.services.accounts import bot_create

    organiser = get_user_model().objects.create(username=ORGANISER, is_staff=True)
    old, _ = bot_create(owner=organiser, name="demo-planner-v1")  # as runs before this change made it
    bots, _ = demo_bots_register(config=DemoConfig())
    owners = {b.name: Bot.objects.get(pk=b.bot_id).owner for b in bots}
    assert {name: o.username for name, o in owners.items()} == {name: f"{name}-author" for name in owners}
    assert not any(o.has_usable_password() or o.is_staff for o in owners.values())
    old.refresh_from_db()
    assert old.owner.username == "demo-planner-v1-author"
    assert not organiser.bots.exists()


@pytest.mark.django_db
def test_a_stranger_named_like_a_demo_author_is_never_given_a_demo_bot() -> None:
    from django.contrib.auth import get_user_model

    from demo.run import DemoConfig, DemoError, demo_bots_register
    from tournaments.models import Bot

    get_user_model().objects.create_user("demo-greedy-author", password="mallory-pw-12345")
    with pytest.raises(DemoError, match="'demo-greedy-author' exists and is not one of the demo's accounts"):
        demo_bots_register(config=DemoConfig(bots=("greedy", "random", "random", "heuristic")))
    assert not Bot.objects.filter(owner__username="demo-greedy-author").exists()


@pytest.mark.django_db
def test_a_second_demo_run_reuses_its_bots_with_fresh_tokens() -> None:
    from demo.run import DemoConfig, demo_bots_register
    from tournaments.models import Bot
    from tournaments.tokens import token_hash

    first, _ = demo_bots_register(config=DemoConfig())
    second, _ = demo_bots_register(config=DemoConfig())
    assert [b.bot_id for b in first] == [b.bot_id for b in second]
    assert Bot.objects.count() == len(DemoConfig().bots) == 2
    for old, new in zip(first, second, strict=True):
        assert old.token != new.token
        assert Bot.objects.get(pk=new.bot_id).token_hash == token_hash(new.token)


def test_the_default_demo_has_two_versions_of_one_bot_each_runnable() -> None:
    from bots_sdk.loader import load_bot_class
    from demo.run import DemoBot, DemoConfig

    config = DemoConfig()
    assert config.bot_names() == ["demo-planner-v2", "demo-planner-v1"]
    versions = set()
    for kind in ("planner-v1", "planner-v2"):
        target = DemoBot(bot_id=0, name="x", kind=kind, token="t").run_target
        bot = load_bot_class(target)  # what `tienlen-bot run` does with it
        versions.add((bot.name, bot.version))
    assert versions == {("planner", "1.0.0"), ("planner", "2.0.0")}


@pytest.mark.django_db
def test_the_default_demo_plays_the_default_format_as_documented() -> None:
    """Field duplicates where only house bots share deals: two remote planners and ten
    house bots, 33 tables in 11 rounds, about 350 games; every round has a deal group of
    several tables, and no group seats remote bots at two tables."""
    from collections import defaultdict

    from demo.run import (
        DemoConfig,
        demo_bots_register,
        demo_house_bots_register,
        demo_tournament_create,
    )
    from tournaments.isolation import bot_isolated
    from tournaments.models import Table
    from tournaments.services.tournaments import tournament_schedule

    config = DemoConfig()
    bots, owner = demo_bots_register(config=config)
    house = demo_house_bots_register(config=config, owner=owner)
    assert len(house) == len(config.house_bots) == 10
    assert demo_house_bots_register(config=config, owner=owner) == house  # reused next run
    tournament = demo_tournament_create(config=config, owner=owner, bots=bots, house_bot_ids=house)
    tournament_schedule(tournament_id=tournament.pk)
    assert tournament.deal_format == "field"
    tables = list(Table.objects.filter(tournament=tournament).prefetch_related("seats__entrant__bot"))
    assert len(tables) == 33 and 330 <= sum(t.games_planned for t in tables) <= 380
    groups = defaultdict(list)
    for table in tables:
        groups[table.deal_group].append(table)
    shared_rounds = set()
    for members in groups.values():
        remote = [t for t in members if not all(bot_isolated(s.entrant.bot) for s in t.seats.all())]
        assert len(remote) <= 1
        if len(members) > 1:
            shared_rounds.add(members[0].round)
    assert shared_rounds == set(range(1, 12))


@pytest.mark.django_db
def test_every_run_gives_the_organiser_a_new_usable_password() -> None:
    from demo.run import DemoConfig, demo_bots_register, demo_organiser_sign_in

    _, owner = demo_bots_register(config=DemoConfig())
    first = demo_organiser_sign_in(owner=owner)
    second = demo_organiser_sign_in(owner=owner)
    assert first != second and len(second) >= 16
    owner.refresh_from_db()
    assert owner.check_password(second) and not owner.check_password(first)
    assert owner.is_staff  # an organiser: may create tournaments


@pytest.mark.django_db
def test_fresh_is_refused_on_a_server_database_before_anything_starts() -> None:
    need_postgresql("the refusal is for server databases")
    with pytest.raises(CommandError, match="--fresh starts a new SQLite database file"):
        call_command("run_demo", "--no-serve", "--fresh")


def test_set_aside_keeps_the_last_run_and_starts_empty(tmp_path) -> None:
    from demo.management.commands.run_demo import set_aside

    db = tmp_path / "db.sqlite3"
    assert set_aside(db) is None  # nothing yet
    db.write_text("run 1")
    (tmp_path / "db.sqlite3-wal").write_text("wal 1")
    kept = set_aside(db)
    assert kept == tmp_path / "db.sqlite3.previous" and kept.read_text() == "run 1"
    assert not db.exists() and not (tmp_path / "db.sqlite3-wal").exists()
    db.write_text("run 2")
    set_aside(db)
    assert kept.read_text() == "run 2"
    assert not (tmp_path / "db.sqlite3.previous-wal").exists()  # run 1's wal went with it


def test_the_version_check_says_whether_the_interval_separates_them() -> None:
    from types import SimpleNamespace

    from demo.run import version_verdict

    def row(name, mean, ci, games=100):
        return SimpleNamespace(bot_name=name, points_mean=mean, points_ci=ci, games=games)

    better = version_verdict(row("v2", 1.0, 0.2), row("v1", 0.2, 0.2))
    assert better.startswith("v2 - v1: +0.80 ± 0.28") and better.endswith("v2 is better")
    assert version_verdict(row("v2", 0.1, 0.3), row("v1", 0.0, 0.3)).endswith(
        "not separated yet: more games would tell (or `tienlen-bot arena --sprt`)"
    )
    assert version_verdict(row("v2", -1.0, 0.1), row("v1", 0.0, 0.1)).endswith("v1 is better")
    assert version_verdict(row("v2", 1.0, 0.1), None) == ""


def test_the_progress_bar_shows_share_rate_and_time_left() -> None:
    from demo.printer import progress_line

    line = progress_line(tables_done=6, tables_total=14, games_done=140, games_total=350, elapsed=20)
    assert line.startswith("[" + "#" * 12 + "." * 18 + "]  40%")
    assert "games 140/350  tables 6/14  7.0 games/s  ~30s left  20s" in line
    done = progress_line(tables_done=14, tables_total=14, games_done=350, games_total=350, elapsed=50)
    assert "100%" in done and "left" not in done
