"""Which build of the rules engine runs: the mypyc-compiled modules or the Python source.

`setup.py` compiles the engine's hot modules with mypyc at install time and records the
SHA-256 of each compiled source in `engine_build.json`. The compiled extension sits next to
its .py file and Python would prefer it, so `bots_sdk` calls `select()` before the engine is
imported: the compiled modules are used only while every source still matches the build
(an edited or rebased source makes the whole engine run as Python, with a warning, until
`make setup` rebuilds it). `TIENLEN_ENGINE` chooses explicitly:

- unset or `auto`: compiled when built and fresh, else Python;
- `python`: the pure-Python source, even when a fresh build exists;
- `mypyc`: the compiled build, or an ImportError saying why it cannot be used.

Standard library only; no engine import (setup.py loads this file on its own).
"""

from __future__ import annotations

import hashlib
import importlib.abc
import importlib.machinery
import importlib.util
import json
import os
import sys
import warnings
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

#: The compiled modules (paths from the project root), in one mypyc group.
COMPILED_SOURCES = (
    "bots_sdk/cards.py",
    "bots_sdk/rules/options.py",
    "bots_sdk/rules/combos.py",
    "bots_sdk/rules/moves.py",
    "bots_sdk/rules/scoring.py",
    "bots_sdk/rules/settlement.py",
    "bots_sdk/rules/deal.py",
    "bots_sdk/rules/visibility.py",
    "bots_sdk/rules/game.py",
)
GROUP_NAME = "bots_sdk._engine"  # the shared library: bots_sdk/_engine__mypyc.*.so
MANIFEST = "bots_sdk/engine_build.json"
MODES = ("auto", "python", "mypyc")

_ROOT = Path(__file__).resolve().parent.parent


def _module(source: str) -> str:
    return source.removesuffix(".py").replace("/", ".")


def _extension(source: str) -> Path | None:
    base = _ROOT / source.removesuffix(".py")
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        candidate = base.with_name(base.name + suffix)
        if candidate.exists():
            return candidate
    return None


def _stale() -> list[str]:
    """Compiled sources that no longer match their build (all of them without a manifest)."""
    try:
        built = json.loads((_ROOT / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return list(COMPILED_SOURCES)
    stale = []
    for source in COMPILED_SOURCES:
        try:
            digest = hashlib.sha256((_ROOT / source).read_bytes()).hexdigest()
        except OSError:
            continue  # an installed wheel may ship the extension without the source
        if built.get(source) != digest:
            stale.append(source)
    return stale


class _SourceFinder(importlib.abc.MetaPathFinder):
    """Loads the engine's modules from their .py files, ahead of the compiled extensions."""

    def __init__(self, modules: dict[str, Path]) -> None:
        self.modules = modules

    def find_spec(self, fullname: str, path: Sequence[str] | None = None,
                  target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        source = self.modules.get(fullname)
        if source is None:
            return None
        return importlib.util.spec_from_file_location(fullname, source)


BUILD = "python"
"""The build in use once `select()` ran: "mypyc" or "python"."""


def select() -> str:
    """Decide which build the engine's modules load from (call before importing them)."""
    global BUILD
    mode = os.environ.get("TIENLEN_ENGINE", "auto") or "auto"
    if mode not in MODES:
        raise ImportError(f"TIENLEN_ENGINE must be one of {', '.join(MODES)}, got {mode!r}")
    missing = [s for s in COMPILED_SOURCES if _extension(s) is None]
    reason = ""
    if missing:
        reason = f"not compiled ({', '.join(missing)}): run `make setup` with a C compiler"
    elif mode != "python":
        stale = _stale()
        if stale:
            reason = (f"the compiled build is older than its source ({', '.join(stale)}): "
                      f"run `make setup` to rebuild it")
            if mode == "auto":
                warnings.warn(f"bots_sdk: running the pure-Python engine, {reason}",
                              RuntimeWarning, stacklevel=2)
    if mode == "mypyc" and reason:
        raise ImportError(f"TIENLEN_ENGINE=mypyc but {reason}")
    if reason or mode == "python":
        sources = {_module(s): _ROOT / s for s in COMPILED_SOURCES if (_ROOT / s).exists()}
        if not any(isinstance(f, _SourceFinder) for f in sys.meta_path):
            sys.meta_path.insert(0, _SourceFinder(sources))
        BUILD = "python"
    else:
        BUILD = "mypyc"
    return BUILD
