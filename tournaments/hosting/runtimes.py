"""The fixed runtimes hosted bots run on, built by the platform, never by the bot.

| runtime | what a bot gets | built from |
| --- | --- | --- |
| `python3.11` | Debian's Python 3.11 (`/usr/bin/python3.11`) with the SDK, `tienlen-bot-sdk` (the `Bot` API as it is, gRPC and protobuf at the versions pinned in pyproject.toml) and nothing else; the bot runs as `tienlen-bot run /bot/bot.py` | `pip install ./packaging/sdk` into a virtual environment of its own (the engine compiled with mypyc) |
| `node20` | Node.js 20 (the host's `/usr/bin/node`, major version 20 checked at build), `@grpc/grpc-js` and `@grpc/proto-loader` at the versions of bots_sdk/examples/javascript/package-lock.json on `NODE_PATH`, the protocol's `.proto` files (`TIENLEN_PROTO_DIR`); the bot runs as `node /bot/bot.js` | `npm ci --omit=dev --ignore-scripts` of that lock file |

Nothing is installed when a bot starts: a runtime is a directory built once (`ensure()`),
named for a hash of everything it is built from (so a changed SDK is a new runtime, and
a built one never changes), bind-mounted read-only at `/runtime` in every sandbox, with a
`manifest.json` listing its exact versions (shown to bot authors in docs/hosting.md).

No Django here: a runner may use this module bare.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import re
import shutil
import stat
import subprocess
import time
import tomllib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tournaments.hosting.sandbox import INSIDE, Layout

__all__ = ["RUNTIMES", "Runtime", "RuntimeError_", "ensure", "load"]

ROOT = Path(__file__).resolve().parents[2]
LAUNCH = Path(__file__).resolve().parent / "launch"
BASE_PYTHON = "/usr/bin/python3.11"
NODE = "/usr/bin/node"
NODE_MAJOR = 20
JS_EXAMPLE = ROOT / "bots_sdk" / "examples" / "javascript"


class RuntimeError_(Exception):
    """A runtime is missing or could not be built; the message says what to do."""


@dataclass(frozen=True, slots=True)
class Runtime:
    """A built runtime: its directory on the host and how a bot is started on it."""

    name: str
    root: Path
    manifest: Mapping[str, Any]

    @property
    def default_entry(self) -> str:
        return "bot.js" if self.name.startswith("node") else "bot.py"

    def launcher(self, layout: Layout = INSIDE) -> list[str]:
        """The argv prefix of everything run on this runtime. Python: the SDK's
        `tienlen-bot` command line (add `run /bot/bot.py`, or `check /bot/bot.py ...` for a
        validation job); Node: `node` with the runtime preloaded (add the script)."""
        if self.name.startswith("node"):
            return [NODE, "--require", f"{layout.runtime}/started.js"]
        return [f"{layout.runtime}/venv/bin/python", "-I", "-B", "-u", f"{layout.runtime}/launch.py"]

    def play_command(self, entry: str = "", layout: Layout = INSIDE) -> list[str]:
        """The argv that plays the bot whose code is at `layout.bot`."""
        script = f"{layout.bot}/{entry or self.default_entry}"
        if self.name.startswith("node"):
            return [*self.launcher(layout), script]
        return [*self.launcher(layout), "run", script]

    def env(self, layout: Layout = INSIDE) -> dict[str, str]:
        """The runtime's part of the bot's environment."""
        if self.name.startswith("node"):
            return {"NODE_PATH": f"{layout.runtime}/node_modules",
                    "TIENLEN_PROTO_DIR": f"{layout.runtime}/proto"}
        return {}


# ---------------------------------------------------------------------- building

def _files(base: Path, suffixes: Iterable[str]) -> list[Path]:
    wanted = tuple(suffixes)
    out = []
    for path in sorted(base.rglob("*")):
        parts = set(path.relative_to(base).parts)
        if parts & {"__pycache__", "node_modules", "build"} or not path.is_file():
            continue
        if path.name == "engine_build.json" or not path.name.endswith(wanted):
            continue
        out.append(path)
    return out


def _digest(paths: Iterable[Path], extra: str) -> str:
    h = hashlib.sha256(extra.encode())
    for path in paths:
        h.update(str(path.relative_to(ROOT) if path.is_relative_to(ROOT) else path).encode())
        h.update(b"\0")
        h.update(path.read_bytes())
        h.update(b"\0")
    return h.hexdigest()[:12]


def _sdk_pins() -> str:
    """What of the root pyproject.toml goes into the SDK: its version, [tool.tienlen.sdk]
    and the pins of its dependencies (not the rest: a lint setting or a pin of the
    platform's own is no reason to rebuild a runtime)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    sdk = project["tool"]["tienlen"]["sdk"]
    names = {re.sub(r"[-_.]+", "-", n).lower() for n in sdk["dependencies"]}
    pins = [r for r in project["project"]["dependencies"]
            if re.sub(r"[-_.]+", "-", re.split(r"[=<>!~\[ ;]", r, maxsplit=1)[0]).lower() in names]
    return json.dumps([project["project"]["version"], sdk, sorted(pins)], sort_keys=True)


def _python_inputs() -> tuple[list[Path], str]:
    paths = [*_files(ROOT / "bots_sdk", (".py", ".pyi", ".tmpl")),
             *_files(ROOT / "packaging" / "sdk", (".py", ".toml", ".cfg")),
             ROOT / "setup.py", LAUNCH / "python_bot.py"]
    return paths, _version([BASE_PYTHON, "--version"]) + _sdk_pins()


def _node_inputs() -> tuple[list[Path], str]:
    paths = [JS_EXAMPLE / "package.json", JS_EXAMPLE / "package-lock.json", LAUNCH / "started.js",
             *sorted((ROOT / "proto").rglob("*.proto"))]
    return paths, _version([NODE, "--version"])


def _version(argv: Sequence[str]) -> str:
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=30, check=True)
    except (OSError, subprocess.SubprocessError) as exc:
        raise RuntimeError_(f"cannot run {argv[0]}: {exc}") from None
    return (out.stdout or out.stderr).strip()


