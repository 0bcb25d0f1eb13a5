"""House bots leak nothing through timing.

Measured as the audit did, from a remote bot's side of the wire: the referee runs as
deployed (`python -m referee_service`, house bots in its worker pool), two remote bots sit
at tables `[remote, house, remote, house]` and time each house decision between their
answer and their next request (benchmarks/house_timing_bench.py, which records the full
measurement). Before the house seats were paced, a `search` house bot's voluntary passes
took its whole budget and its forced ones a few milliseconds (AUC 1.00), `heuristic`'s
AUC was 0.69-0.81. The margin is generous: at the bar (0.65) the interval of these sample
sizes is about +-0.1, and machine load adds the same noise to both kinds of pass.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

#: passes of each kind (voluntary, forced) measured before judging
ENOUGH = 60
BOUND = 0.70  # the bar is 0.65; a point estimate this far from 0.5 is no noise


def timing_bench() -> ModuleType:
    path = ROOT / "benchmarks" / "house_timing_bench.py"
    spec = importlib.util.spec_from_file_location("house_timing_bench", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("house_timing_bench", module)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("bot", ["search", "heuristic"])
async def test_a_house_bots_timing_does_not_tell_a_forced_pass_from_a_chosen_one(bot):
    bench = timing_bench()
    gaps: list[dict] = []
    # search thinks 10 ms a move (its pace: 30 ms) so that the test takes seconds
    with bench.referee_process(ROOT, {"TIENLEN_SEARCH_MS": "10"}) as target:
        for batch in range(8):
            more, _ = await bench.collect(target, bot, tables=2, games=4, concurrency=1,
                                          remote_pace_ms=0, seed=f"t-{bot}-{batch}")
            gaps += more
            summary = bench.summarize(gaps)
            if summary["voluntary"] >= ENOUGH and summary["forced"] >= ENOUGH:
                break
    assert summary["voluntary"] >= ENOUGH and summary["forced"] >= ENOUGH, summary
    assert summary["auc"] <= BOUND, summary
    # the same timings say nothing about how many plays the house seat had either
    assert summary["plays_auc"] <= BOUND, summary
