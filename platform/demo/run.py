"""`manage.py run_demo`: the whole platform on one machine, playing a real tournament.

It registers the example bots (each with an owner account of its own), starts the referee,
one process per bot, a Celery worker, Celery beat and the web site (`demo.processes`), runs
a round robin through Celery while the terminal shows its progress (`demo.printer`), and
reads the standings and ratings back. The site stays up afterwards with everything a
ladder or a scheduled start needs.
"""

from __future__ import annotations

import os
import secrets
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from bots_sdk.decimals import format_decimal
from demo.processes import (
    ProcessGroup,
    celery_beat_argv,
    celery_worker_argv,
    free_port,
    python_argv,
    referee_connected_bot_ids,
    referee_healthy,
    wait_until,
    web_answering,
    web_argv,
)

if TYPE_CHECKING:
    from demo.printer import Printer

# The default format as documented (docs/organiser-guide.md, field duplicates): only
# isolated bots (house bots, run by the referee) share a deal with another table, so the
# field is two versions of one bot as their own processes (remote: each table of theirs
# may share its deals only with tables of house bots) and ten house bots. Twelve entrants
# at tables of 4: 11 rounds of 3 tables (every pair meets 3 times), 33 tables, and every
# round has a deal group of several tables: the luck-adjusted column compares seats with
# counterparts on the same cards, as the docs describe.
DEFAULT_BOTS = ("planner-v2", "planner-v1")
DEFAULT_HOUSE_BOTS = (
    "heuristic", "heuristic", "heuristic", "greedy", "greedy", "greedy", "greedy", "random", "random", "random",
)
DEFAULT_GAMES_PER_TABLE = 11  # 33 tables: 363 games, about 40 s on 2 cores


class DemoError(RuntimeError):
    """The demo cannot go on; the message tells the user what to do."""


@dataclass(frozen=True)
class DemoConfig:
    bots: tuple[str, ...] = DEFAULT_BOTS  # one process each (remote bots)
    house_bots: tuple[str, ...] = DEFAULT_HOUSE_BOTS  # played by the referee (isolated)
    seats: int = 4
    preset: str = "south"
    games_per_table: int | None = DEFAULT_GAMES_PER_TABLE  # each game a new deal (field duplicates)
    duplicate_sets: int | None = None  # or: duplicate_sets x seats games, each a new deal too
    move_time_ms: int = 1000
    concurrency: int = 2
    serve: bool = True
    host: str = "127.0.0.1"
    port: int = 8000
    referee_port: int = 0
    timeout: float = 1800.0
    log_dir: Path | None = None
    fresh: bool = False
    hosted_bot: str = ""  # a kind of `bots` the platform hosts instead (demo.hosting)

    @classmethod
    def from_options(cls, options: Mapping[str, object]) -> DemoConfig:
        from bots_sdk.rules import PRESETS
        from demo.bots import bot_kinds

        bots = tuple(b.strip() for b in str(options["bots"]).split(",") if b.strip())
        known = bot_kinds()
        unknown = sorted({b for b in bots if b not in known})
        if unknown:
            raise ValueError(
                f"--bots: unknown example bot(s) {', '.join(unknown)} "
                f"(known: {', '.join(sorted(known))})"
            )
        house = tuple(b.strip() for b in str(options.get("house_bots", ",".join(DEFAULT_HOUSE_BOTS))).split(",") if b.strip())
        from referee_service.house import house_bot_names

        unknown_house = sorted(set(house) - house_bot_names())
        if unknown_house:
            raise ValueError(
                f"--house-bots: unknown house bot(s) {', '.join(unknown_house)} "
                f"(known: {', '.join(sorted(house_bot_names()))})"
            )
        seats = int(options["seats"])  # type: ignore[call-overload]
        if len(bots) + len(house) < seats:
            raise ValueError(f"--bots and --house-bots: need at least {seats} bots for tables of {seats}")
        preset = str(options["preset"])
        if preset not in PRESETS:
            raise ValueError(f"--preset: unknown preset {preset!r} (known: {', '.join(PRESETS)})")
        duplicate_sets = options.get("duplicate_sets")
        games_per_table = options.get("games_per_table")
        if duplicate_sets and games_per_table:
            raise ValueError("--games-per-table and --duplicate-sets: give one of them, not both")
        if not duplicate_sets and not games_per_table:
            games_per_table = DEFAULT_GAMES_PER_TABLE
        return cls(
            bots=bots,
            house_bots=house,
            seats=seats,
            preset=preset,
            games_per_table=int(games_per_table) if games_per_table else None,  # type: ignore[call-overload]
            duplicate_sets=int(duplicate_sets) if duplicate_sets else None,  # type: ignore[call-overload]
            move_time_ms=int(options["move_time_ms"]),  # type: ignore[call-overload]
            concurrency=int(options["concurrency"]),  # type: ignore[call-overload]
            serve=not options["no_serve"],
            host=str(options["host"]),
            port=int(options["port"]),  # type: ignore[call-overload]
            referee_port=int(options["referee_port"]),  # type: ignore[call-overload]
            timeout=float(options["timeout"]),  # type: ignore[arg-type]
            log_dir=options.get("log_dir"),  # type: ignore[arg-type]
            fresh=bool(options.get("fresh")),
            hosted_bot=_hosted_kind(options.get("hosted_bot"), bots, serve=not options["no_serve"]),
        )

    def hosted_name(self) -> str:
        """The name of the bot the platform hosts ("" for none)."""
        if not self.hosted_bot:
            return ""
        return dict(zip(self.bots, self.bot_names(), strict=True))[self.hosted_bot]

    def url(self, path: str = "/") -> str:
        return f"http://{self.host}:{self.port}{path}"

    def bot_names(self) -> list[str]:
        """Unique bot names: `demo-heuristic`, `demo-random`, `demo-random-2`, ..."""
        return _unique_names("demo", self.bots)

    def house_bot_names(self) -> list[str]:
        """Unique house bot names: `house-greedy`, `house-greedy-2`, ..."""
        return _unique_names("house", self.house_bots)


