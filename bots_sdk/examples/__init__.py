"""The example bots, also used by the referee as in-process "house bots".

`EXAMPLES` maps the public name (what `tienlen-bot arena random greedy` and the referee's
house seats use) to the bot class; `get(name)` looks one up with a helpful error.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import cast

from bots_sdk.bot import Bot
from bots_sdk.examples.greedy import GreedyBot
from bots_sdk.examples.heuristic import HeuristicBot
from bots_sdk.examples.random_bot import RandomBot
from bots_sdk.examples.search import SearchBot

__all__ = ["EXAMPLES", "GreedyBot", "HeuristicBot", "RandomBot", "SearchBot", "create", "get"]

EXAMPLES: dict[str, type[Bot]] = {
    "random": RandomBot,
    "greedy": GreedyBot,
    "heuristic": HeuristicBot,
    "search": SearchBot,
}


def get(name: str) -> type[Bot]:
    """The example bot class called `name` (KeyError listing the known names otherwise)."""
    try:
        return EXAMPLES[name]
    except KeyError:
        known = ", ".join(sorted(EXAMPLES))
        raise KeyError(f"unknown example bot {name!r} (known: {known})") from None


def create(name: str, *, seed: str | None = None) -> Bot:
    """A new instance of the example bot called `name`, seeded with `seed` when its class
    takes one (`random` and `search` do: a house bot plays the same way on a replayed
    table); KeyError for an unknown name, as `get`."""
    cls = get(name)
    if seed is not None and "seed" in inspect.signature(cls).parameters:
        return cast(Callable[..., Bot], cls)(seed=seed)
    return cls()
