"""No hop: a hosted bot connects straight to the referees on its runner's own host.

The relay (tournaments.hosting.relay) costs every move two crossings of a process of the
runner's; with every core busy that hop, not the sandbox, is what made a hosted bot's
moves slower than a remote bot's (benchmarks/README.md, "The bar under contention").
A referee started with `--unix-dir DIR` also listens on the unix socket
`DIR/referee_socket_name(advertised address)`; a runner whose `referee_sockets` names
the same DIR bind-mounts DIR, read-only, at `/run/tienlen/local` in each sandbox
(`TIENLEN_REFEREE_LOCAL`), starts the bot on the first local referee whose socket
accepts (`TIENLEN_SERVER`; `TIENLEN_SERVER_FALLBACK`, the relay's seed socket, should that
referee be gone before the bot's first connection), and the bot's SDK dials a pool
address there when the referee has a socket there, else its relay socket. Referees on other hosts, and any
referee without a socket in DIR, keep the relay; the relay sockets stay open for every
referee anyway (the seed's failover and a referee that moves away).

What a bot sees through DIR: the referees' sockets and nothing else. The runner checks
it at every session start (a real directory, not a link, holding sockets only; the
referee refuses to start in one that holds anything else) and falls back to the relay,
with one logged line, when it does not pass. A referee that leaves removes its socket:
the bot's stream there ends and it fails over as through the relay. No Django here.
"""

from __future__ import annotations

import contextlib
import stat
from collections.abc import Sequence
from pathlib import Path

from bots_sdk.client import referee_socket_name
from referee_service.unix_sockets import accepts, non_sockets

__all__ = ["directory_problem", "first_accepting", "local_sockets"]

PROBE_TIMEOUT_S = 1.0


def directory_problem(directory: Path) -> str | None:
    """Why `directory` cannot be shown to hosted bots (None: it can)."""
    try:
        st = directory.lstat()
    except OSError as exc:
        return f"{directory}: {exc.strerror or exc}"
    if not stat.S_ISDIR(st.st_mode):
        return f"{directory} is not a directory (a link is refused)"
    if st.st_mode & 0o002:
        return f"{directory} is writable by every user"
    for folder in (directory.absolute(), *directory.absolute().parents):
        # the sandbox's slot uid (bwrap binding it, the bot connecting) must get there
        with contextlib.suppress(OSError):
            if not folder.stat().st_mode & 0o001:
                return f"other users cannot enter {folder}: the sandboxes' uids could not reach {directory}"
    try:
        others = non_sockets(directory)
    except OSError as exc:
        return f"{directory}: {exc.strerror or exc}"
    if others:
        return (f"{directory} holds more than referee sockets ({', '.join(others[:5])}): "
                "hosted bots would see it")
    return None


def local_sockets(directory: Path, targets: Sequence[str]) -> dict[str, Path]:
    """The targets (HOST:PORT as the pool lists them) with a socket in `directory`, and
    that socket."""
    found = {}
    for address in targets:
        path = directory / referee_socket_name(address)
        with contextlib.suppress(OSError):
            if stat.S_ISSOCK(path.lstat().st_mode):
                found[address] = path
    return found


def first_accepting(paths: Sequence[Path]) -> Path | None:
    """The first socket a referee accepts a connection on (a dead referee's socket file may
    stay behind; the seed must be a live one)."""
    return next((path for path in paths if accepts(path, PROBE_TIMEOUT_S)), None)