def _hosted_kind(value: object, bots: tuple[str, ...], *, serve: bool) -> str:
    kind = str(value or "").strip()
    if kind and kind not in bots:
        raise ValueError(f"--hosted-bot: {kind!r} is not one of --bots ({', '.join(bots)})")
    if kind and not serve:
        raise ValueError("--hosted-bot needs the web site (it is submitted through it): drop --no-serve")
    return kind


def _unique_names(prefix: str, kinds: Sequence[str]) -> list[str]:
    names: list[str] = []
    for kind in kinds:
        name = f"{prefix}-{kind}"
        number = 2
        while name in names:
            name = f"{prefix}-{kind}-{number}"
            number += 1
        names.append(name)
    return names


@dataclass
class DemoResult:
    organiser: str
    organiser_password: str
    earlier_rated_games: int
    tournament_id: int
    tournament_name: str
    tournament_path: str
    status: str
    status_reason: str
    games: int
    seconds: float
    standings: list[dict] = field(default_factory=list)
    ratings: list[dict] = field(default_factory=list)
    versions: str = ""  # planner v2 against v1, when both played


# --- the run ---------------------------------------------------------------------------------

def referee_token_store() -> str:
    """The platform's database by default; TIENLEN_TOKEN_STORE (the referee's own variable)
    may name another store."""
    return os.environ.get("TIENLEN_TOKEN_STORE") or "tournaments.token_store:DjangoTokenStore"


@dataclass(frozen=True)
class DemoBot:
    bot_id: int
    name: str
    kind: str  # the example bot it runs (a `--bots` name)
    token: str  # shown once; handed to its process through the environment only

    @property
    def run_target(self) -> str:
        """What `tienlen-bot run` is given: an example's name or `module:Class`."""
        from demo.bots import bot_kinds

        return bot_kinds()[self.kind]


ORGANISER = "demo-organiser"

DESCRIPTIONS = {
    "planner-v1": "Version 1.0 of the demo's planner: the example heuristic before it learned "
    "when to pass (it plays whenever it can). platform/demo/bots.py, run by the demo.",
    "planner-v2": "Version 2.0 of the demo's planner: the example heuristic, which passes when "
    "following would break its plan. platform/demo/bots.py, run by the demo.",
}


DEMO_TICK_SECONDS = "5"


def demo_site_env() -> dict[str, str]:
    """What the demo's processes are told besides the referee's address.

    A scheduler tick every 5 s (TIENLEN_TICK_SECONDS, unless set: 30 s in a deployment), so
    a ladder started from the demo's site gets its first table within seconds; and every
    signed-in user may organise (TIENLEN_ANYONE_ORGANISES), so a newcomer who signs up on the
    demo's site can run a first tournament there without an administrator."""
    return {
        "TIENLEN_TICK_SECONDS": os.environ.get("TIENLEN_TICK_SECONDS") or DEMO_TICK_SECONDS,
        "TIENLEN_ANYONE_ORGANISES": os.environ.get("TIENLEN_ANYONE_ORGANISES") or "1",
    }


