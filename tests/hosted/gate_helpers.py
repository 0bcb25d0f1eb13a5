"""Helpers of the gate, promotion and storage tests (tests/hosted/test_gate*.py): a
version made ready without a runner, and a runner environment on this host (the real
sandbox and runtimes), its state removed and no sandboxed process left afterwards."""

from __future__ import annotations

import io
import shutil
import tempfile
import time
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.hosting.conftest import RUNTIMES_DIR
from tests.needs import unavailable
from tournaments.hosting.check import problems
from tournaments.hosting.process import HostingConfig
from tournaments.hosting.sandbox import processes_of
from tournaments.models import BotSubmission
from tournaments.services import hosting

GREEDY = b"from bots_sdk.examples import GreedyBot\n\n\nclass Greedy(GreedyBot):\n    pass\n"
RANDOM = b"from bots_sdk.examples import RandomBot\n\n\nclass Random(RandomBot):\n    pass\n"


def zipped(*members: tuple[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in members:
            zf.writestr(name, data)
    return buffer.getvalue()


def validated(bot, owner, *, ok: bool = True, source: bytes = GREEDY) -> BotSubmission:
    """A new version of `bot`, through the services as a runner's validation would end it."""
    submission = hosting.submission_create(bot=bot, user=owner, data=zipped(("bot.py", source)), runtime="python3.11")
    assert hosting.submission_validation_begin(submission_id=submission.pk)
    return hosting.submission_validation_finish(submission_id=submission.pk, ok=ok, log="the log", detail="d")


@contextmanager
def runner_environment(monkeypatch, *, uid_base: int, slots: int, cgroup: str) -> Iterator[HostingConfig]:
    """The environment a runner of this host reads (TIENLEN_HOSTING_*, its own uid range
    and cgroup); skips (or fails under TIENLEN_REQUIRE_SERVERS) where the host cannot sandbox."""
    state = Path(tempfile.mkdtemp(prefix="tlh-gate-", dir="/tmp"))
    config = HostingConfig(state_dir=state, runtimes_dir=RUNTIMES_DIR, uid_base=uid_base, slots=slots,
                           cgroup_base=cgroup)
    found = problems(config)
    if found:
        shutil.rmtree(state, ignore_errors=True)
        unavailable("this host cannot sandbox hosted bots: " + "; ".join(found))
    for name, value in {"TIENLEN_HOSTING_DIR": str(state), "TIENLEN_HOSTING_RUNTIMES": str(RUNTIMES_DIR),
                        "TIENLEN_SANDBOX_UID_BASE": str(uid_base), "TIENLEN_SANDBOX_SLOTS": str(slots),
                        "TIENLEN_SANDBOX_CGROUP": cgroup}.items():
        monkeypatch.setenv(name, value)
    try:
        yield config
    finally:
        from tournaments.hosting.cgroups import CgroupHost
        from tournaments.runner import runner_host_close

        runner_host_close()
        deadline = time.monotonic() + 5
        while True:
            left = {uid: processes_of(uid) for uid in range(uid_base, uid_base + slots)}
            if not any(left.values()) or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        shutil.rmtree(state, ignore_errors=True)
        cg = CgroupHost.detect(cgroup)
        for h in cg.hierarchies:
            path = cg.base_dir(h)
            if path.exists() and not any(p.is_dir() for p in path.iterdir()):
                path.rmdir()
        assert not any(left.values()), f"sandboxed processes left: {left}"
