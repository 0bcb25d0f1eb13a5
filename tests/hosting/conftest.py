"""Fixtures for the hosted-bot tests: the real sandbox (bubblewrap as unprivileged slot
uids, real cgroups), the real runtimes (built once into var/hosting/runtimes, a few
minutes the first time), a real referee on loopback.

Without a host that can sandbox (no bwrap, not root, no user namespaces, no cgroup
controller) the sandbox tests skip and say why; with TIENLEN_REQUIRE_SERVERS set (CI)
they fail instead. After every test no process of a slot uid and no session cgroup may
be left.
"""

from __future__ import annotations

import shutil
import tempfile
import textwrap
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from referee_service.auth import BotIdentity, StaticTokenStore
from referee_service.server import RefereeThread, referee_in_thread
from tests.needs import unavailable
from tournaments.hosting import runtimes
from tournaments.hosting.cgroups import CgroupHost
from tournaments.hosting.check import problems
from tournaments.hosting.process import Host, HostingConfig
from tournaments.hosting.sandbox import processes_of

ROOT = Path(__file__).resolve().parents[2]
RUNTIMES_DIR = runtimes.default_dir()  # where `make hosting-runtimes` builds them
UID_BASE = 1_600_000  # not the default range: a runner on this machine keeps its own
SLOTS = 6
TOKEN = "hosted-test-token-0123456789"
OTHER_TOKEN = "hosted-other-token-0123456789"
ORGANIZER = "hosted-test-organizer"
CGROUP_BASE = "tienlen-sandbox-tests"


@pytest.fixture(scope="session")
def hosting_config() -> Iterator[HostingConfig]:
    # short: the relay's unix socket paths live under it
    state = Path(tempfile.mkdtemp(prefix="tlh-", dir="/tmp"))
    yield HostingConfig(state_dir=state, runtimes_dir=RUNTIMES_DIR, uid_base=UID_BASE,
                        slots=SLOTS, cgroup_base=CGROUP_BASE)
    shutil.rmtree(state, ignore_errors=True)
    cg = CgroupHost.detect(CGROUP_BASE)
    for h in cg.hierarchies:  # every one: a test may have used v1 freezer and cpuacct too
        path = cg.base_dir(h)
        if path.exists() and not any(p.is_dir() for p in path.iterdir()):
            path.rmdir()


@pytest.fixture(scope="session")
def sandbox_ok(hosting_config: HostingConfig) -> None:
    found = problems(hosting_config)
    if found:
        unavailable("this host cannot sandbox hosted bots: " + "; ".join(found))


def _runtime(name: str) -> runtimes.Runtime:
    try:
        return runtimes.ensure(name, RUNTIMES_DIR, log=lambda _line: None)
    except runtimes.RuntimeError_ as exc:
        unavailable(f"the {name} runtime cannot be built here: {exc}")


@pytest.fixture(scope="session")
def python_runtime(sandbox_ok: None) -> runtimes.Runtime:
    return _runtime("python3.11")


@pytest.fixture(scope="session")
def node_runtime(sandbox_ok: None) -> runtimes.Runtime:
    return _runtime("node20")


@pytest.fixture
def host(hosting_config: HostingConfig, python_runtime: runtimes.Runtime) -> Iterator[Host]:
    yield from host_checked_clean(Host(hosting_config))


def host_checked_clean(host: Host) -> Iterator[Host]:
    """A fixture's body: `host`, checked, then closed, and nothing of its bots left (no
    process of a slot uid, no session cgroup)."""
    host.check()
    try:
        yield host
    finally:
        host.close()
        deadline = time.monotonic() + 5  # a process SIGKILLed a moment ago may still be exiting
        while True:
            left = {uid: processes_of(uid) for uid in range(UID_BASE, UID_BASE + SLOTS)}
            if not any(left.values()) or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        assert not any(left.values()), f"processes of slot uids left behind: {left}"
        assert not host.cgroups.sessions(), f"session cgroups left: {host.cgroups.sessions()}"


@pytest.fixture
def referee() -> Iterator[RefereeThread]:
    store = StaticTokenStore({TOKEN: BotIdentity("hosted", "Hosted bot"),
                              OTHER_TOKEN: BotIdentity("other", "Other hosted bot")})
    with referee_in_thread(store, organizer_token=ORGANIZER) as thread:
        yield thread


@pytest.fixture
def code(tmp_path: Path) -> Callable[..., Path]:
    """Write a bot's code folder: code(source) -> folder with bot.py (or name=...)."""
    counter = iter(range(1000))

    def write(source: str, name: str = "bot.py", **files: str) -> Path:
        folder = tmp_path / f"code-{next(counter)}"
        folder.mkdir()
        (folder / name).write_text(textwrap.dedent(source))
        for filename, text in files.items():
            (folder / filename.replace("__", ".")).write_text(text)
        return folder

    return write
