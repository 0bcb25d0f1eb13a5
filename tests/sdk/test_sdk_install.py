"""The SDK installed alone: a bot author's install, from a clean virtual
environment with the command the README, the bot guide and the site show, brings the SDK,
the engine and `tienlen-bot` with gRPC and protobuf only, and a bot written with it plays
locally and on the platform's referee.

One venv for the module (created once, ~1 min with a warm pip cache: the engine is
compiled with mypyc as it is for a bot author). Without a package registry (a laptop
offline) the module skips; with TIENLEN_REQUIRE_SERVERS set (CI) it fails instead.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import pytest

from tests.needs import unavailable

from .helpers import TOKEN, play_table, result_of

ROOT = Path(__file__).resolve().parents[2]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
SDK_INSTALL = "pip install ./packaging/sdk"  # run in a checkout, in the bot author's virtual environment
DEV_BIN = Path(sys.executable).parent  # the platform's environment (tienlen-referee)

pytestmark = pytest.mark.timeout(600)


def _name(requirement: str) -> str:
    match = re.match(r"[A-Za-z0-9._-]+", requirement)
    assert match, requirement
    return re.sub(r"[-_.]+", "-", match.group(0)).lower()


def _backend() -> ModuleType:
    spec = importlib.util.spec_from_file_location("tienlen_sdk_build_backend", ROOT / "packaging" / "sdk" / "build_backend.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@dataclass
class SdkVenv:
    path: Path
    env: dict[str, str]
    work: Path  # the bot author's directory

    def run(self, *args: str, cwd: Path | None = None, timeout: float = 120,
            env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run(args, cwd=cwd or self.work, env={**self.env, **(env or {})},
                              capture_output=True, text=True, timeout=timeout)

    def python(self, code: str) -> subprocess.CompletedProcess[str]:
        return self.run(str(self.path / "bin" / "python"), "-c", code)


def _author_env(venv: Path) -> dict[str, str]:
    """An activated venv (`. venv/bin/activate`) on a PATH without the platform's commands."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "TIENLEN_ENGINE")}
    path = [d for d in env.get("PATH", os.defpath).split(os.pathsep)
            if d and not any((Path(d) / cmd).exists() for cmd in ("tienlen-referee", "tienlen-bot"))]
    env["PATH"] = os.pathsep.join([str(venv / "bin"), *path])
    env["VIRTUAL_ENV"] = str(venv)
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return env


@pytest.fixture(scope="module")
def sdk_venv(tmp_path_factory: pytest.TempPathFactory) -> SdkVenv:
    base = tmp_path_factory.mktemp("bot-author")
    venv = base / "venv"
    made = subprocess.run([sys.executable, "-m", "venv", str(venv)], capture_output=True, text=True)
    if made.returncode != 0:
        unavailable(f"cannot create a virtual environment (python3-venv?): {made.stderr.strip()}")
    env = _author_env(venv)
    # Is a package registry reachable? (pip's cache answers when it has the wheel.)
    grpcio = next(r for r in PROJECT["project"]["dependencies"] if _name(r) == "grpcio")
    probe = subprocess.run([str(venv / "bin" / "pip"), "download", "--no-deps", "-q", "-d",
                            str(base / "probe"), grpcio], env=env, capture_output=True, text=True,
                           timeout=300)
    if probe.returncode != 0:
        unavailable(f"no package registry reachable to install {grpcio}: {probe.stderr.strip()[-300:]}")
    # The documented command, as typed: in the checkout, with the venv activated.
    installed = subprocess.run(SDK_INSTALL, shell=True, cwd=ROOT, env=env, capture_output=True,
                               text=True, timeout=540)
    assert installed.returncode == 0, installed.stdout[-3000:] + installed.stderr[-3000:]
    work = base / "author"
    work.mkdir()
    return SdkVenv(venv, env, work)


def test_the_documented_command_is_the_one_shown_everywhere():
    from django.conf import settings

    for doc in ("README.md", "docs/bot-guide.md"):
        assert SDK_INSTALL in (ROOT / doc).read_text(encoding="utf-8"), doc
    assert settings.TIENLEN_SDK_INSTALL == SDK_INSTALL  # the site's registration page


