"""Build script of tienlen-bot-sdk (see pyproject.toml next to this file).

Everything it ships comes from the checkout, read at build time, so the SDK cannot drift
from the platform that includes it:

- the package: the checkout's bots_sdk/ (package_dir points there; no copy is kept here);
- the version, the pins of [tool.tienlen.sdk]'s dependencies and its extras: the root
  pyproject.toml, the one place where versions are pinned;
- the compiled engine: the root setup.py's `ext_modules` (mypyc, optional: without mypy or a
  C compiler the engine installs as pure Python), and its `engine_manifest`, written into the
  wheel so that `bots_sdk.engine_build` uses the compiled modules.

The build works in a temporary directory (C sources, mypy's cache, setuptools' build/), so
building never writes into the checkout's source tree nor ships a stale file of an earlier
build.
"""

from __future__ import annotations

import atexit
import importlib.util
import re
import shutil
import sys
import tempfile
import tomllib
from pathlib import Path

from setuptools import find_packages, setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
if not (ROOT / "bots_sdk" / "__init__.py").is_file():  # e.g. a pip older than 21.3 builds a copy
    raise SystemExit(f"tienlen-bot-sdk builds from a checkout of the platform (no bots_sdk/ next to "
                     f"{HERE}): run `pip install ./packaging/sdk` there, with pip 21.3 or newer")
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
SDK = PROJECT["tool"]["tienlen"]["sdk"]


def _load_platform_setup():  # the root setup.py as a module: its functions, not its setup()
    spec = importlib.util.spec_from_file_location("tienlen_platform_setup", ROOT / "setup.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _name(requirement: str) -> str:
    return re.sub(r"[-_.]+", "-", re.match(r"[A-Za-z0-9._-]+", requirement).group(0)).lower()


def pins(names: list[str]) -> list[str]:
    """The root project's requirement for each name, e.g. grpcio -> grpcio==1.85.1."""
    pinned = {_name(r): r for r in PROJECT["project"]["dependencies"]}
    missing = [n for n in names if _name(n) not in pinned]
    if missing:
        raise SystemExit(f"[tool.tienlen.sdk] names {missing}, not in the root project's dependencies")
    return [pinned[_name(n)] for n in names]


platform_setup = _load_platform_setup()
work = Path(tempfile.mkdtemp(prefix="tienlen-bot-sdk-build-"))
atexit.register(shutil.rmtree, work, ignore_errors=True)
# Compiled only by the commands that build: pip also runs this script for the build's
# requirements and for the metadata, which need no C code (mypyc would check and generate
# it each time, a few seconds each).
builds = bool({"bdist_wheel", "build", "build_ext", "install"} & set(sys.argv[1:]))
extensions = (platform_setup.ext_modules(target_dir=work / "mypyc", mypy_cache=work / "mypy-cache")
              if builds else [])
manifest = platform_setup.engine_manifest() if extensions else None
MANIFEST = Path(platform_setup.engine_build.MANIFEST).name  # engine_build.json


class BuildPy(build_py):
    """Copies the package, then writes the compiled engine's manifest into the build."""

    def run(self) -> None:
        super().run()
        if manifest is not None:
            Path(self.build_lib, "bots_sdk", MANIFEST).write_text(manifest, encoding="utf-8")


# the root's package data but the manifest: a checkout's own is for its own build
package_data = {package: [p for p in patterns if p != MANIFEST]
                for package, patterns in PROJECT["tool"]["setuptools"]["package-data"].items()}

setup(
    version=PROJECT["project"]["version"],
    install_requires=pins(SDK["dependencies"]),
    extras_require={extra: PROJECT["project"]["optional-dependencies"][extra] for extra in SDK["extras"]},
    packages=find_packages(str(ROOT), include=["bots_sdk", "bots_sdk.*"]),
    package_dir={"bots_sdk": "../../bots_sdk"},
    package_data={package: patterns for package, patterns in package_data.items() if patterns},
    include_package_data=False,
    ext_modules=extensions,
    cmdclass={"build_py": BuildPy},
    options={"build": {"build_base": str(work / "build")}, "egg_info": {"egg_base": str(work)}},
)
