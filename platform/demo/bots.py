"""The demo's own entrants besides the SDK's example bots: two versions of one bot, so the
demo shows what the platform is for — is version 2 better than version 1?

Version 1 of the "planner" is the example heuristic before it learned when to pass: it
plans its hand the same way but plays whenever it can beat the table, breaking its plan to
do so. Version 2 is the heuristic as shipped, which passes when following would cost more
than the round is worth. Measured with the arena (800 duplicate games against heuristic,
greedy and random): version 1 scores about 0.6 points per game less. Each runs as its own
process like any bot: `tienlen-bot run demo.bots:PlannerV1`.
"""

from __future__ import annotations

from bots_sdk.bot import View
from bots_sdk.cards import Card
from bots_sdk.examples.heuristic import HeuristicBot


class PlannerV1(HeuristicBot):
    name = "planner"
    version = "1.0.0"

    def ranked_moves(self, view: View) -> list[tuple[float, tuple[Card, ...] | None]]:
        """The heuristic's moves with the pass left out whenever a play is possible."""
        ranked = super().ranked_moves(view)
        plays = [entry for entry in ranked if entry[1] is not None]
        return plays or ranked


class PlannerV2(HeuristicBot):
    name = "planner"
    version = "2.0.0"


# The demo's bot kinds: what `--bots` accepts, and what `tienlen-bot run` is given for each.
DEMO_KINDS: dict[str, str] = {
    "planner-v1": "demo.bots:PlannerV1",
    "planner-v2": "demo.bots:PlannerV2",
}


def bot_kinds() -> dict[str, str]:
    """Every kind the demo can enter: the SDK's examples by name, and the two planners."""
    from bots_sdk.examples import EXAMPLES

    return {**{name: name for name in EXAMPLES}, **DEMO_KINDS}
