"""The pieces of `manage.py run_demo`, shared with the end-to-end tests.

The demo is the whole platform on one machine: a referee, a Celery worker, a web server and
one process per bot, all children of one command. `ProcessGroup` exists so that every one
of them dies with the command however it ends (Ctrl-C, an exception, a failed assertion in
a test): each child leads its own process group, and the group is signalled, so grandchildren
(Celery's pool processes, uvicorn workers) go too.
"""

from __future__ import annotations

import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parent.parent


class ProcessFailed(RuntimeError):
    """A managed process exited on its own; the message carries the tail of its log."""


@dataclass
class ManagedProcess:
    name: str
    argv: list[str]
    log_path: Path
    popen: subprocess.Popen[bytes]
    expected_exit: bool = field(default=False)

    @property
    def pid(self) -> int:
        return self.popen.pid

    def alive(self) -> bool:
        return self.popen.poll() is None

    def log_tail(self, lines: int = 25) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def signal_group(self, sig: int) -> None:
        with suppress(ProcessLookupError):
            os.killpg(self.popen.pid, sig)


# Every child starts through this one-line launcher: it asks Linux for SIGTERM when its
# parent dies (even by SIGKILL, when no `finally` runs), then execs the real command. A
# `preexec_fn` doing the same would make subprocess fork() and run Python in the child
# before exec; in a parent that has gRPC loaded, gRPC's fork handlers then start a poller
# in that child whose epoll descriptor `close_fds` closes, and the child aborts with
# "epoll_wait error: Bad file descriptor" (seen in CI on a bot process).
_PDEATHSIG_LAUNCHER = (
    "import os, signal, sys\n"
    "if sys.platform.startswith('linux'):\n"
    "    import ctypes\n"
    "    try:\n"
    "        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)\n"
    "    except (OSError, AttributeError):\n"
    "        pass\n"
    # The parent may have died before prctl took effect: then nobody will signal us.
    "if os.getppid() != int(sys.argv[1]):\n"
    "    os._exit(1)\n"
    # Python ignores these; exec would pass that on (subprocess normally restores them).
    "for name in ('SIGPIPE', 'SIGXFSZ'):\n"
    "    if hasattr(signal, name):\n"
    "        signal.signal(getattr(signal, name), signal.SIG_DFL)\n"
    "os.execvp(sys.argv[2], sys.argv[2:])\n"
)


def _with_pdeathsig(argv: Sequence[str]) -> list[str]:
    return [sys.executable, "-c", _PDEATHSIG_LAUNCHER, str(os.getpid()), *argv]