def test_the_sdk_install_brings_grpc_and_protobuf_but_not_the_platform(sdk_venv):
    listed = sdk_venv.run(str(sdk_venv.path / "bin" / "pip"), "list", "--format", "json")
    assert listed.returncode == 0, listed.stderr
    installed = {_name(p["name"]): p["version"] for p in json.loads(listed.stdout)}
    assert installed["tienlen-bot-sdk"] == PROJECT["project"]["version"]
    # the pins are the root pyproject's, the one place they are written
    for requirement in PROJECT["tool"]["tienlen"]["sdk"]["dependencies"]:
        pin = next(r for r in PROJECT["project"]["dependencies"] if _name(r) == _name(requirement))
        assert f"{_name(pin)}=={installed[_name(pin)]}" == pin.lower()
    metadata = sdk_venv.python("import importlib.metadata as m\n"
                               "print('\\n'.join(m.requires('tienlen-bot-sdk')))")
    sdk = PROJECT["tool"]["tienlen"]["sdk"]
    assert metadata.stdout.split("\n")[:-1] == [
        *(r for r in PROJECT["project"]["dependencies"] if _name(r) in map(_name, sdk["dependencies"])),
        *(f'{r}; extra == "{extra}"' for extra in sdk["extras"]
          for r in PROJECT["project"]["optional-dependencies"][extra]),
    ], metadata.stderr
    platform_only = {_name(r) for r in PROJECT["project"]["dependencies"]} - {
        _name(r) for r in PROJECT["tool"]["tienlen"]["sdk"]["dependencies"]}
    assert {"django", "celery", "psycopg", "numpy", "scipy"} <= platform_only
    assert not platform_only & installed.keys(), platform_only & installed.keys()
    assert "mypy" not in installed  # a build requirement only
    probe = sdk_venv.python(
        "import importlib.util as u\n"
        "for m in ('django', 'celery', 'psycopg', 'numpy', 'scipy', 'referee_service', 'tournaments'):\n"
        "    assert u.find_spec(m) is None, m\n"
        "print('ok')\n"
    )
    assert probe.stdout.strip() == "ok", probe.stderr
    # the platform's command is not there; the bot author's is
    assert not (sdk_venv.path / "bin" / "tienlen-referee").exists()
    help_ = sdk_venv.run("tienlen-bot", "--help")
    assert help_.returncode == 0, help_.stderr
    assert "Write, test and run Tiến Lên bots." in help_.stdout
    for command in ("run", "arena", "new", "check", "replay", "verify-replay"):
        assert command in help_.stdout


def test_the_engine_is_the_installed_one_compiled_when_a_compiler_is_there(sdk_venv):
    game = sdk_venv.python(
        "import bots_sdk, bots_sdk.rules as rules\n"
        "from bots_sdk import engine_build\n"
        "g = rules.Game.from_seed('sdk-install', 4)\n"
        "while not g.is_over:\n"
        "    plays = g.legal_plays()\n"
        "    g.play(plays[0]) if plays else g.pass_turn()\n"
        "print(bots_sdk.__file__, engine_build.BUILD, sum(g.points), len(g.finishing_order))\n"
    )
    assert game.returncode == 0, game.stderr
    where, build, points, places = game.stdout.split()
    assert Path(where).is_relative_to(sdk_venv.path)  # not the checkout's bots_sdk
    # every module and template of the checkout's bots_sdk, nothing else (no stale file)
    installed, checkout = Path(where).parent, ROOT / "bots_sdk"
    for pattern in ("*.py", "*.tmpl"):
        assert ({p.relative_to(installed) for p in installed.rglob(pattern)}
                == {p.relative_to(checkout) for p in checkout.rglob(pattern)}), pattern
    assert build == ("mypyc" if _backend().compiles() else "python")
    assert (points, places) == ("0", "4")  # a finished game, zero-sum
    assert "RuntimeWarning" not in game.stderr  # no stale-build fallback


