"""Measure a benchmark in another checkout (`--tree LABEL=PATH[:python]`): a child
interpreter with that tree first on its path, so a before/after comparison runs the two
engines side by side in one run, each on its own build (or on its pure-Python source)."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

BENCHMARKS = Path(__file__).resolve().parent


def measure_in_tree(path: Path, python_only: bool, module: str, call: str) -> dict[str, Any]:
    """`module.call` (a Python expression returning JSON-able data) evaluated in `path`."""
    env = dict(os.environ)
    if python_only:
        env["TIENLEN_ENGINE"] = "python"
    code = (f"import sys, json; sys.path.insert(0, {str(path)!r}); "
            f"sys.path.insert(1, {str(BENCHMARKS)!r}); import {module}; "
            f"print(json.dumps({module}.{call}))")
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          text=True, timeout=1800, cwd=path)
    if done.returncode != 0:
        raise SystemExit(f"{path}: {done.stderr.strip()}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def add_tree_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--tree", action="append", default=[], metavar="LABEL=PATH[:python]",
                        help="a checkout to measure (repeatable; default: this tree)")


def parse_trees(specs: list[str], default: Path, needs: str) -> list[tuple[str, Path, bool]]:
    """`--tree` values as (label, checkout, pure-Python engine?); each checkout must hold
    the file `needs` (relative to it), the code the benchmark measures."""
    trees = []
    for spec in specs or [f"this tree={default}"]:
        label, sep, where = spec.partition("=")
        if not sep or not label or not where:
            raise SystemExit(f"--tree takes LABEL=PATH[:python], got {spec!r}")
        python_only = where.endswith(":python")
        path = Path(where.removesuffix(":python")).resolve()
        if not (path / needs).exists():
            raise SystemExit(f"--tree {spec!r}: no {needs} under {path}")
        trees.append((label, path, python_only))
    return trees