def child_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of every child: ours, with the project and `platform/` importable."""
    env = dict(os.environ)
    path = [str(PROJECT_ROOT / "platform"), str(PROJECT_ROOT)]
    if env.get("PYTHONPATH"):
        path.append(env["PYTHONPATH"])
    env["PYTHONPATH"] = os.pathsep.join(path)
    env.setdefault("DJANGO_SETTINGS_MODULE", "tienlen_site.settings")
    env["PYTHONUNBUFFERED"] = "1"
    env.update(extra or {})
    return env


class ProcessGroup:
    """Starts named child processes and guarantees they are all gone on exit."""

    def __init__(self, log_dir: Path, *, stop_timeout: float = 15.0) -> None:
        self.log_dir = log_dir
        self.stop_timeout = stop_timeout
        self.processes: dict[str, ManagedProcess] = {}
        log_dir.mkdir(parents=True, exist_ok=True)

    def start(
        self, name: str, argv: Sequence[str], *, env: Mapping[str, str] | None = None
    ) -> ManagedProcess:
        if name in self.processes and self.processes[name].alive():
            raise ValueError(f"process {name!r} is already running")
        log_path = self.log_dir / f"{name}.log"
        # A fresh log per run; a restart within this run appends to the same file.
        mode = "ab" if name in self.processes else "wb"
        with open(log_path, mode) as log:
            popen = subprocess.Popen(
                _with_pdeathsig(argv),
                cwd=PROJECT_ROOT,
                env=child_env(env),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # its own process group: we can signal its children
            )
        process = ManagedProcess(name, list(argv), log_path, popen)
        self.processes[name] = process
        return process

    def stop(self, name: str, *, sig: int = signal.SIGTERM) -> int | None:
        """Signal the process group, wait, then SIGKILL what is left; returns the exit code."""
        process = self.processes[name]
        process.expected_exit = True
        if process.alive():
            # The leader first, so it shuts its own children down in order (a Celery worker
            # finishes or requeues its task); whatever is left of the group is killed after.
            with suppress(ProcessLookupError):
                os.kill(process.pid, sig)
            try:
                process.popen.wait(timeout=self.stop_timeout)
            except subprocess.TimeoutExpired:
                process.signal_group(signal.SIGKILL)
                process.popen.wait(timeout=self.stop_timeout)
        # Grandchildren may outlive their parent (e.g. a pool process): finish the group.
        process.signal_group(signal.SIGKILL)
        return process.popen.returncode

    def kill(self, name: str) -> None:
        """SIGKILL the whole group at once: a crash, as the fault tests need it."""
        self.stop(name, sig=signal.SIGKILL)

    def stop_all(self) -> None:
        for name in reversed(list(self.processes)):
            self.stop(name)

    def check_alive(self) -> None:
        for process in self.processes.values():
            if not process.expected_exit and not process.alive():
                raise ProcessFailed(
                    f"{process.name} exited with status {process.popen.returncode}; "
                    f"last lines of {process.log_path}:\n{process.log_tail()}"
                )

    def __enter__(self) -> ProcessGroup:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop_all()


@contextmanager
def terminate_on_signals() -> Iterator[None]:
    """Turn SIGTERM/SIGHUP into KeyboardInterrupt so `finally` blocks clean up children."""

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt(signal.Signals(signum).name)

    previous = {sig: signal.signal(sig, interrupt) for sig in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def port_is_free(host: str, port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


def wait_until(
    condition: Callable[[], bool],
    *,
    timeout: float,
    what: str,
    group: ProcessGroup | None = None,
    interval: float = 0.25,
) -> None:
    """Poll `condition`; fail early with the log of any managed process that died."""
    deadline = time.monotonic() + timeout
    while True:
        if group is not None:
            group.check_alive()
        if condition():
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(interval)


def python_argv(*args: str) -> list[str]:
    return [sys.executable, *args]


# --- the demo's configuration and its terminal output --------------------------------------

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


class Printer:
    """The demo's terminal output: steps, a progress line, and the final tables."""

    def __init__(self, out: object, style: object, *, interactive: bool) -> None:
        self.out = out
        self.style = style
        self.interactive = interactive
        self._last_progress = ""

    def write(self, text: str = "", ending: str = "\n") -> None:
        self.out.write(text, ending=ending)  # type: ignore[attr-defined]
        self.out.flush()  # type: ignore[attr-defined]

    def step(self, text: str) -> None:
        self._end_progress()
        self.write(self.style.MIGRATE_HEADING(f"==> {text}"))  # type: ignore[attr-defined]

    def detail(self, text: str) -> None:
        self._end_progress()
        self.write(f"    {text}")

    def progress(self, *, tables_done: int, tables_total: int, games_done: int,
                 games_total: int, elapsed: float) -> None:
        if not tables_total:
            return  # not scheduled yet
        width = 30
        filled = int(width * games_done / games_total) if games_total else 0
        counts = (
            f"    [{'#' * filled}{'.' * (width - filled)}] games {games_done}/{games_total}"
            f"  tables {tables_done}/{tables_total}"
        )
        if self.interactive:
            self.write(f"\r{counts}  {elapsed:5.0f}s", ending="")
        elif counts != self._last_progress:
            self.write(f"{counts}  {elapsed:5.0f}s")  # logs get a line per change only
        self._last_progress = counts

    def _end_progress(self) -> None:
        if self.interactive and self._last_progress:
            self.write()
        self._last_progress = ""

    def report(self, result: DemoResult) -> None:
        self._end_progress()
        self.step(
            f"{result.tournament_name}: {result.status} — {result.games} games "
            f"in {result.seconds:.0f}s"
        )
        if result.status_reason:
            self.detail(result.status_reason)
        self.write()
        self.write(format_table("Final standings", result.standings))
        self.write()
        self.write(format_table("Ratings", result.ratings))

    def serving(self, url: str, log_dir: Path) -> None:
        self.write()
        self.step(f"Browse the replays at {url}   (Ctrl-C to stop)")
        self.detail(f"process logs: {log_dir}")


