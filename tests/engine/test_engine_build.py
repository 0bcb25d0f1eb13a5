"""The two builds of the engine: the mypyc-compiled modules that setup.py
builds at install time, and the pure-Python source they are compiled from. `make test` runs
the whole suite on the compiled build (TIENLEN_ENGINE=mypyc) and tests/engine again on the
Python one (TIENLEN_ENGINE=python); these tests check that the choice is real and safe."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import bots_sdk.rules
from bots_sdk import engine_build

ROOT = Path(__file__).resolve().parents[2]
PROBE = ("import warnings; warnings.simplefilter('always');"
         "import bots_sdk.rules as r; print(r.ENGINE_BUILD, r.game.__file__.rsplit('.', 1)[-1])")


def _compiled() -> bool:
    return all(engine_build._extension(s) is not None for s in engine_build.COMPILED_SOURCES)


def _probe(root: Path, mode: str | None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "TIENLEN_ENGINE"}
    env["PYTHONPATH"] = str(root)
    if mode is not None:
        env["TIENLEN_ENGINE"] = mode
    return subprocess.run([sys.executable, "-c", PROBE], cwd=root, env=env, text=True,
                          capture_output=True, timeout=120)


def test_the_build_asked_for_is_the_build_running() -> None:
    wanted = os.environ.get("TIENLEN_ENGINE", "auto")
    assert bots_sdk.rules.ENGINE_BUILD == engine_build.BUILD
    suffix = bots_sdk.rules.game.__file__.rsplit(".", 1)[-1]
    if wanted == "python":
        assert (bots_sdk.rules.ENGINE_BUILD, suffix) == ("python", "py")
    elif wanted == "mypyc":
        assert (bots_sdk.rules.ENGINE_BUILD, suffix) == ("mypyc", "so")


def test_python_can_be_forced_and_a_bad_mode_is_refused() -> None:
    done = _probe(ROOT, "python")
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["python", "py"]
    done = _probe(ROOT, "fast")
    assert done.returncode != 0
    assert "TIENLEN_ENGINE must be one of auto, python, mypyc, got 'fast'" in done.stderr


def test_a_compiled_build_older_than_its_source_is_never_used(tmp_path: Path) -> None:
    if not _compiled():
        if os.environ.get("TIENLEN_ENGINE") == "mypyc":
            pytest.fail("TIENLEN_ENGINE=mypyc but the engine is not compiled")
        pytest.skip("the engine is not compiled here (no C compiler at install time)")
    copy = tmp_path / "checkout"
    shutil.copytree(ROOT / "bots_sdk", copy / "bots_sdk",
                    ignore=shutil.ignore_patterns("__pycache__"))
    done = _probe(copy, "mypyc")
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["mypyc", "so"]

    game_py = copy / "bots_sdk" / "rules" / "game.py"
    game_py.write_text(game_py.read_text(encoding="utf-8") + "\n# edited after the build\n",
                       encoding="utf-8")
    done = _probe(copy, None)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["python", "py"]
    assert "running the pure-Python engine" in done.stderr
    assert "bots_sdk/rules/game.py" in done.stderr and "make setup" in done.stderr
    done = _probe(copy, "mypyc")
    assert done.returncode != 0
    assert "the compiled build is older than its source (bots_sdk/rules/game.py)" in done.stderr


DIGEST = """
import hashlib, json, random
import bots_sdk.rules as r
digest = hashlib.sha256()
for preset in r.PRESETS:
    for players in (2, 3, 4):
        table = r.Table(players, preset=preset)
        for i in range(12):
            g = table.new_game(seed=f"builds/{preset}/{players}/{i}")
            rng = random.Random(f"{preset}{players}{i}")
            while not g.is_over:
                plays = g.legal_plays()
                k = rng.randrange(len(plays) + g.can_pass)
                g.pass_turn() if k == len(plays) else g.play(plays[k])
                digest.update(repr((g.hand_masks, g.to_move, g.offer, g.table_key,
                                    g.locked_out, g.chops)).encode())
            table.finish_game(g)
            digest.update(json.dumps(g.replay(), sort_keys=True).encode())
print(r.ENGINE_BUILD, digest.hexdigest())
"""


def test_both_builds_play_every_preset_identically() -> None:
    """The compiled engine is the Python source compiled: the same random games (every
    preset, 2-4 players, tables of 12) give the same states move by move and the same
    replays, results and payments."""
    if not _compiled():
        if os.environ.get("TIENLEN_ENGINE") == "mypyc":
            pytest.fail("TIENLEN_ENGINE=mypyc but the engine is not compiled")
        pytest.skip("the engine is not compiled here (no C compiler at install time)")
    out = {}
    for mode in ("mypyc", "python"):
        env = {**os.environ, "TIENLEN_ENGINE": mode, "PYTHONPATH": str(ROOT)}
        done = subprocess.run([sys.executable, "-c", DIGEST], cwd=ROOT, env=env, text=True,
                              capture_output=True, timeout=300)
        assert done.returncode == 0, done.stderr
        build, digest = done.stdout.split()
        assert build == mode
        out[mode] = digest
    assert out["mypyc"] == out["python"]