def _run(argv: Sequence[str], log: Callable[[str], None], **kw: Any) -> None:
    log("  $ " + " ".join(argv))
    proc = subprocess.run(argv, capture_output=True, text=True, **kw)
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-15:])
        raise RuntimeError_(f"{argv[0]} failed (exit {proc.returncode}):\n{tail}")


def _build_python(dest: Path, log: Callable[[str], None]) -> dict[str, Any]:
    if not os.access(BASE_PYTHON, os.X_OK):
        raise RuntimeError_(f"{BASE_PYTHON} is missing: apt-get install python3.11 python3.11-venv "
                            "python3.11-dev (the Python runtime of hosted bots is Debian's)")
    _run([BASE_PYTHON, "-m", "venv", str(dest / "venv")], log)
    pip = [str(dest / "venv" / "bin" / "python"), "-m", "pip", "--disable-pip-version-check",
           "--no-input"]
    _run([*pip, "install", "--no-warn-script-location", str(ROOT / "packaging" / "sdk")], log,
         timeout=1800, env={**os.environ, "PIP_NO_INPUT": "1"})
    _run([*pip, "uninstall", "-y", "pip", "setuptools"], log, timeout=300)  # nothing installs later
    shutil.copy(LAUNCH / "python_bot.py", dest / "launch.py")
    probe = subprocess.run(
        [str(dest / "venv" / "bin" / "python"), "-I", "-c",
         "import json, sys, importlib.metadata as m, bots_sdk.cards, bots_sdk.engine_build as e; "
         "print(json.dumps({'python': sys.version.split()[0], 'engine': e.BUILD, "
         "'packages': {d.metadata['Name']: d.version for d in m.distributions()}}))"],
        capture_output=True, text=True, timeout=120)
    if probe.returncode != 0:
        raise RuntimeError_(f"the new Python runtime does not import the SDK: {probe.stderr[-500:]}")
    found: dict[str, Any] = json.loads(probe.stdout)
    return found


def _build_node(dest: Path, log: Callable[[str], None]) -> dict[str, Any]:
    version = _version([NODE, "--version"])
    match = re.match(r"v(\d+)\.", version)
    if not match or int(match[1]) != NODE_MAJOR:
        raise RuntimeError_(f"the JavaScript runtime is Node.js {NODE_MAJOR}; {NODE} is {version}")
    npm = shutil.which("npm")
    if npm is None:
        raise RuntimeError_("npm is missing (it installs the runtime's packages at build time)")
    for name in ("package.json", "package-lock.json"):
        shutil.copy(JS_EXAMPLE / name, dest / name)
    _run([npm, "ci", "--omit=dev", "--ignore-scripts", "--no-audit", "--no-fund"], log,
         cwd=dest, timeout=900)
    shutil.copytree(ROOT / "proto", dest / "proto",
                    ignore=lambda _d, names: [n for n in names if n.endswith(".py") or n == "__pycache__"])
    shutil.copy(LAUNCH / "started.js", dest / "started.js")
    lock = json.loads((dest / "package-lock.json").read_text())
    packages = {name.removeprefix("node_modules/"): info.get("version")
                for name, info in lock.get("packages", {}).items() if name}
    return {"node": version, "packages": packages}


@dataclass(frozen=True, slots=True)
class _Kind:
    inputs: Callable[[], tuple[list[Path], str]]
    build: Callable[[Path, Callable[[str], None]], dict[str, Any]]


RUNTIMES: dict[str, _Kind] = {
    "python3.11": _Kind(_python_inputs, _build_python),
    "node20": _Kind(_node_inputs, _build_node),
}


def _kind(name: str) -> _Kind:
    if name not in RUNTIMES:
        raise RuntimeError_(f"unknown runtime {name!r} (known: {', '.join(sorted(RUNTIMES))})")
    return RUNTIMES[name]


