"""Hosted bots: the platform runs a bot's submitted code itself, sandboxed.

The foundation, with no Django (a runner may use it bare; import-linter checks):

- `sandbox`: the bubblewrap command line, the limits, the slots (one unprivileged host
  uid each);
- `cgroups`: a cgroup per session, v2 where the host offers the controller, else v1;
- `relay`: the bot's only way out, unix sockets relayed to the referees' TCP ports;
- `runtimes`: the fixed, platform-built runtimes (Python 3.11 with the SDK, Node 20);
- `process`: `Host` and one session, `HostedBot`: start, stop, wait, why it ended;
- `check`: can this host sandbox? (a runner refuses to start without it).

docs/hosting.md describes it for operators and for the platform side that uses it.
"""

from __future__ import annotations

import importlib
from typing import Any

# name -> module; imported on first use, so `python -m tournaments.hosting.check` (or
# .runtimes) does not import its own module twice
_EXPORTS = {
    "BotSpec": "process", "ExitReason": "process", "Host": "process", "HostedBot": "process",
    "HostingConfig": "process", "SessionEnd": "process", "SlotsFull": "process",
    "Limits": "sandbox", "SandboxUnavailable": "check",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'tournaments.hosting' has no attribute {name!r}")
    return getattr(importlib.import_module(f"tournaments.hosting.{_EXPORTS[name]}"), name)
