"""The demo hosting one of its bots (`run_demo --hosted-bot KIND`): the bot's code is
written to a folder and handed to the platform exactly as an author would hand it —
`tienlen-bot submit DIR --bot NAME --site URL --hosted` with an API token of the bot's
author — then validated and played by a runner (a Celery worker of the runner queue) with
no process of the demo's for it. On a host that cannot sandbox (no bwrap, not root, ...)
or without the built runtimes, the demo says why and runs that bot as a process instead."""

from __future__ import annotations

import inspect
import os
import subprocess
import sys
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

    from tournaments.hosting import runtimes
    from tournaments.hosting.check import problems
    from tournaments.hosting.process import HostingConfig

    config = HostingConfig.from_env(Path(settings.VAR_DIR), {**os.environ, **hosting_env()})
    found = problems(config)
    if found:
        return "; ".join(found)
    try:
        runtimes.load("python3.11", config.runtimes_dir)
    except runtimes.RuntimeError_ as exc:
        return f"{exc} (make hosting-runtimes)"
    return None


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