def format_table(title: str, rows: Sequence[Mapping[str, object]]) -> str:
    """A plain text table of dict rows (keys are the columns, in order)."""
    if not rows:
        return f"{title}: (none)"
    columns = list(rows[0])
    cells = [[_cell(row.get(c)) for c in columns] for row in rows]
    widths = [max(len(c), *(len(r[i]) for r in cells)) for i, c in enumerate(columns)]
    numeric = [all(_is_number(row.get(c)) for row in rows) for c in columns]

    def line(values: Sequence[str]) -> str:
        parts = [
            v.rjust(w) if num else v.ljust(w)
            for v, w, num in zip(values, widths, numeric, strict=True)
        ]
        return "  ".join(parts).rstrip()

    out = [title, line(columns), line(["-" * w for w in widths])]
    out.extend(line(r) for r in cells)
    return "\n".join(out)


def _is_number(value: object) -> bool:
    """Numbers, and text that starts like one ("+2.00 ±0.82"), are right-aligned."""
    if isinstance(value, str):
        return value[:1].isdigit() or (value[:1] in "+-" and value[1:2].isdigit())
    return isinstance(value, int | float) and not isinstance(value, bool)


def _cell(value: object) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.2f}" if abs(value) < 100 else f"{value:.1f}"
    return str(value)


# --- the run ---------------------------------------------------------------------------------

def referee_token_store() -> str:
    """The platform's database by default; TIENLEN_TOKEN_STORE (the referee's own variable)
    may name another store."""
    return os.environ.get("TIENLEN_TOKEN_STORE") or "tournaments.token_store:DjangoTokenStore"


def referee_healthy(target: str) -> bool:
    import grpc
    from grpc_health.v1 import health_pb2, health_pb2_grpc

    try:
        with grpc.insecure_channel(target) as channel:
            reply = health_pb2_grpc.HealthStub(channel).Check(
                health_pb2.HealthCheckRequest(service=""), timeout=2
            )
    except grpc.RpcError:
        return False
    return reply.status == health_pb2.HealthCheckResponse.SERVING


def referee_connected_bot_ids(target: str, organizer_token: str) -> set[str]:
    from referee_service.organizer_client import OrganizerClient

    try:
        with OrganizerClient(target, organizer_token) as client:
            return {str(b["bot_id"]) for b in client.list_bots()}
    except Exception:  # not up yet, or restarting: the caller polls again
        return set()


def web_answering(host: str, port: int) -> bool:
    import urllib.request

    try:
        with urllib.request.urlopen(f"http://{host}:{port}/healthz", timeout=2) as response:
            return response.status == 200
    except OSError:
        return False


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


@dataclass(frozen=True)
class Progress:
    status: str
    status_reason: str
    tables_done: int
    tables_total: int
    games_done: int
    games_total: int

    @property
    def over(self) -> bool:
        return self.status in ("finished", "cancelled")


def tournament_progress(*, tournament_id: int) -> Progress:
    from tournaments import selectors
    from tournaments.models import Tournament

    tournament = Tournament.objects.get(pk=tournament_id)
    progress = selectors.tournament_progress(tournament=tournament)
    return Progress(
        status=tournament.status,
        status_reason=tournament.status_reason,
        tables_done=progress.tables_done,
        tables_total=progress.tables_total,
        games_done=progress.games_done,
        games_total=progress.games_planned,
    )


def demo_run(*, config: DemoConfig, group: ProcessGroup, say: Printer) -> DemoResult:
    """Start every process, run the round robin to its end, and read the results."""
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
            games_done=progress.games_done, games_total=progress.games_total,
            elapsed=time.monotonic() - started,
        )
        if progress.over:
            break
        group.check_alive()
        if time.monotonic() - started > config.timeout:
            raise TimeoutError(
                f"the tournament is not over after {config.timeout:.0f}s "
                f"({progress.games_done}/{progress.games_total} games)"
            )
        time.sleep(0.5)
    return DemoResult(
        tournament_id=tournament.pk,
        tournament_name=tournament.name,
        tournament_path=path,
        status=progress.status,
        status_reason=progress.status_reason,
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


def celery_worker_argv(*, concurrency: int, name: str) -> list[str]:
    return python_argv(
        "-m", "celery", "-A", "tienlen_site.celery:app", "worker",
        "--loglevel", "INFO", "--concurrency", str(concurrency),
        "--hostname", f"{name}-{os.getpid()}@%h", "--without-gossip", "--without-mingle",
    )


def web_argv(*, host: str, port: int) -> list[str]:
    return python_argv(
        "-m", "uvicorn", "tienlen_site.asgi:application", "--host", host, "--port", str(port),
        "--no-access-log",
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
    from django.urls import NoReverseMatch, reverse

    try:
        return reverse("web:tournament_detail", args=[slug])
    except NoReverseMatch:  # the site is not installed: the API still serves it
        return f"/tournaments/{slug}/"
