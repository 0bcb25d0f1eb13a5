"""Build hook: compile the rules engine's hot modules with mypyc at install time.

The project's metadata is in pyproject.toml; this file only adds the compiled modules. The
engine's Python source stays the single definition of the rules: mypyc compiles that same
typed source (checked by `mypy --strict` in `make lint`) to C extensions placed next to the
.py files, and `bots_sdk.engine_build` picks the compiled modules only while they match the
source (a stale build, or `TIENLEN_ENGINE=python`, runs the pure Python; `tests/engine` runs
against both in `make test`).

The extensions are optional: without a C compiler (or with `TIENLEN_ENGINE_BUILD=python`)
the install is pure Python and only slower.
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


def ext_modules() -> list:
    if os.environ.get("TIENLEN_ENGINE_BUILD", "mypyc") == "python":
        return []
    try:
        from mypyc.build import mypycify
    except ImportError:
        print("mypyc not available: installing the pure-Python engine", file=sys.stderr)
        return []
    cwd = os.getcwd()
    os.chdir(ROOT)  # mypyc reads [tool.mypy] from pyproject.toml and wants relative paths
    try:
        # --follow-imports=silent: mypy still reads the packages around the engine (bots_sdk's
        # __init__ imports the gRPC client lazily), but only the compiled sources are checked,
        # so a missing third-party stub outside the engine cannot fail the install.
        extensions = mypycify(["--follow-imports=silent", *engine_build.COMPILED_SOURCES],
                              opt_level="3",
                              group_name=engine_build.GROUP_NAME)
    finally:
        os.chdir(cwd)
    for ext in extensions:
        ext.optional = True  # a failed compile leaves the pure-Python engine, not a failed install
    digests = {src: hashlib.sha256((ROOT / src).read_bytes()).hexdigest()
               for src in engine_build.COMPILED_SOURCES}
    (ROOT / engine_build.MANIFEST).write_text(json.dumps(digests, indent=1, sort_keys=True) + "\n",
                                              encoding="utf-8")
    return extensions


setup(ext_modules=ext_modules())
