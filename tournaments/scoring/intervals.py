"""The one interval rule of every per-game mean the platform shows.

The standings (mean points and mean place per game) and the luck-adjusted standings (raw
and adjusted points per game) give 95% intervals of a mean over a bot's games, which are
independent draws (each bot plays each deal once). Both use the same rule, Student's t:

    mean ± t(0.975, n - 1) · s / √n        (s the sample standard deviation, n games)

so the same points read the same interval everywhere (before, the standings used 1.96
and the luck-adjusted table t: "1.42 ± 0.53" and "1.42 ± 0.52" on one page).
With fewer than two games there is no interval (infinite half-width).
"""

from __future__ import annotations

import math

from bots_sdk.stats import t_quantile_975


def half_width(variance: float, n: int) -> float:
    """Half-width of the 95% interval of a mean of n values with this sample variance."""
    if n < 2:
        return math.inf
    return t_quantile_975(n - 1) * math.sqrt(max(0.0, variance) / n)


def half_width_of_se(se: float, n: int) -> float:
    """The same rule for a mean whose standard error is `se` (n values behind it)."""
    if n < 2:
        return math.inf
    return t_quantile_975(n - 1) * se
