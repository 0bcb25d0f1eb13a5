"""The example bots, also used by the referee as in-process "house bots".

`EXAMPLES` maps the public name (what `tienlen-bot arena random greedy` and the referee's
house seats use) to the bot class; `get(name)` looks one up with a helpful error.
"""

from __future__ import annotations

from bots_sdk.bot import Bot
from bots_sdk.examples.greedy import GreedyBot
from bots_sdk.examples.heuristic import HeuristicBot
from bots_sdk.examples.random_bot import RandomBot
from bots_sdk.examples.search import SearchBot

__all__ = ["EXAMPLES", "GreedyBot", "HeuristicBot", "RandomBot", "SearchBot", "get"]

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
