"""The PEP 517 backend of tienlen-bot-sdk: setuptools', plus mypy only when it compiles.

mypyc (which comes with mypy) compiles the rules engine at install time. That is worth it
(the compiled engine plays several times faster) but costs a build-time download of mypy
and a C compiler, so the backend asks for mypy only when the engine will be compiled:

- by default, when a C compiler is found (the one Python was built with, sysconfig's CC);
- never with `TIENLEN_ENGINE_BUILD=python`: a pure-Python install, nothing compiled, the
  same rules, only slower.

Either way mypy is a build requirement only (pip's isolated build environment): it is not
installed with the SDK. A wheel is all this project builds: its source is the checkout's
bots_sdk/, outside this directory, which an sdist could not carry.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import sysconfig
import tomllib
from pathlib import Path
from typing import Any

from setuptools import build_meta as _setuptools
from setuptools.build_meta import build_wheel, prepare_metadata_for_build_wheel

__all__ = ["build_sdist", "build_wheel", "get_requires_for_build_sdist",
           "get_requires_for_build_wheel", "prepare_metadata_for_build_wheel"]

ROOT = Path(__file__).resolve().parents[2]


def compiles() -> bool:
    """Whether this build compiles the engine (and so needs mypy)."""
    if os.environ.get("TIENLEN_ENGINE_BUILD", "mypyc") == "python":
        return False
    compiler = shlex.split(sysconfig.get_config_var("CC") or "cc")
    return bool(compiler) and shutil.which(compiler[0]) is not None


def compile_requires() -> list[str]:
    """The mypy the platform compiles with, as pinned in the root pyproject."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    return [r for r in project["build-system"]["requires"]
            if re.match(r"[A-Za-z0-9._-]+", r).group(0).lower() == "mypy"]  # type: ignore[union-attr]


def get_requires_for_build_wheel(config_settings: dict[str, Any] | None = None) -> list[str]:
    requires = list(_setuptools.get_requires_for_build_wheel(config_settings))
    return requires + compile_requires() if compiles() else requires


def get_requires_for_build_sdist(config_settings: dict[str, Any] | None = None) -> list[str]:
    return []


def build_sdist(sdist_directory: str, config_settings: dict[str, Any] | None = None) -> str:
    raise RuntimeError("tienlen-bot-sdk builds wheels only (its source is the checkout's bots_sdk/): "
                       "pip install ./packaging/sdk, or python -m build --wheel packaging/sdk")