def demo_organiser_sign_in(*, owner) -> str:
    """A fresh random password for the demo's organiser (every run): printed on the terminal
    so the person who ran the demo can sign in and try the organiser's pages."""
    password = secrets.token_urlsafe(12)
    owner.set_password(password)
    owner.save(update_fields=["password"])
    return password


def demo_bot_author(*, bot_name: str):
    """The account that owns one demo bot, `<bot>-author`: each demo bot has an owner of its
    own, as bots of a real league do. With one owner for all of them, a newcomer's bot and
    three demo bots were two owners at a table of 4, which the owner rule refuses
    (docs/organiser-guide.md, Owners); now "my bot + three demo bots" is four owners. The
    account has no password: nobody signs in as it."""
    from django.contrib.auth import get_user_model
    from django.contrib.auth.hashers import make_password

    username = f"{bot_name}-author"
    author, created = get_user_model().objects.get_or_create(
        username=username, defaults={"first_name": "Demo bot author", "password": make_password(None)},
    )
    if not created and author.has_usable_password():
        # Somebody signed up with this name: never hand them (or take from them) a demo bot.
        raise DemoError(
            f"the user {username!r} exists and is not one of the demo's accounts; run the demo "
            "on its own database (e.g. TIENLEN_VAR_DIR=/tmp/demo)"
        )
    return author


def demo_bots_register(*, config: DemoConfig) -> tuple[list[DemoBot], object]:
    """The demo organiser and its example bots, each owned by its own demo account
    (`demo_bot_author`); existing ones get a fresh token each run."""
    from django.contrib.auth import get_user_model

    from tournaments.models import Bot
    from tournaments.services.accounts import bot_create, bot_token_rotate

    owner, _ = get_user_model().objects.get_or_create(
        username=ORGANISER,
        defaults={"is_staff": True, "first_name": "Demo organiser"},
    )
    if not owner.is_staff:
        owner.is_staff = True
        owner.save(update_fields=["is_staff"])
    registered = []
    for kind, name in zip(config.bots, config.bot_names(), strict=True):
        bot = Bot.objects.filter(name__iexact=name).first()
        # Earlier runs had the organiser own every demo bot: those move to their author.
        if bot is not None and bot.owner_id != owner.pk and bot.owner.username != f"{name}-author":
            # Never take over (and re-token) somebody else's bot.
            raise DemoError(
                f"a bot named {bot.name!r} exists and belongs to {bot.owner}, not to the demo; "
                "run the demo on its own database (e.g. TIENLEN_VAR_DIR=/tmp/demo)"
            )
        author = demo_bot_author(bot_name=name)
        if bot is not None and bot.owner_id != author.pk:
            bot.owner = author
            bot.save(update_fields=["owner"])
        if bot is None:
            bot, token = bot_create(
                owner=author, name=name,
                description=DESCRIPTIONS.get(
                    kind, f"The SDK's example bot '{kind}' (bots_sdk/examples), run by the demo."
                ),
            )
        else:
            token = bot_token_rotate(bot=bot)
        assert token is not None
        # Nobody answers for the demo's authors: every organiser of the demo's site may
        # enter their bots without asking (docs/organiser-guide.md, "Entrants").
        Bot.objects.filter(pk=bot.pk).update(accepts_invitations=True)
        registered.append(DemoBot(bot_id=bot.pk, name=bot.name, kind=kind, token=token))
    return registered, owner


def demo_house_bots_register(*, config: DemoConfig, owner) -> list[int]:
    """The demo's house bots (played inside the referee: no process, no token), owned by
    the demo organiser (staff); their ids."""
    from tournaments.models import Bot
    from tournaments.services.accounts import bot_create

    ids = []
    for kind, name in zip(config.house_bots, config.house_bot_names(), strict=True):
        bot = Bot.objects.filter(name__iexact=name).first()
        if bot is not None and (bot.owner_id != owner.pk or bot.house_bot != kind):
            raise DemoError(
                f"a bot named {bot.name!r} exists and is not the demo's house bot {kind!r}; "
                "run the demo on its own database (e.g. TIENLEN_VAR_DIR=/tmp/demo)"
            )
        if bot is None:
            bot, _ = bot_create(
                owner=owner, name=name, house_bot=kind,
                description=f"The SDK's example bot '{kind}' as a house bot: played by the referee itself.",
            )
        ids.append(bot.pk)
    return ids


