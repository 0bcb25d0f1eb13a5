"""Build hook: compile the rules engine's hot modules with mypyc at install time.

The project's metadata is in pyproject.toml; this file only adds the compiled modules. The
engine's Python source stays the single definition of the rules: mypyc compiles that same
typed source (checked by `mypy --strict` in `make lint`) to C extensions placed next to the
.py files, and `bots_sdk.engine_build` picks the compiled modules only while they match the
source (a stale build, or `TIENLEN_ENGINE=python`, runs the pure Python; `tests/engine` runs
against both in `make test`).

The extensions are optional: without a C compiler (or with `TIENLEN_ENGINE_BUILD=python`)
the install is pure Python and only slower.

The bot SDK's own distribution (packaging/sdk/setup.py, `pip install ./packaging/sdk`) compiles the engine with
the same two functions below: it loads this file as a module, so `setup()` runs only when
this file is the build script.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from pathlib import Path

from setuptools import setup

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT / "bots_sdk"))  # engine_build.py, importable without the package
import engine_build  # noqa: E402

sys.path.pop(0)


def ext_modules(target_dir: Path | None = None, mypy_cache: Path | None = None) -> list:
    """The engine's mypyc extensions, or [] for a pure-Python install.

    C sources go to `target_dir` (default: build/ of the project root) and mypy's cache to
    `mypy_cache` (default: .mypy_cache/ there); both absolute when given, so the SDK's build
    can keep the checkout untouched.
    """
    if os.environ.get("TIENLEN_ENGINE_BUILD", "mypyc") == "python":
        return []
    try:
        from mypyc.build import mypycify
    except ImportError:
        print("mypyc not available: installing the pure-Python engine", file=sys.stderr)
        return []
    options = ["--follow-imports=silent"]
    if mypy_cache is not None:
        options.append(f"--cache-dir={mypy_cache}")
    cwd = os.getcwd()
    os.chdir(ROOT)  # mypyc reads [tool.mypy] from pyproject.toml and wants relative paths
    try:
        # --follow-imports=silent: mypy still reads the packages around the engine (bots_sdk's
        # __init__ imports the gRPC client lazily), but only the compiled sources are checked,
        # so a missing third-party stub outside the engine cannot fail the install.
        extensions = mypycify([*options, *engine_build.COMPILED_SOURCES],
                              opt_level="3",
                              group_name=engine_build.GROUP_NAME,
                              target_dir=None if target_dir is None else str(target_dir))
    finally:
        os.chdir(cwd)
    for ext in extensions:
        ext.optional = True  # a failed compile leaves the pure-Python engine, not a failed install
    return extensions


def engine_manifest() -> str:
    """engine_build.json: the SHA-256 of each compiled source (engine_build reads it back)."""
    digests = {src: hashlib.sha256((ROOT / src).read_bytes()).hexdigest()
               for src in engine_build.COMPILED_SOURCES}
    return json.dumps(digests, indent=1, sort_keys=True) + "\n"


if __name__ == "__main__":  # the build script (setuptools runs it as __main__)
    extensions = ext_modules()
    if extensions:
        (ROOT / engine_build.MANIFEST).write_text(engine_manifest(), encoding="utf-8")
    setup(ext_modules=extensions)