def default_dir() -> Path:
    """Where the runtimes are built when nothing says otherwise: TIENLEN_HOSTING_RUNTIMES,
    else `runtimes/` in TIENLEN_HOSTING_DIR, else in `$TIENLEN_VAR_DIR/hosting` (the
    checkout's var/ by default), as HostingConfig.from_env has it."""
    if os.environ.get("TIENLEN_HOSTING_RUNTIMES"):
        return Path(os.environ["TIENLEN_HOSTING_RUNTIMES"])
    var = Path(os.environ.get("TIENLEN_VAR_DIR") or ROOT / "var")
    return Path(os.environ.get("TIENLEN_HOSTING_DIR") or default_hosting_dir(var)) / "runtimes"


def reachable_by_others(path: Path) -> bool:
    """Every directory from / down to `path` (as far as it exists) lets other users through:
    what a sandbox started as a slot uid needs to bind-mount anything below it."""
    here = path.resolve()
    for directory in [*reversed(here.parents), here]:
        try:
            mode = directory.stat().st_mode
        except FileNotFoundError:
            return True  # made later, by us, with the default umask
        if not mode & stat.S_IXOTH:
            return False
    return True


def default_hosting_dir(var: Path) -> Path:
    """`var/hosting`, unless a directory above it keeps other users out (a checkout in a
    0700 home, or in `mktemp -d`): the slot uids could not reach the runtimes and sessions
    there, and every sandbox would fail to start ("Can't find source path ... Permission
    denied"). Then a directory of the checkout's own under /var/tmp, named for `var`."""
    here = var / "hosting"
    if reachable_by_others(here.parent):
        return here
    digest = hashlib.sha256(os.fsencode(var.resolve())).hexdigest()[:12]
    return Path("/var/tmp") / f"tienlen-hosting-{digest}"


def directory(name: str, base: Path) -> Path:
    """Where runtime `name`, built from the sources as they are now, lives under `base`."""
    paths, extra = _kind(name).inputs()
    return base / f"{name}-{_digest(paths, extra)}"


def load(name: str, base: Path) -> Runtime:
    """The built runtime `name` for the sources as they are now; RuntimeError_ if it has
    not been built (a runner never builds one on a bot's start: `ensure()` at deploy)."""
    root = directory(name, base)
    try:
        manifest = json.loads((root / "manifest.json").read_text())
    except (OSError, ValueError):
        raise RuntimeError_(f"runtime {name} is not built in {base} (python -m "
                            f"tournaments.hosting.runtimes --build {name})") from None
    return Runtime(name, root, manifest)


def ensure(name: str, base: Path, log: Callable[[str], None] = print) -> Runtime:
    """Runtime `name`, built first if it is not (once per host: a lock file keeps two
    builders apart; the result appears under its final name only when complete)."""
    with contextlib.suppress(RuntimeError_):
        return load(name, base)
    base.mkdir(parents=True, exist_ok=True)
    os.chmod(base, 0o755)
    with open(base / f".build-{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        with contextlib.suppress(RuntimeError_):
            return load(name, base)
        final = directory(name, base)
        work = base / f".tmp-{final.name}-{os.getpid()}"
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir()
        log(f"building runtime {name} in {final} (once; a few minutes)")
        started = time.monotonic()
        try:
            found = _kind(name).build(work, log)
            manifest = {"runtime": name, "built_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                        "inputs": final.name.rsplit("-", 1)[1], **found}
            (work / "manifest.json").write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
            _world_readable(work)
            os.rename(work, final)
        except BaseException:
            shutil.rmtree(work, ignore_errors=True)
            raise
        log(f"runtime {name} built in {time.monotonic() - started:.0f} s")
    return load(name, base)


def _world_readable(root: Path) -> None:
    """Every slot's uid reads the runtime; none may write it (root owns it)."""
    for dirpath, _dirs, filenames in os.walk(root):
        os.chmod(dirpath, 0o755)
        for name in filenames:
            path = os.path.join(dirpath, name)
            if not os.path.islink(path):
                mode = os.stat(path).st_mode
                os.chmod(path, 0o755 if mode & 0o111 else 0o644)


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m tournaments.hosting.runtimes [--build NAME...] [--dir DIR] [--show]`:
    build the runtimes at deploy time (`--show`: print their manifests)."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m tournaments.hosting.runtimes")
    parser.add_argument("--build", nargs="+", default=sorted(RUNTIMES), metavar="NAME")
    parser.add_argument("--show", action="store_true", help="print each runtime's manifest")
    parser.add_argument("--dir", type=Path, default=default_dir())
    args = parser.parse_args(argv)
    for name in args.build:
        try:
            runtime = ensure(name, args.dir)
        except RuntimeError_ as exc:
            print(f"error: {exc}")
            return 1
        print(f"runtime {name}: {runtime.root}")
        if args.show:
            print(json.dumps(dict(runtime.manifest), indent=2, sort_keys=True))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
