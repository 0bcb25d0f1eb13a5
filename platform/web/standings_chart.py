"""The standings picture: each bot's mean points per game with its 95% interval, as a
server-drawn SVG (a "forest plot": one row per bot, in standings order, a zero line).

Two bots whose intervals overlap are not clearly separated yet; the picture makes that
visible at a glance where the table needs arithmetic. It draws from the same standings rows
the table and the API show (`tournaments.selectors.standings.tournament_standings`), so they cannot
disagree. Geometry only: the template `web/_standings_chart.html` writes the SVG.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from bots_sdk.decimals import format_decimal

ROW = 26  # px per bot
LABEL_W = 170  # bot names on the left
VALUE_W = 120  # "+1.23 ± 0.45" on the right
WIDTH = 760
PAD_TOP, PAD_BOTTOM = 8, 34  # room for the axis labels


def _nice_step(span: float) -> float:
    """A round tick step giving 4-8 ticks over `span`."""
    raw = span / 5
    magnitude = 10 ** math.floor(math.log10(raw))
    for m in (1, 2, 2.5, 5, 10):
        if raw <= m * magnitude:
            return m * magnitude
    return 10 * magnitude


def standings_chart(standings: Sequence[Any]) -> dict[str, Any] | None:
    """Coordinates for the picture, or None when no bot has a game yet.

    A bot with one game has no interval (infinite half-width): it gets its dot and the note
    "1 game" instead of a bar reaching across the chart."""
    rows = [s for s in standings if s.games > 0]
    if not rows:
        return None
    finite = [s for s in rows if math.isfinite(s.points_ci)]
    lows = [s.points_mean - s.points_ci for s in finite] + [s.points_mean for s in rows]
    highs = [s.points_mean + s.points_ci for s in finite] + [s.points_mean for s in rows]
    lo, hi = min(0.0, *lows), max(0.0, *highs)
    if hi - lo < 1e-9:
        lo, hi = lo - 1, hi + 1
    margin = 0.04 * (hi - lo)  # no dot sits on the plot's edge
    lo, hi = lo - margin, hi + margin
    step = _nice_step(hi - lo)
    lo, hi = math.floor(lo / step) * step, math.ceil(hi / step) * step
    x0, x1 = LABEL_W, WIDTH - VALUE_W

    def x(value: float) -> float:
        return round(x0 + (x1 - x0) * (value - lo) / (hi - lo), 1)

    plot_bottom = PAD_TOP + ROW * len(rows)
    ticks = []
    n_ticks = round((hi - lo) / step)
    for i in range(n_ticks + 1):
        value = lo + i * step
        ticks.append({"x": x(value), "label": f"{value:+g}" if value else "0"})
    bars = []
    for i, s in enumerate(rows):
        y = PAD_TOP + ROW * i + ROW / 2
        has_ci = math.isfinite(s.points_ci) and s.games > 1
        bars.append(
            {
                "bot": s.bot_name,
                "label": s.bot_name if len(s.bot_name) <= 22 else s.bot_name[:21] + "…",
                "y": round(y, 1),
                "cap_top": round(y - 5, 1),
                "cap_bottom": round(y + 5, 1),
                "x": x(s.points_mean),
                "x_low": x(s.points_mean - s.points_ci) if has_ci else None,
                "x_high": x(s.points_mean + s.points_ci) if has_ci else None,
                "value": (
                    f"{format_decimal(s.points_mean, 2, sign=True)} ± {format_decimal(s.points_ci, 2)}"
                    if has_ci else f"{format_decimal(s.points_mean, 2, sign=True)} (1 game)"
                ),
                "side": "pos" if s.points_mean > 0 else ("neg" if s.points_mean < 0 else "even"),
            }
        )
    return {
        "width": WIDTH,
        "height": plot_bottom + PAD_BOTTOM,
        "x0": x0,
        "x1": x1,
        "zero": x(0.0),
        "top": PAD_TOP,
        "bottom": plot_bottom,
        "ticks": ticks,
        "tick_label_y": plot_bottom + 14,
        "axis_label_y": plot_bottom + 29,
        "axis_label_x": round((x0 + x1) / 2, 1),
        "value_x": x1 + 8,
        "label_x": x0 - 8,
        "bars": bars,
    }
