"""One rounding rule for every number a person reads, in the terminal and on the site.

The rule: round the number as it is written in decimal (Python's shortest repr, the digits
you would type) to the given places, halves away from zero. So 17/8 = 2.125 reads 2.13
everywhere and 2.675 reads 2.68, although the nearest binary double of 2.675 lies just
below it. It is the rule of Django's `floatformat` (the site used it) and of hand
arithmetic; Python's `format(x, ".2f")` rounds the binary value half to even instead and
printed +2.12 for the same 17/8 in `tienlen-bot arena`, where the site showed +2.13. The CLI, the arena's
statistics, the demo's tables and the web templates (the `decimal` filter) all call
`format_decimal`.
"""

from __future__ import annotations

import math
from decimal import ROUND_HALF_UP, Decimal, localcontext

__all__ = ["format_decimal", "round_decimal"]


def round_decimal(value: float, places: int) -> Decimal:
    """`value` rounded to `places` decimals, halves away from zero (a finite number)."""
    if not math.isfinite(value):
        raise ValueError(f"cannot round {value!r}")
    exponent = Decimal(1).scaleb(-places)
    with localcontext() as context:
        context.prec = 330 + places  # room for every digit of the largest double
        rounded = Decimal(repr(float(value))).quantize(exponent, rounding=ROUND_HALF_UP)
    return rounded if rounded else abs(rounded)  # no "-0.00"


def format_decimal(value: float, places: int = 2, *, sign: bool = False) -> str:
    """`value` written with `places` decimals by the rule above; `sign` adds "+" to
    positive numbers and zero. Infinity and NaN read "inf", "-inf" and "nan"."""
    if not math.isfinite(value):
        text = "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
        return f"+{text}" if sign and text == "inf" else text
    text = f"{round_decimal(value, places):f}"
    return f"+{text}" if sign and not text.startswith("-") else text
