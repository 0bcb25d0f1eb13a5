"""The domain app stays below the web: it imports neither the site, nor the demo tooling,
nor reverses the site's URL names (layers are enforced, not claimed)."""

from __future__ import annotations

import ast
from pathlib import Path

import tournaments

UPPER_LAYERS = {"web", "demo", "tienlen_site"}


def _modules() -> list[Path]:
    root = Path(tournaments.__file__).parent
    return [p for p in root.rglob("*.py") if "migrations" not in p.parts]


def test_the_domain_app_imports_nothing_above_it() -> None:
    offenders = []
    for path in _modules():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module]
            offenders += [f"{path.name}: {n}" for n in names if n.split(".")[0] in UPPER_LAYERS]
    assert offenders == []


def test_the_domain_app_reverses_no_web_url_name() -> None:
    offenders = [
        f"{path.name}: {node.value!r}"
        for path in _modules()
        for node in ast.walk(ast.parse(path.read_text(), str(path)))
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
        and node.value.startswith("web:")
    ]
    assert offenders == []


def _imports(path: Path) -> list[str]:
    names = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names += [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]
    return names


def test_only_the_app_config_imports_the_tasks() -> None:
    """Tasks import services, never the reverse: a service asks for follow-up work through
    tournaments.jobs, which the tasks provide (loaded by the app's ready())."""
    offenders = [
        f"{path.relative_to(Path(tournaments.__file__).parent)}"
        for path in _modules()
        if path.name not in ("tasks.py", "apps.py") and "tournaments.tasks" in _imports(path)
    ]
    assert offenders == []


def test_every_job_a_service_can_enqueue_is_provided_by_a_task() -> None:
    from tournaments import jobs, tasks  # noqa: F401  (tasks provide the jobs on import)

    assert set(jobs._runners) == set(jobs.Job)