def test_a_new_bot_plays_the_local_arena_and_passes_the_check(sdk_venv):
    new = sdk_venv.run("tienlen-bot", "new", "my_bot")
    assert new.returncode == 0, new.stderr
    # The SDK brings no test runner: `new` says what to install, and with it the new
    # project's own tests pass.
    assert "pip install pytest" in new.stdout and "then: python -m pytest my_bot" in new.stdout
    pytest_pin = PROJECT["project"]["optional-dependencies"]["test"][0]
    added = sdk_venv.run(str(sdk_venv.path / "bin" / "pip"), "install", "-q", pytest_pin)
    assert added.returncode == 0, added.stderr
    tests = sdk_venv.run(str(sdk_venv.path / "bin" / "python"), "-m", "pytest", "-q", "my_bot")
    assert tests.returncode == 0 and " passed" in tests.stdout, tests.stdout + tests.stderr
    arena = sdk_venv.run("tienlen-bot", "arena", "my_bot/bot.py", "greedy", "--games", "8",
                         "--json", "--quiet")
    assert arena.returncode == 0, arena.stderr
    results = json.loads(arena.stdout)
    assert results["games"] == 8
    mine = next(b for b in results["bots"] if b["name"] == "my_bot")
    assert mine["own_moves"] > 0 and mine["fallbacks"] == 0 and mine["rejected"] == 0
    check = sdk_venv.run("tienlen-bot", "check", "my_bot/bot.py", "--games", "1")
    assert check.returncode == 0, check.stdout + check.stderr
    assert "my_bot: ready for a ladder" in check.stdout
    assert "WARN  protocol round trip skipped: no referee here" in check.stdout
    # with the platform's referee on PATH the same check plays the protocol round trip
    path = {"PATH": f"{sdk_venv.env['PATH']}{os.pathsep}{DEV_BIN}"}
    check = sdk_venv.run("tienlen-bot", "check", "my_bot/bot.py", "--games", "1", env=path)
    assert check.returncode == 0, check.stdout + check.stderr
    assert re.search(r"PASS  protocol round trip: ", check.stdout), check.stdout


async def test_a_bot_from_the_sdk_install_plays_on_the_platforms_referee(sdk_venv, referee):
    """The bot runs in the author's venv; the referee is the platform's (this process)."""
    import asyncio

    bot = sdk_venv.work / "gateway_bot.py"
    bot.write_text(
        "from bots_sdk import Bot\n"
        "class GatewayBot(Bot):\n"
        "    def play(self, view):\n"
        "        plays = view.legal_plays()\n"
        "        return plays[-1] if plays else view.pass_turn()\n"
    )
    proc = await asyncio.create_subprocess_exec(
        "tienlen-bot", "run", str(bot), "--server", referee.target, "--exit-when-idle",
        cwd=sdk_venv.work, env={**sdk_venv.env, "TIENLEN_TOKEN": TOKEN},
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    try:
        for _ in range(1500):
            if any(referee.registry.connected_bots()) or proc.returncode is not None:
                break
            await asyncio.sleep(0.02)
        assert any(referee.registry.connected_bots()), "the SDK venv's bot did not connect"
        result = result_of(await asyncio.wait_for(play_table(referee, "sdk-install", games=2), 60))
        _, err = await asyncio.wait_for(proc.communicate(), 30)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    log = err.decode()
    assert proc.returncode == 0, log
    assert result.games_played == 2 and list(result.strikes) == [0, 0, 0, 0]
    assert "running GatewayBot" in log and "bye: 1 tables, 2 games" in log


@pytest.mark.filterwarnings("ignore:`project.license` as a TOML table:UserWarning")
@pytest.mark.parametrize("engine_build", ["python", "mypyc"])
def test_the_build_asks_for_mypy_only_when_it_compiles(monkeypatch, engine_build):
    """`TIENLEN_ENGINE_BUILD=python pip install ./packaging/sdk` downloads no mypy (pure-Python engine);
    the default compiles when a C compiler is there, with the platform's mypy pin."""
    backend = _backend()
    monkeypatch.setenv("TIENLEN_ENGINE_BUILD", engine_build)
    monkeypatch.chdir(ROOT / "packaging" / "sdk")  # as pip calls it: setuptools runs ./setup.py
    compiles = backend.compiles()
    if engine_build == "python":
        assert not compiles
    mypy = [r for r in PROJECT["build-system"]["requires"] if _name(r) == "mypy"]
    assert len(mypy) == 1  # the platform's own pin, the one mypyc compiles with
    asked = [r for r in backend.get_requires_for_build_wheel() if _name(r) == "mypy"]
    assert asked == (mypy if compiles else [])
    # the SDK project pins nothing itself: its build needs are the platform's but mypy, its
    # dependencies come from the root pyproject (packaging/sdk/setup.py)
    sdk = tomllib.loads((ROOT / "packaging" / "sdk" / "pyproject.toml").read_text(encoding="utf-8"))
    assert set(sdk["build-system"]["requires"]) == set(PROJECT["build-system"]["requires"]) - set(mypy)
    assert {"version", "dependencies", "optional-dependencies"} <= set(sdk["project"]["dynamic"])
