"""Production configuration: what `docker/env.example` sets must pass Django's deployment
checks, a broken configuration must fail loudly, and probes must reach `/healthz`."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys

import pytest

from tests.deploy.deploy_files import ROOT, env_example


def run_manage(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    base = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("DJANGO_", "DATABASE_", "REFEREE_"))
    }
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT, capture_output=True, text=True, env={**base, **env}, check=False,
    )


def production_env() -> dict[str, str]:
    documented = env_example()
    return {
        "DJANGO_DEBUG": "0",
        "DJANGO_SECRET_KEY": secrets.token_urlsafe(50),
        "DJANGO_ALLOWED_HOSTS": documented["DJANGO_ALLOWED_HOSTS"],
        "DJANGO_CSRF_TRUSTED_ORIGINS": documented["DJANGO_CSRF_TRUSTED_ORIGINS"],
        "DJANGO_SECURE_SSL_REDIRECT": documented["DJANGO_SECURE_SSL_REDIRECT"],
        "REFEREE_ORGANIZER_TOKEN": secrets.token_urlsafe(32),
    }


def test_check_deploy_passes_with_the_documented_production_values() -> None:
    out = run_manage("check", "--deploy", "--fail-level", "WARNING", **production_env())
    assert out.returncode == 0, out.stdout + out.stderr
    assert "no issues" in out.stdout


def test_check_deploy_flags_the_development_defaults() -> None:
    out = run_manage("check", "--deploy", "--fail-level", "WARNING")
    assert out.returncode != 0
    assert "DEBUG" in out.stdout + out.stderr


@pytest.mark.parametrize(
    ("secret", "message"),
    [("", "DJANGO_SECRET_KEY must be set"), ("short", "at least 50 random characters")],
)
def test_production_refuses_a_missing_or_weak_secret_key(secret: str, message: str) -> None:
    out = run_manage("check", **{**production_env(), "DJANGO_SECRET_KEY": secret})
    assert out.returncode != 0
    assert message in out.stderr


@pytest.mark.django_db
def test_healthz_answers_probes_despite_host_and_https_rules(client, settings) -> None:
    settings.ALLOWED_HOSTS = ["tienlen.example.org"]
    settings.SECURE_SSL_REDIRECT = True
    response = client.get("/healthz", HTTP_HOST="127.0.0.1:8000")
    assert response.status_code == 200
    assert response.json() == {"status": "ok", "database": "ok"}
    # Any other page still enforces the production rules.
    assert client.get("/", HTTP_HOST="127.0.0.1:8000").status_code == 400


def test_production_refuses_the_development_organiser_credential() -> None:
    env = production_env()
    del env["REFEREE_ORGANIZER_TOKEN"]
    out = run_manage("check", **env)
    assert out.returncode != 0
    assert "REFEREE_ORGANIZER_TOKEN must be set" in out.stderr


SERVE_PAGES = r"""
import re
import sys
import django
django.setup()
from django.core.management import call_command
from django.test import Client
call_command("migrate", verbosity=0)
client = Client()
for path in sys.argv[1:]:
    response = client.get(path, HTTP_HOST="tienlen.example.org", secure=True,
                          HTTP_ACCEPT="text/html,application/xhtml+xml,*/*;q=0.8")  # a browser
    body = b"".join(response).decode(errors="replace")  # FileResponse (the icon) streams
    hashed = re.search(r"/static/[\w./-]+?\.[0-9a-f]{12}\.(css|js)", body)
    print(path, response.status_code, bool(hashed))
"""


def test_production_serves_pages_with_collected_hashed_static_files(tmp_path) -> None:
    """What the image does: collectstatic at build time (manifest storage), then pages
    render with hashed static URLs; a missing static file would be a 500 here."""
    env = {
        **production_env(),
        "TIENLEN_VAR_DIR": str(tmp_path / "var"),
        "DJANGO_STATIC_ROOT": str(tmp_path / "static"),
    }
    collected = run_manage("collectstatic", "--noinput", **env)
    assert collected.returncode == 0, collected.stderr
    assert (tmp_path / "static" / "staticfiles.json").exists()
    base = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "DATABASE_"))}
    pages = ["/", "/tournaments/", "/leaderboards/", "/bots/", "/accounts/login/", "/api/v1/",
             "/api/v1/docs/", "/api/v1/schema/", "/favicon.ico"]
    out = subprocess.run(
        [sys.executable, "-c", SERVE_PAGES, *pages],
        cwd=ROOT, capture_output=True, text=True, check=False,
        env={**base, **env, "PYTHONPATH": f"{ROOT / 'platform'}{os.pathsep}{ROOT}",
             "DJANGO_SETTINGS_MODULE": "tienlen_site.settings"},
    )
    assert out.returncode == 0, out.stderr[-3000:]
    rows = [line.split() for line in out.stdout.splitlines()]
    assert [(r[0], r[1]) for r in rows] == [(p, "200") for p in pages]
    assert all(r[2] == "True" for r in rows[:-2]), rows  # HTML pages link hashed static files