def demo_tournament_create(*, config: DemoConfig, owner: object, bots: Sequence[DemoBot],
                           house_bot_ids: Sequence[int] = ()):
    from django.utils import timezone

    from tournaments.models import Bot, Tournament
    from tournaments.services.tournaments import (
        tournament_create,
        tournament_entrant_add,
        tournament_start,
    )

    plan = (
        {"games_per_table": config.games_per_table}
        if config.games_per_table
        else {"duplicate_sets": config.duplicate_sets}
    )
    tournament = tournament_create(
        organiser=owner,
        name=f"Demo round robin {timezone.now():%Y-%m-%d %H:%M:%S}",
        format=Tournament.Format.ROUND_ROBIN,
        preset=config.preset,
        seats_per_table=config.seats,
        move_time_ms=config.move_time_ms,
        connect_deadline_s=120,
        description="Started by manage.py run_demo: two versions of the demo's planner, each in "
        "its own process over gRPC, and house bots played by the referee.",
        **plan,
    )
    for bot in Bot.objects.filter(pk__in=[*(b.bot_id for b in bots), *house_bot_ids]).order_by("pk"):
        tournament_entrant_add(tournament=tournament, bot=bot)
    return tournament_start(tournament=tournament)


def tournament_progress(*, tournament_id: int):
    """The tournament's progress document (`tournaments.tournament_reads.Progress`), read afresh."""
    from tournaments.models import Tournament
    from tournaments.selectors import tournaments as tournament_reads

    return tournament_reads.tournament_progress(tournament=Tournament.objects.get(pk=tournament_id))


def tournament_over(status: str) -> bool:
    return status in ("finished", "cancelled")


def earlier_rated_games(*, tournament) -> int:
    """Rated games already in the tournament's pool before it started: a demo run on a
    database that has seen other runs continues their ratings, and says so."""
    from tournaments.models import Game

    if tournament.pool_id is None:
        return 0
    return Game.objects.filter(pool_id=tournament.pool_id).exclude(table__tournament=tournament).count()


