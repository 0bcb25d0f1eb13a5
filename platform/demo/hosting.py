"""The demo hosting one of its bots (by default `planner-v1`; `run_demo --hosted-bot
KIND`, `none` for none): the bot's code is written to a folder and handed to the platform
exactly as an author would hand it — `tienlen-bot submit DIR --bot NAME --site URL
--hosted` with an API token of the bot's author, or with `--no-serve` (no site) the
submission service that API calls — then validated and played by a runner (a Celery worker
of the runner queue) with no process of the demo's for it. On a host that cannot sandbox
(no bwrap, no user namespaces, not root, ...) or without the built runtimes, the demo says
why in one line and runs that bot as a process (remote) instead."""

from __future__ import annotations

import inspect
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from demo.processes import PROJECT_ROOT, python_argv


def hosting_env() -> dict[str, str]:
    """Where the runner finds the runtimes: TIENLEN_HOSTING_RUNTIMES if set, else the
    checkout's `var/hosting/runtimes` (`make hosting-runtimes`), not the demo's var dir."""
    return {"TIENLEN_HOSTING_RUNTIMES": os.environ.get("TIENLEN_HOSTING_RUNTIMES")
            or str(PROJECT_ROOT / "var" / "hosting" / "runtimes")}


def hosting_problem() -> str | None:
    """Why this host cannot run a hosted bot for the demo, or None."""
    from django.conf import settings

    from tournaments.hosting.check import problems, runtime_problems
    from tournaments.hosting.process import HostingConfig

    config = HostingConfig.from_env(Path(settings.VAR_DIR), {**os.environ, **hosting_env()})
    found = problems(config) or runtime_problems(config, ["python3.11"])
    return "; ".join(found) if found else None


def bot_source(run_target: str) -> str:
    """A self-contained bot.py for a demo kind: a subclass of an SDK example, or the demo
    class's own source with its module's imports (the runtime has the SDK, not the demo)."""
    from bots_sdk.loader import load_bot_class

    cls = load_bot_class(run_target)
    if cls.__module__.startswith("bots_sdk."):
        return (f"from {cls.__module__} import {cls.__name__} as _Example\n\n\n"
                f"class Hosted{cls.__name__}(_Example):\n    \"\"\"The example, hosted.\"\"\"\n")
    module = sys.modules[cls.__module__]
    imports = [line for line in inspect.getsource(module).splitlines() if line.startswith(("from ", "import "))]
    return "\n".join(imports) + "\n\n\n" + inspect.getsource(cls)


def runner_argv(*, concurrency: int = 4) -> list[str]:
    from django.conf import settings

    return python_argv(
        "-m", "celery", "-A", "tienlen_site.celery:app", "worker", "--loglevel", "INFO",
        "--queues", settings.TIENLEN_RUNNER_QUEUE, "--pool", "threads", "--concurrency", str(concurrency),
        "--hostname", f"demo-runner-{os.getpid()}@%h", "--without-gossip", "--without-mingle",
    )


def submit(*, folder: Path, bot_name: str, api_token: str, site: str) -> subprocess.CompletedProcess:
    """`tienlen-bot submit folder --bot NAME --site SITE --hosted`, as an author runs it."""
    return subprocess.run(
        python_argv("-m", "bots_sdk.cli", "submit", str(folder), "--bot", bot_name, "--site", site,
                    "--hosted", "--timeout", "300"),
        env={**os.environ, "TIENLEN_API_TOKEN": api_token}, cwd=PROJECT_ROOT,
        capture_output=True, text=True, timeout=400, check=False)


def submit_through_service(*, folder: Path, bot_id: int, author, timeout: float,
                           check: Callable[[], None] = lambda: None) -> tuple[list[str], bool]:
    """What `tienlen-bot submit folder --hosted` does, through the service the site's API
    calls (the same zip, the same checks, the same validation on a runner): the lines the
    command would print, and whether the bot ended up hosted."""
    from bots_sdk.submit import pack, sdk_version
    from tournaments.models import Bot
    from tournaments.services import hosting

    bot = Bot.objects.get(pk=bot_id)
    submission = hosting.submission_create(bot=bot, user=author, data=pack(folder), runtime="python3.11",
                                           sdk_version=sdk_version())

    def line(s) -> str:  # as tienlen-bot submit prints a version
        detail = f" — {s.detail}" if s.detail else ""
        return f"{s.version} ({s.sha256[:12]}, {s.size} bytes): {s.status}{detail}"

    lines = [f"submitted {bot.name} {line(submission)}"]
    deadline = time.monotonic() + timeout
    while submission.status in ("queued", "validating"):
        check()
        if time.monotonic() > deadline:
            return [*lines, f"still {submission.status} after {timeout:.0f} s"], False
        time.sleep(0.5)
        submission.refresh_from_db()
    lines.append(f"validated {bot.name} {line(submission)}")
    if submission.status != "ready":
        return lines, False
    bot.refresh_from_db()
    bot = hosting.bot_hosting_set(bot=bot, user=author, hosting="hosted")
    lines.append(f"{bot.name} is {bot.hosting}, playing {submission.version}")
    return lines, True
