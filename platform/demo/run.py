"""`manage.py run_demo`: the whole platform on one machine, playing a real tournament.

It registers the example bots, starts the referee, one process per bot, a Celery worker and
the web site (`demo.processes`), runs a round robin through Celery while the terminal shows
its progress (`demo.printer`), and reads the standings and ratings back.
"""

from __future__ import annotations

import os
import secrets
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from demo.processes import (
    ProcessGroup,
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

DEFAULT_BOTS = ("heuristic", "greedy", "random", "random")


class DemoError(RuntimeError):
    """The demo cannot go on; the message tells the user what to do."""


@dataclass(frozen=True)
class DemoConfig:
    bots: tuple[str, ...] = DEFAULT_BOTS
    seats: int = 4
    preset: str = "south"
    duplicate_sets: int = 2
    move_time_ms: int = 1000
    concurrency: int = 2
    serve: bool = True
    host: str = "127.0.0.1"
    port: int = 8000
    referee_port: int = 0
    timeout: float = 1800.0
    log_dir: Path | None = None

    @classmethod
    def from_options(cls, options: Mapping[str, object]) -> DemoConfig:
        from bots_sdk.examples import EXAMPLES
        from bots_sdk.rules import PRESETS

        bots = tuple(b.strip() for b in str(options["bots"]).split(",") if b.strip())
        unknown = sorted({b for b in bots if b not in EXAMPLES})
        if unknown:
            raise ValueError(
                f"--bots: unknown example bot(s) {', '.join(unknown)} "
                f"(known: {', '.join(sorted(EXAMPLES))})"
            )
        seats = int(options["seats"])  # type: ignore[call-overload]
        if len(bots) < seats:
            raise ValueError(f"--bots: need at least {seats} bots for tables of {seats}")
        preset = str(options["preset"])
        if preset not in PRESETS:
            raise ValueError(f"--preset: unknown preset {preset!r} (known: {', '.join(PRESETS)})")
        return cls(
            bots=bots,
            seats=seats,
            preset=preset,
            duplicate_sets=int(options["duplicate_sets"]),  # type: ignore[call-overload]
            move_time_ms=int(options["move_time_ms"]),  # type: ignore[call-overload]
            concurrency=int(options["concurrency"]),  # type: ignore[call-overload]
            serve=not options["no_serve"],
            host=str(options["host"]),
            port=int(options["port"]),  # type: ignore[call-overload]
            referee_port=int(options["referee_port"]),  # type: ignore[call-overload]
            timeout=float(options["timeout"]),  # type: ignore[arg-type]
            log_dir=options.get("log_dir"),  # type: ignore[arg-type]
        )

    def url(self, path: str = "/") -> str:
        return f"http://{self.host}:{self.port}{path}"

    def bot_names(self) -> list[str]:
        """Unique bot names: `demo-heuristic`, `demo-random`, `demo-random-2`, ..."""
        names: list[str] = []
        for kind in self.bots:
            name = f"demo-{kind}"
            number = 2
            while name in names:
                name = f"demo-{kind}-{number}"
                number += 1
            names.append(name)
        return names


@dataclass
class DemoResult:
    tournament_id: int
    tournament_name: str
    tournament_path: str
    status: str
    status_reason: str
    games: int
    seconds: float
    standings: list[dict] = field(default_factory=list)
    ratings: list[dict] = field(default_factory=list)


# --- the run ---------------------------------------------------------------------------------

def referee_token_store() -> str:
    """The platform's database by default; TIENLEN_TOKEN_STORE (the referee's own variable)
    may name another store."""
    return os.environ.get("TIENLEN_TOKEN_STORE") or "tournaments.token_store:DjangoTokenStore"


@dataclass(frozen=True)
class DemoBot:
    bot_id: int
    name: str
    kind: str  # the example bot it runs
    token: str  # shown once; handed to its process through the environment only


def demo_bots_register(*, config: DemoConfig) -> tuple[list[DemoBot], object]:
    """The demo organiser and its example bots; existing ones get a fresh token each run."""
    from django.contrib.auth import get_user_model

    from tournaments import services
    from tournaments.models import Bot

    owner, _ = get_user_model().objects.get_or_create(
        username="demo-organiser",
        defaults={"is_staff": True, "first_name": "Demo organiser"},
    )
    if not owner.is_staff:
        owner.is_staff = True
        owner.save(update_fields=["is_staff"])
    registered = []
    for kind, name in zip(config.bots, config.bot_names(), strict=True):
        bot = Bot.objects.filter(name__iexact=name).first()
        if bot is not None and bot.owner_id != owner.pk:
            # Never take over (and re-token) somebody else's bot.
            raise DemoError(
                f"a bot named {bot.name!r} exists and belongs to {bot.owner}, not to the demo; "
                "run the demo on its own database (e.g. TIENLEN_VAR_DIR=/tmp/demo)"
            )
        if bot is None:
            bot, token = services.bot_create(
                owner=owner, name=name,
                description=f"The SDK's example bot '{kind}' (bots_sdk/examples), run by the demo.",
            )
        else:
            token = services.bot_token_rotate(bot=bot)
        assert token is not None
        registered.append(DemoBot(bot_id=bot.pk, name=bot.name, kind=kind, token=token))
    return registered, owner


def demo_tournament_create(*, config: DemoConfig, owner: object, bots: Sequence[DemoBot]):
    from django.utils import timezone

    from tournaments import services
    from tournaments.models import Bot, Tournament

    tournament = services.tournament_create(
        organiser=owner,
        name=f"Demo round robin {timezone.now():%Y-%m-%d %H:%M:%S}",
        format=Tournament.Format.ROUND_ROBIN,
        preset=config.preset,
        seats_per_table=config.seats,
        duplicate_sets=config.duplicate_sets,
        move_time_ms=config.move_time_ms,
        connect_deadline_s=120,
        description="Started by manage.py run_demo: the example bots, each in its own process.",
    )
    for bot in Bot.objects.filter(pk__in=[b.bot_id for b in bots]).order_by("pk"):
        services.tournament_entrant_add(tournament=tournament, bot=bot)
    return services.tournament_start(tournament=tournament)


def tournament_progress(*, tournament_id: int):
    """The tournament's progress document (`tournaments.selectors.Progress`), read afresh."""
    from tournaments import selectors
    from tournaments.models import Tournament

    return selectors.tournament_progress(tournament=Tournament.objects.get(pk=tournament_id))


def tournament_over(status: str) -> bool:
    return status in ("finished", "cancelled")


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
    }

    say.step(f"Registering the example bots: {', '.join(config.bot_names())}")
    bots, owner = demo_bots_register(config=config)

    say.step(f"Starting the referee on {target}")
    group.start(
        "referee",
        python_argv("-m", "referee_service", "--listen", target,
                    "--token-store", referee_token_store()),
        env=env,
    )
    wait_until(lambda: referee_healthy(target), timeout=60, what="the referee", group=group)

    say.step(f"Starting {len(bots)} bot processes (tienlen-bot run ... --server {target})")
    for bot in bots:
        group.start(
            f"bot-{bot.name}",
            python_argv("-m", "bots_sdk.cli", "run", bot.kind, "--server", target),
            env={"TIENLEN_TOKEN": bot.token},
        )
    wanted = {str(b.bot_id) for b in bots}
    wait_until(
        lambda: wanted <= referee_connected_bot_ids(target, organizer_token),
        timeout=60, what="every bot to connect to the referee", group=group,
    )

    say.step(f"Starting a Celery worker ({config.concurrency} processes)")
    group.start("worker", celery_worker_argv(concurrency=config.concurrency, name="demo"), env=env)

    if config.serve:
        say.step(f"Starting the web site on {config.url()}")
        group.start("web", web_argv(host=config.host, port=config.port), env=env)
        wait_until(lambda: web_answering(config.host, config.port), timeout=60,
                   what="the web site", group=group)

    tournament = demo_tournament_create(config=config, owner=owner, bots=bots)
    path = tournament_path(slug=tournament.slug)
    say.step(f"Round robin '{tournament.name}' started" +
             (f": watch it at {config.url(path)}" if config.serve else ""))
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
        tournament_id=tournament.pk,
        tournament_name=tournament.name,
        tournament_path=path,
        status=progress.status,
        status_reason=Tournament.objects.values_list("status_reason", flat=True).get(pk=tournament.pk),
        games=progress.games_done,
        seconds=time.monotonic() - started,
        standings=demo_standings(tournament_id=tournament.pk),
        ratings=demo_ratings(tournament_id=tournament.pk),
    )


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
    from tournaments import selectors
    from tournaments.models import Tournament

    tournament = Tournament.objects.get(pk=tournament_id)
    return [
        {
            "rank": row.rank,
            "bot": row.bot_name,
            "games": row.games,
            "points": row.points,
            "pts/game": f"{row.points_mean:+.2f} ±{row.points_ci:.2f}",
            "avg place": f"{row.place_mean:.2f} ±{row.place_ci:.2f}",
            "firsts": row.firsts,
            "strikes": row.strikes,
            "forfeits": row.forfeits,
        }
        for row in selectors.tournament_standings(tournament=tournament, with_strength=False)
    ]


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
            "rating": f"{rating.rating:.1f}",
            "change": f"{changes.get(rating.bot_id, 0.0):+.1f}",
            "games rated": rating.games,
        }
        for rating in sorted(ratings, key=lambda r: -r.rating)
    ]


def tournament_path(*, slug: str) -> str:
    from django.urls import reverse

    return reverse("web:tournament_detail", args=[slug])
