"""What the hosted-bot tests with real runners share (tests/hosted/test_hosted_e2e.py,
tests/hosted/test_runner_failover.py): the sandbox slots they use (a uid range and a
cgroup of their own, apart from tests/hosting's and from a real runner's), a runner's
state directory and environment, and the check that nothing is left behind."""

from __future__ import annotations

import os
import shutil
import tempfile
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
