"""Can this host sandbox hosted bots? A runner asks before it starts any (`Host.start`
does, once), and refuses with one line naming what is missing: a bot never runs
unsandboxed by accident. Only the explicit development mode
(TIENLEN_HOSTING_UNSANDBOXED=trusted-bots-only) skips it, with a loud warning.

`python -m tournaments.hosting.check` prints the verdict (exit status 0 or 1), the built
runtimes included: a runner also needs every runtime built for the sources it runs
(`runtime_problems`), or each bot of a missing runtime would fail to start; the runner's
worker refuses to start without them, naming the runtime and how to build it.

What is checked: Linux; bwrap installed; the runner is root (each bot runs as its own
unprivileged uid, in its own cgroup); user namespaces allowed; a usable cgroup controller
(v2 or writable v1) for memory, pids and cpu; the slot uid range free of real users and
of /etc/subuid ranges; the state directory short enough for unix socket paths; and, last,
a real sandbox started as a slot uid with every option a bot gets (this is what catches
a container whose seccomp or AppArmor profile forbids namespaces, containers/bubblewrap#505).
No Django here.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from tournaments.hosting import runtimes
from tournaments.hosting.cgroups import CgroupError, CgroupHost
from tournaments.hosting.sandbox import Binds, Limits, Slot, as_slot, bwrap_argv, rlimits_prefix

if TYPE_CHECKING:
    from tournaments.hosting.process import HostingConfig

__all__ = ["SandboxUnavailable", "problems", "require_sandbox", "runtime_problems"]

#: How an operator builds the runtimes (docs/hosting.md, "The runtimes").
BUILD_RUNTIMES = "make hosting-runtimes, or python -m tournaments.hosting.runtimes --dir {dir}"

SOCKET_PATH_ROOM = 107 - len("/s/00-0123456789/r/0123456789abcdef.sock")


class SandboxUnavailable(Exception):
    """This host cannot sandbox bots; the message is one line naming what is missing."""


def _sysctl(name: str) -> str | None:
    try:
        return Path("/proc/sys", *name.split(".")).read_text().strip()
    except OSError:
        return None


def _subuid_overlaps(first: int, last: int) -> list[str]:
    found = []
    for path in (Path("/etc/subuid"), Path("/etc/subgid")):
        try:
            lines = path.read_text().splitlines()
        except OSError:
            continue
        for line in lines:
            parts = line.strip().split(":")
            if len(parts) == 3 and parts[1].isdigit() and parts[2].isdigit():
                start, count = int(parts[1]), int(parts[2])
                if start <= last and first < start + count:
                    found.append(f"{path} ({parts[0]}: {start}+{count})")
    return found


def problems(config: HostingConfig, cgroups: CgroupHost | None = None, *,
             probe: bool = True) -> list[str]:
    """What keeps this host from sandboxing bots (empty: it can)."""
    if sys.platform != "linux":
        return ["hosted bots need Linux (bubblewrap, namespaces, cgroups)"]
    found: list[str] = []
    bwrap = shutil.which(config.bwrap)
    if bwrap is None:
        found.append(f"bubblewrap is not installed ({config.bwrap!r} not found: apt-get install bubblewrap)")
    for tool in ("prlimit", "setpriv"):
        if shutil.which(tool) is None:
            found.append(f"util-linux {tool} is not installed (it starts every sandbox)")
    if os.geteuid() != 0:
        found.append("the runner must start as root (each bot runs as its own unprivileged uid "
                     "and in its own cgroup)")
    if _sysctl("user.max_user_namespaces") == "0":
        found.append("user namespaces are disabled (sysctl user.max_user_namespaces = 0)")
    if _sysctl("kernel.unprivileged_userns_clone") == "0":
        found.append("unprivileged user namespaces are disabled "
                     "(sysctl kernel.unprivileged_userns_clone = 0)")
    cgroups = cgroups or CgroupHost.detect(config.cgroup_base)
    missing = cgroups.missing()
    if missing:
        found.append(f"no usable cgroup controller for {', '.join(missing)} (neither cgroup v2 "
                     "nor a writable v1 hierarchy offers it)")
    first, last = config.uid_base, config.uid_base + config.slots - 1
    taken = []
    for uid in range(first, last + 1):
        with contextlib.suppress(KeyError):
            taken.append(f"{pwd.getpwuid(uid).pw_name} ({uid})")
    if taken:
        found.append(f"the sandbox uids {first}-{last} belong to users: {', '.join(taken[:3])} "
                     "(set TIENLEN_SANDBOX_UID_BASE)")
    overlaps = _subuid_overlaps(first, last)
    if overlaps:
        found.append(f"the sandbox uids {first}-{last} overlap {', '.join(overlaps[:2])} "
                     "(set TIENLEN_SANDBOX_UID_BASE)")
    for what, path, setting in (("state", config.state_dir, "TIENLEN_HOSTING_DIR"),
                                ("runtimes", config.runtimes_dir, "TIENLEN_HOSTING_RUNTIMES")):
        # (the directory itself is the host's to open up: it chmods the state directory)
        if not runtimes.reachable_by_others(path.parent):
            found.append(f"the hosting {what} directory {path} is under a directory other users "
                         f"cannot enter, so the sandboxed uids cannot reach it (set {setting})")
    state = str(config.state_dir.resolve())
    if len(os.fsencode(state)) > SOCKET_PATH_ROOM:
        found.append(f"the hosting state directory {state} is too long for the unix socket paths "
                     f"under it (at most {SOCKET_PATH_ROOM} bytes: set TIENLEN_HOSTING_DIR)")
    if not missing and os.geteuid() == 0:
        try:
            cgroups.prepare()
        except CgroupError as exc:
            found.append(f"cannot set up the sandbox cgroups: {exc}")
    if probe and not found and bwrap is not None:
        error = _probe(config, bwrap)
        if error:
            found.append(error)
    return found


def _probe(config: HostingConfig, bwrap: str) -> str:
    """Start a real sandbox, as a slot uid, with every option a bot's has."""
    config.state_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="probe-", dir=config.state_dir) as tmp:
        os.chmod(config.state_dir, 0o711)
        os.chmod(tmp, 0o755)
        uid = config.uid_base + config.slots - 1
        argv = as_slot(Slot(config.slots - 1, uid, uid)) + rlimits_prefix(Limits()) + bwrap_argv(
            ["/usr/bin/true"], binds=Binds(runtime=Path(tmp), bot=Path(tmp),
                                                          sockets=Path(tmp)),
                          env={}, limits=Limits(), bwrap=bwrap)
        try:
            proc = subprocess.run(argv, env={}, capture_output=True, text=True, timeout=30, cwd="/")
        except (OSError, subprocess.SubprocessError) as exc:
            return f"bwrap could not be started: {exc}"
    if proc.returncode != 0:
        why = (proc.stderr.strip().splitlines() or [f"exit status {proc.returncode}"])[-1]
        return (f"bwrap cannot build a sandbox on this host: {why} (inside a container it needs "
                "user namespaces and an unconfined seccomp/AppArmor profile: docs/hosting.md)")
    return ""


