"""`platform/` must never shadow the standard library's `platform` module."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_stdlib_platform_after_django_setup() -> None:
    code = (
        "import os, sys; sys.path[:0] = ['.', 'platform'];"
        "os.environ['DJANGO_SETTINGS_MODULE'] = 'tienlen_site.settings';"
        "import django; django.setup();"
        "import uuid, platform; print(platform.system(), uuid.uuid4().version)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    system, version = out.stdout.split()
    assert system == "Linux"
    assert version == "4"


def test_platform_is_not_a_package() -> None:
    assert not (ROOT / "platform" / "__init__.py").exists()


def test_manage_check_passes() -> None:
    out = subprocess.run(
        [sys.executable, "manage.py", "check"], cwd=ROOT, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    assert "no issues" in out.stdout
