"""What the hosted-bot tests with real runners share (tests/hosted/test_hosted_e2e.py,
tests/hosted/test_runner_failover.py, tests/hosted/test_casual_hosted.py): the sandbox
slots they use (a uid range and a cgroup of their own, apart from tests/hosting's and from
a real runner's), a runner's state directory and environment, the check that nothing is
left behind, and a bot made hosted with a version ready without a runner."""

from __future__ import annotations

import io
import os
import shutil
import tempfile
import zipfile
from collections.abc import Iterator
from pathlib import Path

from tests.hosting.conftest import RUNTIMES_DIR
from tests.needs import unavailable
from tournaments.hosting.cgroups import CgroupHost
from tournaments.hosting.check import problems
from tournaments.hosting.process import HostingConfig
from tournaments.hosting.sandbox import processes_of

UID_BASE = 1_620_000
SLOTS = 4
CGROUP = "tienlen-sandbox-e2e"


def runner_config(prefix: str = "tlh-e2e-") -> HostingConfig:
    """A fresh runner state directory (short, under /tmp: unix socket paths live under it)
    and the tests' slots; skips (fails in CI) unless this host can sandbox bots."""
    state = Path(tempfile.mkdtemp(prefix=prefix, dir="/tmp"))
    config = HostingConfig(state_dir=state, runtimes_dir=RUNTIMES_DIR, uid_base=UID_BASE, slots=SLOTS,
                           cgroup_base=CGROUP)
    found = problems(config)
    if found:
        shutil.rmtree(state, ignore_errors=True)
        unavailable("this host cannot sandbox hosted bots: " + "; ".join(found))
    return config


def runner_env(config: HostingConfig) -> dict[str, str]:
    """The environment that makes a runner (in this process or a child) use `config`."""
    return {"TIENLEN_HOSTING_DIR": str(config.state_dir), "TIENLEN_HOSTING_RUNTIMES": str(config.runtimes_dir),
            "TIENLEN_SANDBOX_UID_BASE": str(config.uid_base), "TIENLEN_SANDBOX_SLOTS": str(config.slots),
            "TIENLEN_SANDBOX_CGROUP": config.cgroup_base}


def runner_worker_argv(name: str, *, concurrency: int = 2) -> list[str]:
    """A runner as its own process: a Celery worker of the runner queue."""
    from demo import processes

    return processes.python_argv("-m", "celery", "-A", "tienlen_site.celery:app", "worker", "--loglevel", "INFO",
                                 "--queues", "runner", "--pool", "threads", "--concurrency", str(concurrency),
                                 "--hostname", f"{name}-{os.getpid()}@%h", "--without-gossip", "--without-mingle")


def slot_processes_left() -> dict[int, list[int]]:
    """The processes still running as one of the tests' slot uids, by uid."""
    return {uid: processes_of(uid) for uid in range(UID_BASE, UID_BASE + SLOTS)}


def sandbox_clean_up(state: Path) -> None:
    """Remove the runner's state and the (empty) cgroup bases the tests' sessions used."""
    shutil.rmtree(state, ignore_errors=True)
    cg = CgroupHost.detect(CGROUP)
    for h in cg.hierarchies:
        path = cg.base_dir(h)
        if path.exists() and not any(p.is_dir() for p in path.iterdir()):
            path.rmdir()


def runner_in_this_process(monkeypatch, *, prefix: str, why: str) -> Iterator[HostingConfig]:
    """The body of a `runner_env` fixture: PostgreSQL and Redis required (`why` says what
    shares them), this process's runner set up on fresh slots, then closed, its state
    removed, and no sandboxed process may be left."""
    from tests.e2e.test_faults import require_redis_broker
    from tests.needs import need_postgresql

    need_postgresql(why)
    require_redis_broker()
    config = runner_config(prefix=prefix)
    for name, value in runner_env(config).items():
        monkeypatch.setenv(name, value)
    yield config
    from tournaments.runner import runner_host_close

    runner_host_close()
    left = slot_processes_left()
    sandbox_clean_up(config.state_dir)
    assert not any(left.values()), f"sandboxed processes left: {left}"


def hosted_with_version(bot, owner, source: bytes):
    """`bot` switched to hosted with `source` (its bot.py) as a ready, active version: its
    validation is the runner's and is tested in tests/hosted/test_hosted_e2e.py."""
    from tournaments.services import hosting

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zf:
        zf.writestr("bot.py", source)
    submission = hosting.submission_create(bot=bot, user=owner, data=buffer.getvalue(), runtime="python3.11")
    assert hosting.submission_validation_begin(submission_id=submission.pk)
    hosting.submission_validation_finish(submission_id=submission.pk, ok=True, log="", detail="")
    bot.refresh_from_db()
    return hosting.bot_hosting_set(bot=bot, user=owner, hosting="hosted")