def runtime_problems(config: HostingConfig, names: Sequence[str] | None = None) -> list[str]:
    """Which runtimes (all of runtimes.RUNTIMES by default) are not built in the config's
    runtimes directory for the sources as they are now, each with the command that builds
    them: a runner never builds one when a bot starts."""
    found = []
    for name in sorted(runtimes.RUNTIMES) if names is None else names:
        try:
            runtimes.load(name, config.runtimes_dir)
        except runtimes.RuntimeError_:
            found.append(f"runtime {name} is not built in {config.runtimes_dir} for these sources "
                         f"(build it: {BUILD_RUNTIMES.format(dir=config.runtimes_dir)})")
    return found


def require_sandbox(config: HostingConfig, cgroups: CgroupHost | None = None) -> None:
    """Raise SandboxUnavailable (one line) unless this host can sandbox bots."""
    found = problems(config, cgroups)
    if found:
        raise SandboxUnavailable("cannot run hosted bots on this host: " + "; ".join(found))


def describe(config: HostingConfig, cgroups: CgroupHost | None = None) -> str:
    cgroups = cgroups or CgroupHost.detect(config.cgroup_base)
    version = ""
    bwrap = shutil.which(config.bwrap)
    if bwrap:
        out = subprocess.run([bwrap, "--version"], capture_output=True, text=True, timeout=10)
        version = out.stdout.strip()
    return (f"{version or 'bwrap'}; cgroups: {cgroups.describe()}; slots: {config.slots} "
            f"(uids {config.uid_base}-{config.uid_base + config.slots - 1}); state: {config.state_dir}")


def main(argv: Sequence[str] | None = None) -> int:
    from tournaments.hosting.process import UNSANDBOXED_WARNING, HostingConfig

    root = Path(__file__).resolve().parents[2]
    var = Path(os.environ.get("TIENLEN_VAR_DIR", root / "var"))
    try:
        config = HostingConfig.from_env(var)
    except ValueError as exc:
        print(f"error: {exc}")
        return 1
    if config.unsandboxed:
        print(f"WARNING: {UNSANDBOXED_WARNING}")
        found = runtime_problems(config)
        if found:
            print("cannot run hosted bots on this host: " + "; ".join(found))
        return 1 if found else 0
    found = problems(config) + runtime_problems(config)
    if found:
        print("cannot run hosted bots on this host: " + "; ".join(found))
        return 1
    print(f"ok: this host can sandbox hosted bots: {describe(config)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
