"""The engine is a bounded package: it imports only the standard library
and itself, with no import cycle and no import hidden inside a function; it works without
gRPC, protobuf or Django installed; and nothing outside it reads a game's private fields."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ENGINE_FILES = [ROOT / "bots_sdk" / "cards.py", ROOT / "bots_sdk" / "engine_build.py",
                *sorted((ROOT / "bots_sdk" / "rules").glob("*.py"))]


def _module_name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


ENGINE_MODULES = {_module_name(p): p for p in ENGINE_FILES}


def _imports(path: Path) -> list[tuple[str, ast.AST, bool]]:
    """(imported module, node, at module level) for every import of a file, relative
    imports resolved; TYPE_CHECKING blocks count as module level (and as imports)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = _module_name(path) if path.name == "__init__.py" else _module_name(path).rpartition(".")[0]
    top_level = set()
    for node in tree.body:
        top_level.add(node)
        if isinstance(node, ast.If):  # `if TYPE_CHECKING:` and the like
            top_level.update(node.body)
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.extend((alias.name, node, node in top_level) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                if node.level > 1:
                    base = base[: -(node.level - 1)]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            # `from . import x` / `from bots_sdk import engine_build` import the submodule
            submodules = [f"{module}.{alias.name}" for alias in node.names
                          if f"{module}.{alias.name}" in ENGINE_MODULES]
            out.extend((sub, node, node in top_level) for sub in submodules)
            if len(submodules) < len(node.names) and (not node.level or node.module):
                out.append((module, node, node in top_level))
    return out


def _engine_target(module: str) -> str | None:
    while module:
        if module in ENGINE_MODULES:
            return module
        module = module.rpartition(".")[0]
    return None


def test_the_engine_imports_only_the_standard_library_and_itself() -> None:
    stdlib = sys.stdlib_module_names | {"__future__"}
    outside = []
    for name, path in ENGINE_MODULES.items():
        for module, node, _top in _imports(path):
            if _engine_target(module) is None and module.partition(".")[0] not in stdlib:
                outside.append(f"{name}:{node.lineno} imports {module}")
    assert outside == []


def test_no_import_inside_a_function_in_the_engine() -> None:
    hidden = [f"{name}:{node.lineno} imports {module}"
              for name, path in ENGINE_MODULES.items()
              for module, node, top in _imports(path) if not top]
    assert hidden == []


def test_the_engine_import_graph_has_no_cycle() -> None:
    graph: dict[str, set[str]] = {name: set() for name in ENGINE_MODULES}
    for name, path in ENGINE_MODULES.items():
        for module, _node, _top in _imports(path):
            target = _engine_target(module)
            # a submodule importing its own package's __init__ is how Python loads it
            if target is not None and target != name and not name.startswith(target + "."):
                graph[name].add(target)
    # the package __init__ re-exports its modules; they must not import it back
    seen: dict[str, int] = {}
    cycle: list[str] = []

    def visit(node: str, path: list[str]) -> None:
        seen[node] = 1
        for nxt in sorted(graph[node]):
            if seen.get(nxt) == 1:
                cycle.extend(path + [node, nxt])
                return
            if nxt not in seen:
                visit(nxt, path + [node])
            if cycle:
                return
        seen[node] = 2

    for start in sorted(graph):
        if start not in seen and not cycle:
            visit(start, [])
    assert cycle == [], " -> ".join(cycle)


BLOCKER = textwrap.dedent("""
    import importlib.abc, sys

    class Block(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.partition(".")[0] in ("grpc", "google", "django", "celery", "numpy"):
                raise ImportError(f"{name} is not installed (blocked by the test)")
            return None

    sys.meta_path.insert(0, Block())
""")


def test_the_engine_works_without_grpc_protobuf_or_django() -> None:
    script = BLOCKER + textwrap.dedent("""
        import random
        from bots_sdk.cards import parse_cards
        from bots_sdk.rules import PRESETS, Game, Table, replay_game

        rng = random.Random(3)
        for preset in PRESETS:
            table = Table(4, preset=preset)
            for i in range(3):
                g = table.new_game(seed=f"boundary-{preset}-{i}")
                while not g.is_over:
                    plays = g.legal_plays()
                    k = rng.randrange(len(plays) + g.can_pass)
                    g.pass_turn() if k == len(plays) else g.play(plays[k])
                    g.view(0).to_dict()
                table.finish_game(g)
                assert replay_game(g.replay()).points == g.points
        blocked = sorted(m for m in sys.modules if m.partition(".")[0] in ("grpc", "google", "django"))
        assert not blocked, blocked
        print("ok")
    """)
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"


# Files outside the engine that work with games: none may read Game's private fields.
READERS = [
    ROOT / "platform" / "web" / "replay_frames.py",
    *sorted((ROOT / "referee_service").glob("*.py")),
    *sorted(p for p in (ROOT / "bots_sdk").glob("*.py") if p.name != "cards.py"),
    *sorted((ROOT / "bots_sdk" / "examples").glob("*.py")),
    *sorted((ROOT / "tournaments").rglob("*.py")),
    *sorted((ROOT / "platform").rglob("*.py")),
    *sorted((ROOT / "benchmarks").glob("*.py")),
]


def _game_private_fields() -> set[str]:
    tree = ast.parse((ROOT / "bots_sdk" / "rules" / "game.py").read_text(encoding="utf-8"))
    fields = set()
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                and node.value.id == "self" and node.attr.startswith("_")
                and not node.attr.startswith("__")):
            fields.add(node.attr)
    return fields


def test_nothing_outside_the_engine_reads_game_internals() -> None:
    private = _game_private_fields()
    assert {"_hands", "_moves", "_chain", "_legal", "_table"} <= private
    found = []
    for path in READERS:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and node.attr in private
                    and not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"))):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno} .{node.attr}")
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                    and node.func.id in ("getattr", "hasattr", "setattr") and len(node.args) > 1
                    and isinstance(node.args[1], ast.Constant) and node.args[1].value in private):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.func.id} "
                             f"{node.args[1].value}")
    assert found == []


@pytest.mark.parametrize("module", ["referee_service.wire", "referee_service.view_encoder",
                                    "bots_sdk.wire", "web.replay_frames"])
def test_one_deck_table(module: str) -> None:
    """Card text <-> index lives in bots_sdk.cards only; the layers above import it."""
    from bots_sdk import cards

    source = (ROOT / ("platform/" if module.startswith("web.") else "")
              / (module.replace(".", "/") + ".py")).read_text(encoding="utf-8")
    assert '"SCDH"' not in source and '"J", "Q", "K"' not in source
    assert re.search(r"^from bots_sdk\.cards import .*\b(CARD_TEXT|CARD_INDEX)\b", source, re.M)
    assert cards.CARD_TEXT[0] == "3S" and cards.CARD_TEXT[51] == "2H"
    assert all(cards.CARD_INDEX[t] == i == cards.DECK[i].index and str(cards.DECK[i]) == t
               for i, t in enumerate(cards.CARD_TEXT))
