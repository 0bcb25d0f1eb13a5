"""Fair load: one bot token flooding through many streams must not slow an
unrelated table. Everything runs as deployed: the referee in its own process (`python -m
referee_service`), the canary table's two remote bots in another, the flooder in a third
(the parts of benchmarks/flood_bench.py, which records the full measurement)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]


def flood_bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("flood_bench", ROOT / "benchmarks" / "flood_bench.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("flood_bench", module)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("streams, rate", [
    (60, 190),  # the flood attack: many streams, each just under the old per-stream limit
    (4, 20_000),  # as many streams as allowed, each as fast as gRPC lets it write
])
async def test_a_flood_from_one_token_leaves_another_table_within_20_percent(
        streams: int, rate: int) -> None:
    """The baseline is measured in the same run, alternating with the flood, and the best
    round of each is compared, so load from other work on the machine cancels out.
    Before the per-bot limits the canary kept 12-23 % of its speed under the first flood
    (60 streams welcomed, ~10,000 pongs/s served); before the referee turned gRPC's BDP
    probing off, 55 % under the second (gRPC buffered megabytes per flooding stream)."""
    bench = flood_bench()
    with bench.referee_process() as target:
        result = await bench.measure(target, rounds=3, games=40, streams=streams, rate=rate)
        if result["best_ratio"] < 0.8:  # a burst of load elsewhere: measure more rounds
            more = await bench.measure(target, rounds=4, games=40, streams=streams, rate=rate)
            result["best_ratio"] = (max(result["flooded"] + more["flooded"])
                                    / max(result["alone"] + more["alone"]))
            result["floods"] += more["floods"]
    assert result["best_ratio"] >= 0.8, result
    for flood in result["floods"]:
        assert flood["max_open"] == 4  # the default cap on streams per bot
        if streams > 4:
            assert flood["refusals"]  # the others were refused (and kept retrying)
        assert flood["pongs_per_s"] < 100  # one bot's allowance (50/s, burst 100)
