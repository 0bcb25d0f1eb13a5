"""Every module, console script and flag the image's entry point names exists, and the
health probes report a real service's state."""

from __future__ import annotations

import importlib
import os
import re
import socket
import subprocess
import sys
import time
import tomllib

import pytest

from tests.deploy.deploy_files import DOCKER, ROOT
from tests.logsafe import preserved_logging

ENTRYPOINT = (DOCKER / "entrypoint.sh").read_text()
HEALTHCHECK = DOCKER / "healthcheck.py"


def resolve(dotted: str) -> object:
    module, _, attr = dotted.partition(":")
    return getattr(importlib.import_module(module), attr)


def test_python_objects_named_by_the_entrypoint_exist() -> None:
    named = set(re.findall(r"\b([a-z_]+(?:\.[a-z_]+)+:[A-Za-z_]+)\b", ENTRYPOINT))
    assert "tienlen_site.asgi:application" in named
    assert "tienlen_site.celery:app" in named
    for dotted in sorted(named):
        with preserved_logging():  # the ASGI module's django.setup() configures logging again
            assert resolve(dotted) is not None, dotted


def test_console_scripts_named_by_the_entrypoint_are_declared() -> None:
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    for script in ("tienlen-referee", "tienlen-bot"):
        assert f"exec {script} " in ENTRYPOINT
        assert callable(resolve(scripts[script])), script


def help_text(*argv: str) -> str:
    # As in the image: platform/ and the project root on the import path.
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "platform"), str(ROOT)])}
    out = subprocess.run(
        [sys.executable, *argv, "--help"],
        cwd=ROOT, capture_output=True, text=True, check=False, env=env,
    )
    assert out.returncode == 0, out.stderr
    return out.stdout


ROLE_HELP = {
    "web": ("-m", "uvicorn"),
    "worker": ("-m", "celery", "-A", "tienlen_site.celery:app", "worker"),
    "runner": ("-m", "celery", "-A", "tienlen_site.celery:app", "worker"),
    "beat": ("-m", "celery", "-A", "tienlen_site.celery:app", "beat"),
    "referee": ("-m", "referee_service"),
    "bot": ("-m", "bots_sdk.cli", "run"),
    "migrate": ("manage.py", "migrate"),
}


def role_flags(role: str) -> set[str]:
    body = ENTRYPOINT.split(f"\n  {role})\n", 1)[1].split(";;", 1)[0]
    return set(re.findall(r"(?<![\w-])(--[a-z][a-z-]+)", body))


@pytest.mark.parametrize("role", sorted(ROLE_HELP))
def test_every_flag_the_entrypoint_passes_is_accepted(role: str) -> None:
    flags = role_flags(role)
    if role in {"worker", "beat", "referee", "bot", "web", "runner"}:
        assert flags, f"no flags found for role {role}"
    text = help_text(*ROLE_HELP[role])
    for flag in sorted(flags):
        assert flag in text, f"{role}: {flag} is not an option of {' '.join(ROLE_HELP[role])}"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def probe(role: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(HEALTHCHECK), role],
        cwd=ROOT, capture_output=True, text=True, env={**os.environ, **env}, timeout=60,
        check=False,
    )


def test_referee_probe_follows_the_real_referee() -> None:
    port = free_port()
    env = {"REFEREE_LISTEN": f"0.0.0.0:{port}"}
    assert probe("referee", **env).returncode == 1  # nothing listening yet
    referee = subprocess.Popen(
        [sys.executable, "-m", "referee_service", "--listen", f"127.0.0.1:{port}"],
        cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 30
        while probe("referee", **env).returncode != 0:
            assert referee.poll() is None, "referee exited"
            assert time.monotonic() < deadline, "referee never became healthy"
            time.sleep(0.5)
    finally:
        referee.terminate()
        referee.wait(timeout=30)


@pytest.mark.django_db(transaction=True)
def test_web_probe_reaches_the_live_site(live_server) -> None:
    port = live_server.url.rsplit(":", 1)[1]
    result = probe("web", WEB_PORT=port)
    assert result.returncode == 0, result.stderr


def test_probe_rejects_an_unknown_role() -> None:
    result = probe("database")
    assert result.returncode == 2
    assert "usage" in result.stderr
