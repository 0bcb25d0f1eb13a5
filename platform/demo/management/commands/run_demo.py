"""`manage.py run_demo`: the README's main job, a real tournament on one machine.

It migrates, registers the example bots, starts the referee, one process per bot (each a
gRPC client with its own token), a Celery worker and the web site, runs a round robin
through Celery while showing progress, prints the standings and ratings, and keeps the
site up for browsing the replays until Ctrl-C (`--no-serve` skips the site, for CI).
Everything it starts is stopped when it ends, however it ends.
"""

from __future__ import annotations

import logging
import sys
import time
from pathlib import Path

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError, CommandParser

from demo import processes, run
from demo.printer import Printer


def positive(value: str) -> int:
    number = int(value)
    if number < 1:
        raise ValueError(value)
    return number


class Command(BaseCommand):
    help = (
        "Run a real round robin between the example bots (each its own process, over gRPC), "
        "print standings and ratings, and serve the site on 127.0.0.1:8000 to browse replays."
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
            help="Comma-separated example bots to enter, one process each "
            f"(default {','.join(run.DEFAULT_BOTS)}; a name may repeat).",
        )
        parser.add_argument("--seats", type=int, choices=(2, 3, 4), default=4,
                            help="Seats per table.")
        parser.add_argument("--preset", default="south", help="Rule preset.")
        parser.add_argument("--duplicate-sets", type=positive, default=2,
                            help="Duplicate sets per table (each deal in every seat rotation).")
        parser.add_argument("--move-time-ms", type=positive, default=1000,
                            help="Time per move (ms).")
        parser.add_argument("--concurrency", type=positive, default=2,
                            help="Celery worker processes (tables played at once).")
        parser.add_argument("--referee-port", type=int, default=0,
                            help="Referee port (default: a free one).")
        parser.add_argument("--timeout", type=positive, default=1800,
                            help="Give up if the tournament is not over after this many seconds.")
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
        say.step("Migrating the database")
        call_command("migrate", interactive=False, verbosity=0)
        try:
            with processes.terminate_on_signals(), processes.ProcessGroup(log_dir) as group:
                result = run.demo_run(config=config, group=group, say=say)
                say.report(result)
                if config.serve:
                    say.serving(config.url(result.tournament_path), log_dir)
                    while True:
                        group.check_alive()
                        time.sleep(1)
        except KeyboardInterrupt:
            say.step("Stopped; every process the demo started has been shut down.")
        except (processes.ProcessFailed, TimeoutError, run.DemoError) as exc:
            raise CommandError(f"{exc}\n(all logs: {log_dir})") from None
