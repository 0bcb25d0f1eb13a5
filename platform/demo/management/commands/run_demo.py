"""`manage.py run_demo`: the README's main job, a real tournament on one machine.

It migrates, registers the bots (two versions of the demo's planner, each its own process,
and house bots the referee plays), starts the referee, one process per bot (each a gRPC
client with its own token), a
Celery worker and the web site, runs a round robin through Celery with a live progress bar,
prints the standings and ratings and how to sign in as the organiser, and keeps the site up
for browsing the replays until Ctrl-C (`--no-serve` skips the site, for CI). Everything it
starts is stopped when it ends, however it ends.

`--fresh` (what `make demo` passes on the no-server quick start) starts from an empty SQLite
database, so a second run does not pile its games into the first run's ratings; without it
(a shared database) the demo says when earlier games are in the ratings it prints.
"""

from __future__ import annotations

import logging
import sys
import time
from pathlib import Path

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import connections

from demo import processes, run
from demo.printer import Printer


def positive(value: str) -> int:
    number = int(value)
    if number < 1:
        raise ValueError(value)
    return number


class Command(BaseCommand):
    help = (
        "Run a real round robin between bot processes (two versions of the demo's planner, over "
        "gRPC) and house bots, print standings, ratings and the organiser's sign-in, "
        "and serve the site on 127.0.0.1:8000 to browse the replays."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--no-serve", action="store_true",
            help="Do not start the web site; exit once the tournament is over (for CI).",
        )
        parser.add_argument("--host", default="127.0.0.1", help="Web site address.")
        parser.add_argument("--port", type=int, default=8000, help="Web site port.")
        parser.add_argument(
            "--bots", default=",".join(run.DEFAULT_BOTS),
            help="Comma-separated bots to enter, one process each: the SDK's examples "
            "(random, greedy, heuristic) and planner-v1, planner-v2 "
            f"(default {','.join(run.DEFAULT_BOTS)}; a name may repeat).",
        )
        parser.add_argument(
            "--house-bots", default=",".join(run.DEFAULT_HOUSE_BOTS),
            help="Comma-separated house bots to enter beside them, played by the referee itself "
            "(no process): random, greedy, heuristic, search. Only house bots share a deal with "
            f"another table (docs/fair-play.md). Default {','.join(run.DEFAULT_HOUSE_BOTS)}; "
            "'' for none.",
        )
        parser.add_argument("--seats", type=int, choices=(2, 3, 4), default=4,
                            help="Seats per table.")
        parser.add_argument("--preset", default="south", help="Rule preset.")
        parser.add_argument(
            "--games-per-table", type=positive, default=None,
            help=f"Games per table, each a new deal (default {run.DEFAULT_GAMES_PER_TABLE}).",
        )
        parser.add_argument("--duplicate-sets", type=positive, default=None,
                            help="Instead: duplicate sets per table, duplicate-sets x seats games "
                            "(each a new deal: seat rotation of one deal is for house bots only).")
        parser.add_argument(
            "--fresh", action="store_true",
            help="Start from an empty database (SQLite only): the previous one is kept as "
            "<name>.previous. `make demo` passes it unless DATABASE_URL is set.",
        )
        parser.add_argument("--move-time-ms", type=positive, default=1000,
                            help="Time per move (ms).")
        parser.add_argument("--concurrency", type=positive, default=2,
                            help="Celery worker processes (tables played at once).")
        parser.add_argument("--referee-port", type=int, default=0,
                            help="Referee port (default: a free one).")
        parser.add_argument("--timeout", type=positive, default=1800,
                            help="Give up if the tournament is not over after this many seconds.")
        parser.add_argument(
            "--hosted-bot", default=None,
            help="One of --bots the platform hosts instead of a process (default: planner-v1 when "
            "it is one of them; 'none' for none): submitted with `tienlen-bot submit --hosted` "
            "through the site (with --no-serve: the submission service the site's API uses), "
            "validated and played in the sandbox by a runner (docs/hosting.md). On a host that "
            "cannot sandbox, or without the built runtimes (make hosting-runtimes), the demo says "
            "why and runs it as a process.",
        )
        parser.add_argument(
            "--log-dir", type=Path, default=None,
            help="Where each process writes its log (default var/demo-logs/).",
        )

    def handle(self, *args: object, **options: object) -> None:
        try:
            config = run.DemoConfig.from_options(options)
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        if config.serve and not processes.port_is_free(config.host, config.port):
            raise CommandError(
                f"{config.host}:{config.port} is in use: stop what runs there, or pass "
                "--port N (or --no-serve)."
            )
        log_dir = config.log_dir or Path(settings.VAR_DIR) / "demo-logs"
        say = Printer(self.stdout, self.style, interactive=sys.stdout.isatty())

        # kombu warns that the no-server broker has no host name; it needs none.
        logging.getLogger("kombu.connection").setLevel(logging.ERROR)
        if config.fresh:
            say.step(fresh_database())
        say.step("Migrating the database")
        call_command("migrate", interactive=False, verbosity=0)
        try:
            with processes.terminate_on_signals(), processes.ProcessGroup(log_dir) as group:
                result = run.demo_run(config=config, group=group, say=say)
                say.report(result)
                if config.serve:
                    say.serving(config.url(result.tournament_path), log_dir)
                    say.organiser(
                        login_url=config.url("/accounts/login/"),
                        username=result.organiser, password=result.organiser_password,
                    )
                    while True:
                        group.check_alive()
                        time.sleep(1)
        except KeyboardInterrupt:
            say.step("Stopped; every process the demo started has been shut down.")
        except (processes.ProcessFailed, TimeoutError, run.DemoError) as exc:
            raise CommandError(f"{exc}\n(all logs: {log_dir})") from None


def fresh_database() -> str:
    """Set the SQLite database file aside (as `<name>.previous`) before anything opens it;
    `migrate` then creates an empty one. Refused for any other database: the demo never
    empties a server's database."""
    database = connections["default"].settings_dict
    name = str(database["NAME"])
    if connections["default"].vendor != "sqlite" or name == ":memory:" or name.startswith("file:"):
        raise CommandError(
            "--fresh starts a new SQLite database file and this database is "
            f"{connections['default'].vendor} ({name}); to start afresh there, drop and create "
            "the database yourself, or run the demo without DATABASE_URL"
        )
    connections.close_all()
    path = Path(name)
    kept = set_aside(path)
    # A killed run may have left tasks in the no-server broker's folders: they name tables
    # of the old database, so they go with it.
    transport = getattr(settings, "CELERY_BROKER_TRANSPORT_OPTIONS", {})
    if str(settings.CELERY_BROKER_URL).startswith("filesystem://"):
        for key in ("data_folder_in", "processed_folder"):
            folder = transport.get(key)
            for message in Path(folder).glob("*") if folder else ():
                if message.is_file():
                    message.unlink()
    note = f" (the last run's is kept as {kept.name})" if kept else ""
    return f"Fresh demo database {path}{note}: this run's ratings start from nothing"


def set_aside(path: Path) -> Path | None:
    """Move an SQLite database (and its -wal/-shm files) to `<name>.previous`, replacing an
    older one; returns where it went, or None when there was none."""
    previous = path.with_name(path.name + ".previous")
    kept = path.exists()
    for suffix in ("", "-wal", "-shm"):
        Path(f"{previous}{suffix}").unlink(missing_ok=True)
        old = Path(f"{path}{suffix}")
        if old.exists():
            old.replace(Path(f"{previous}{suffix}"))
    return previous if kept else None
