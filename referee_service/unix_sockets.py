"""Unix-socket directories shared by referees and hosted bots (docs/hosting.md, "No hop").

A referee started with `--unix-dir` puts its socket in a directory that runners bind-mount,
whole, into every sandbox; so that directory must hold sockets and nothing else, and a
socket file left by a dead referee must be told from a live one. The referee (before it
listens) and the runner (before it shows the directory to a bot) check the same things
here."""

from __future__ import annotations

import contextlib
import socket
import stat
from pathlib import Path

__all__ = ["accepts", "non_sockets"]


def non_sockets(directory: Path) -> list[str]:
    """The names of the entries of `directory` that are not sockets, sorted (an entry that
    goes away while it is looked at, a referee leaving, is not counted)."""
    found = []
    for entry in directory.iterdir():
        with contextlib.suppress(FileNotFoundError):
            if not stat.S_ISSOCK(entry.lstat().st_mode):
                found.append(entry.name)
    return sorted(found)


def accepts(path: Path, timeout_s: float = 1.0) -> bool:
    """Whether something listens on the unix socket `path` (a dead referee's socket file
    may stay behind)."""
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    probe.settimeout(timeout_s)
    try:
        probe.connect(str(path))
        return True
    except OSError:
        return False
    finally:
        probe.close()