def demo_run(*, config: DemoConfig, group: ProcessGroup, say: Printer) -> DemoResult:
    """Start every process, run the round robin to its end, and read the results."""
    from tournaments.models import Tournament

    referee_port = config.referee_port or free_port()
    target = f"127.0.0.1:{referee_port}"
    organizer_token = secrets.token_urlsafe(32)
    # The workers present REFEREE_ORGANIZER_TOKEN; the referee expects TIENLEN_ORGANIZER_TOKEN.
    env = {
        "REFEREE_TARGET": target,
        "REFEREE_ORGANIZER_TOKEN": organizer_token,
        "TIENLEN_ORGANIZER_TOKEN": organizer_token,
        **demo_site_env(),
    }

    say.step(f"Registering the bots: {', '.join(config.bot_names() + config.house_bot_names())}")
    bots, owner = demo_bots_register(config=config)
    house_bot_ids = demo_house_bots_register(config=config, owner=owner)
    password = demo_organiser_sign_in(owner=owner)

    say.step(f"Starting the referee on {target}")
    group.start(
        "referee",
        python_argv("-m", "referee_service", "--listen", target,
                    "--token-store", referee_token_store()),
        env=env,
    )
    wait_until(lambda: referee_healthy(target), timeout=60, what="the referee", group=group)

    hosted = [b for b in bots if b.name == config.hosted_name()]
    if hosted:
        from demo.hosting import hosting_env, hosting_problem

        env.update(hosting_env())
        problem = hosting_problem()
        if problem:
            say.detail(f"not hosting {hosted[0].name}: {problem}; it runs as a process instead")
            hosted = []
    processes_for = [b for b in bots if b not in hosted]
    say.step(f"Starting {len(processes_for)} bot processes (tienlen-bot run ... --server {target})")
    for bot in processes_for:
        group.start(
            f"bot-{bot.name}",
            python_argv("-m", "bots_sdk.cli", "run", bot.run_target, "--server", target),
            env={"TIENLEN_TOKEN": bot.token},
        )
    wanted = {str(b.bot_id) for b in processes_for}
    wait_until(
        lambda: wanted <= referee_connected_bot_ids(target, organizer_token),
        timeout=60, what="every bot to connect to the referee", group=group,
    )

    say.step(f"Starting a Celery worker ({config.concurrency} processes)")
    group.start("worker", celery_worker_argv(concurrency=config.concurrency, name="demo"), env=env)
    say.step(f"Starting Celery beat (ladder tables and scheduled starts, a tick every {env['TIENLEN_TICK_SECONDS']} s)")
    group.start("beat", celery_beat_argv(), env=env)

    if config.serve:
        say.step(f"Starting the web site on {config.url()}")
        group.start("web", web_argv(host=config.host, port=config.port), env=env)
        wait_until(lambda: web_answering(config.host, config.port), timeout=60,
                   what="the web site", group=group)

    for bot in hosted:
        demo_bot_host(bot=bot, config=config, group=group, env=env, say=say)

    tournament = demo_tournament_create(config=config, owner=owner, bots=bots, house_bot_ids=house_bot_ids)
    path = tournament_path(slug=tournament.slug)
    earlier = earlier_rated_games(tournament=tournament)
    say.step(f"Round robin '{tournament.name}' started" +
             (f": watch it at {config.url(path)}" if config.serve else ""))
    if earlier:
        say.detail(
            f"note: rating pool {tournament.pool} already holds {earlier} rated games from "
            "earlier runs on this database; the ratings below continue from them (the "
            "standings count this run only). `make demo` starts a fresh demo database each run."
        )
    started = last_change = time.monotonic()
    seen: tuple[int, int] = (-1, -1)
    warned = False
    while True:
        progress = tournament_progress(tournament_id=tournament.pk)
        if (progress.games_done, progress.tables_done) != seen:
            seen, last_change, warned = (progress.games_done, progress.tables_done), time.monotonic(), False
        elif not warned and time.monotonic() - last_change > STALL_WARNING_S:
            warned = True
            say.detail(stall_hint(tournament_id=tournament.pk, log_dir=group.log_dir))
        say.progress(
            tables_done=progress.tables_done, tables_total=progress.tables_total,
            games_done=progress.games_done, games_total=progress.games_planned,
            elapsed=time.monotonic() - started,
        )
        if tournament_over(progress.status):
            break
        group.check_alive()
        if time.monotonic() - started > config.timeout:
            raise TimeoutError(
                f"the tournament is not over after {config.timeout:.0f}s "
                f"({progress.games_done}/{progress.games_planned} games)"
            )
        time.sleep(0.5)
    return DemoResult(
        organiser=ORGANISER,
        organiser_password=password,
        earlier_rated_games=earlier,
        tournament_id=tournament.pk,
        tournament_name=tournament.name,
        tournament_path=path,
        status=progress.status,
        status_reason=Tournament.objects.values_list("status_reason", flat=True).get(pk=tournament.pk),
        games=progress.games_done,
        seconds=time.monotonic() - started,
        standings=demo_standings(tournament_id=tournament.pk),
        versions=version_check(tournament_id=tournament.pk),
        ratings=demo_ratings(tournament_id=tournament.pk),
    )


def demo_bot_host(*, bot: DemoBot, config: DemoConfig, group: ProcessGroup, env: dict[str, str], say: Printer) -> None:
    """Hand the bot's code to the platform as its author would (`tienlen-bot submit ...
    --hosted` through the site), with a runner to validate and play it."""
    from demo.hosting import bot_source, runner_argv, submit
    from tournaments.models import Bot
    from tournaments.services.accounts import api_token_create

    say.step("Starting a runner (a Celery worker of the runner queue: hosted bots, sandboxed)")
    group.start("runner", runner_argv(), env=env)
    folder = group.log_dir.parent / "demo-hosted" / bot.name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "bot.py").write_text(bot_source(bot.run_target))
    author = Bot.objects.select_related("owner").get(pk=bot.bot_id).owner
    _, api_token = api_token_create(user=author, name="demo: tienlen-bot submit")
    say.step(f"Submitting {bot.name} to be hosted: tienlen-bot submit {folder} --bot {bot.name} "
             f"--site {config.url()} --hosted")
    done = submit(folder=folder, bot_name=bot.name, api_token=api_token, site=config.url())
    for line in done.stdout.splitlines():
        if line.startswith(("submitted ", "validated ", f"{bot.name} is ")):
            say.detail(line)
    if done.returncode != 0:
        raise DemoError(f"submitting {bot.name} failed:\n{done.stdout}{done.stderr}")


