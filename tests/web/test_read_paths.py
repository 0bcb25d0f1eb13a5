"""One source of truth for tournament reads: pages read what the API shows through
`tournaments.selectors`, and the tournaments app never depends on the web app.

Copies of selectors once lived in `web.queries` and drifted (a progress bar at 100 % between
knockout rounds, failed tables not counted as done); these checks keep them from returning.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
from pathlib import Path

from tournaments import sealing, selectors
from web import queries

ROOT = Path(__file__).resolve().parents[2]


def _imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module)
    return names


def test_the_tournaments_app_never_imports_the_web_app() -> None:
    offenders = {
        str(path.relative_to(ROOT)): sorted(m for m in _imported_modules(path) if m == "web" or m.startswith("web."))
        for path in (ROOT / "tournaments").rglob("*.py")
    }
    assert {k: v for k, v in offenders.items() if v} == {}




def test_web_queries_do_not_redefine_a_selector() -> None:
    def public(module) -> set[str]:
        return {
            name for name, obj in vars(module).items()
            if not name.startswith("_") and (inspect.isfunction(obj) or inspect.isclass(obj))
            and obj.__module__ == module.__name__
        }

    reads = [importlib.import_module(m.name) for m in pkgutil.iter_modules(selectors.__path__, "tournaments.selectors.")]
    assert len(reads) >= 8
    for module in [sealing, *reads]:
        assert public(queries) & public(module) == set(), module.__name__
