"""Tiến Lên bot SDK: the rules engine (``bots_sdk.cards``, ``bots_sdk.rules``) and bot helpers.

Kept light on purpose: importing the package must not pull in gRPC, so the pure-Python
engine stays usable (and fast to import) on its own.
"""

# The compiled engine (mypyc) when it is built and matches its source, else the Python one;
# decided before anything imports the engine (see bots_sdk/engine_build.py).
from bots_sdk import engine_build

engine_build.select()

# --- bot author API (SDK part): `from bots_sdk import Bot, run` ---
from bots_sdk.bot import Bot  # noqa: E402  (light: the Bot base class and the view, no gRPC)

__all__ = ["Bot", "run"]


def __getattr__(name: str) -> object:  # PEP 562: `run` imports the gRPC client only when used
    if name == "run":
        from bots_sdk.runner import run

        return run
    raise AttributeError(f"module 'bots_sdk' has no attribute {name!r}")
