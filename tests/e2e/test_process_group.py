"""The demo's process supervision: whatever happens, nothing it started is left running."""

from __future__ import annotations

import os
import sys
import time

import pytest

from demo import processes
from tests.e2e.stack import MARKER_VARIABLE, marked_pids

# A parent that starts a grandchild and then waits, as a Celery worker starts its pool.
PARENT_WITH_CHILD = (
    "import subprocess, sys, time;"
    "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(300)']);"
    "print('ready', flush=True); time.sleep(300)"
)


def wait_for(condition, timeout: float = 60) -> None:
    """Generous: the machine may be busy; a process left behind stays, and fails this."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def test_stop_all_ends_children_and_grandchildren(tmp_path, marker) -> None:
    env = {MARKER_VARIABLE: marker}
    with processes.ProcessGroup(tmp_path) as group:
        group.start("a", [sys.executable, "-c", PARENT_WITH_CHILD], env=env)
        group.start("b", [sys.executable, "-c", PARENT_WITH_CHILD], env=env)
        wait_for(lambda: len(marked_pids(marker)) == 4)
    wait_for(lambda: marked_pids(marker) == [])


def test_cleanup_happens_when_the_caller_fails(tmp_path, marker) -> None:
    with pytest.raises(RuntimeError), processes.ProcessGroup(tmp_path) as group:
        group.start("a", [sys.executable, "-c", PARENT_WITH_CHILD], env={MARKER_VARIABLE: marker})
        wait_for(lambda: len(marked_pids(marker)) == 2)
        raise RuntimeError("a failed assertion in a test, an error in the demo")
    wait_for(lambda: marked_pids(marker) == [])


def test_a_process_that_dies_is_reported_with_its_log(tmp_path, marker) -> None:
    with processes.ProcessGroup(tmp_path) as group:
        group.start(
            "referee",
            [sys.executable, "-c", "import sys; print('cannot bind port 1'); sys.exit(3)"],
            env={MARKER_VARIABLE: marker},
        )
        wait_for(lambda: not group.processes["referee"].alive())
        with pytest.raises(processes.ProcessFailed, match="referee exited with status 3") as info:
            group.check_alive()
        assert "cannot bind port 1" in str(info.value)


def test_kill_is_a_crash_and_restart_appends_to_the_log(tmp_path, marker) -> None:
    env = {MARKER_VARIABLE: marker}
    with processes.ProcessGroup(tmp_path) as group:
        first = group.start("worker", [sys.executable, "-c", PARENT_WITH_CHILD], env=env)
        wait_for(lambda: len(marked_pids(marker)) == 2)
        group.kill("worker")
        assert first.popen.returncode == -9
        wait_for(lambda: marked_pids(marker) == [])
        group.check_alive()  # an expected exit is not a failure
        group.start("worker", [sys.executable, "-c", PARENT_WITH_CHILD], env=env)
        wait_for(lambda: (tmp_path / "worker.log").read_text().count("ready") == 2)
    wait_for(lambda: marked_pids(marker) == [])


SUPERVISOR = """
import sys, time
from pathlib import Path
from demo.processes import ProcessGroup
group = ProcessGroup(Path(sys.argv[1]))
group.start("child", [sys.executable, "-c", "import time; time.sleep(300)"])
print("started", flush=True)
time.sleep(300)
"""


def test_children_go_even_when_the_demo_is_killed_outright(tmp_path, marker) -> None:
    """SIGKILL leaves no chance to clean up: the kernel's parent-death signal does it."""
    import signal
    import subprocess

    supervisor = subprocess.Popen(
        [sys.executable, "-c", SUPERVISOR, str(tmp_path)],
        cwd=processes.PROJECT_ROOT, env=processes.child_env({MARKER_VARIABLE: marker}),
        stdout=subprocess.PIPE, text=True,
    )
    assert supervisor.stdout.readline().strip() == "started"
    wait_for(lambda: len(marked_pids(marker)) == 2)
    supervisor.send_signal(signal.SIGKILL)
    supervisor.wait(timeout=30)
    wait_for(lambda: marked_pids(marker) == [])


def test_a_sigterm_to_the_demo_becomes_a_clean_shutdown() -> None:
    import signal

    with pytest.raises(KeyboardInterrupt), processes.terminate_on_signals():
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(5)