STALL_WARNING_S = 60.0


def stall_hint(*, tournament_id: int, log_dir: Path) -> str:
    """Why nothing moves, as far as the database knows, and where to look."""
    from tournaments.models import Table

    errors = [
        f"table {t.number}: {t.status}, {t.last_error}"
        for t in Table.objects.filter(tournament_id=tournament_id).exclude(last_error="")
    ]
    reason = "; ".join(errors) or "no table reports an error"
    return (
        f"no game recorded for {STALL_WARNING_S:.0f}s ({reason}); "
        f"see {log_dir / 'worker.log'} and {log_dir / 'referee.log'}"
    )


def demo_standings(*, tournament_id: int) -> list[dict]:
    """The tournament's standings as the site and the API show them, strikes included."""
    from tournaments.models import Tournament
    from tournaments.selectors.standings import tournament_standings

    tournament = Tournament.objects.get(pk=tournament_id)
    return [
        {
            "rank": row.rank,
            "bot": row.bot_name,
            "games": row.games,
            "points": row.points,
            "pts/game": f"{format_decimal(row.points_mean, 2, sign=True)} ±{format_decimal(row.points_ci, 2)}",
            "avg place": f"{format_decimal(row.place_mean, 2)} ±{format_decimal(row.place_ci, 2)}",
            "firsts": row.firsts,
            "strikes": row.strikes,
            "forfeits": row.forfeits,
        }
        for row in tournament_standings(tournament=tournament, with_strength=False)
    ]


def version_check(*, tournament_id: int, new: str = "demo-planner-v2", old: str = "demo-planner-v1") -> str:
    """Is version 2 better than version 1? Their difference in mean points per game with an
    approximate 95% interval (the two intervals combined as if independent), and what it
    means: the question the platform exists to answer."""
    from tournaments.models import Tournament
    from tournaments.selectors.standings import tournament_standings

    rows = {
        r.bot_name: r
        for r in tournament_standings(
            tournament=Tournament.objects.get(pk=tournament_id), with_strength=False
        )
    }
    return version_verdict(rows.get(new), rows.get(old))


def version_verdict(new, old) -> str:
    """`new` against `old` (standings rows): the difference of their mean points per game,
    its approximate 95% interval, and whether it separates them. Empty unless both played
    at least two games."""
    if new is None or old is None or min(new.games, old.games) < 2:
        return ""
    diff = new.points_mean - old.points_mean
    half = (new.points_ci**2 + old.points_ci**2) ** 0.5
    if diff - half > 0:
        verdict = f"{new.bot_name} is better"
    elif diff + half < 0:
        verdict = f"{old.bot_name} is better"
    else:
        verdict = "not separated yet: more games would tell (or `tienlen-bot arena --sprt`)"
    return (
        f"{new.bot_name} - {old.bot_name}: {format_decimal(diff, 2, sign=True)} ± {format_decimal(half, 2)} points per game "
        f"over {min(new.games, old.games)} games each: {verdict}"
    )


def demo_ratings(*, tournament_id: int) -> list[dict]:
    """The entrants' ratings in the tournament's pool, with this tournament's change."""
    from django.db.models import F, Sum

    from tournaments.models import Rating, RatingChange, Tournament

    tournament = Tournament.objects.get(pk=tournament_id)
    if tournament.pool_id is None:
        return []
    bot_ids = list(tournament.entrants.values_list("bot_id", flat=True))
    changes = dict(
        RatingChange.objects.filter(
            pool_id=tournament.pool_id, game__table__tournament_id=tournament_id
        )
        .values("bot_id")
        .annotate(delta=Sum(F("rating_after") - F("rating_before")))
        .values_list("bot_id", "delta")
    )
    ratings = Rating.objects.filter(pool_id=tournament.pool_id, bot_id__in=bot_ids).select_related(
        "bot"
    )
    return [
        {
            "bot": rating.bot.name,
            "pool": f"{tournament.preset}/{tournament.seats_per_table}p",
            "rating": format_decimal(rating.rating, 1),
            "change": format_decimal(changes.get(rating.bot_id, 0.0), 1, sign=True),
            "games rated": rating.games,
        }
        for rating in sorted(ratings, key=lambda r: -r.rating)
    ]


def tournament_path(*, slug: str) -> str:
    from django.urls import reverse

    return reverse("web:tournament_detail", args=[slug])
