"""One rounding rule for every number shown (bots_sdk.decimals: the CLI printed
+2.12 and the site 2.13 for 17/8)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bots_sdk.decimals import format_decimal, round_decimal
from bots_sdk.stats import BotSummary, Estimate, estimate, format_report


@pytest.mark.parametrize(
    ("value", "places", "sign", "text"),
    [
        (17 / 8, 2, False, "2.13"),  # a true half: away from zero (format(.2f) gives 2.12)
        (17 / 8, 2, True, "+2.13"),
        (-17 / 8, 2, True, "-2.13"),
        (2.675, 2, False, "2.68"),  # as written, although the double is 2.67499999...
        (0.125, 2, False, "0.13"),
        (1.5, 0, False, "2"),
        (2.5, 0, False, "3"),  # not banker's rounding
        (-0.001, 2, False, "0.00"),  # never "-0.00"
        (-0.001, 2, True, "+0.00"),
        (0.0, 1, True, "+0.0"),
        (1e20, 1, False, "100000000000000000000.0"),
        (1812.4999, 0, False, "1812"),
        (math.inf, 2, True, "+inf"),
        (-math.inf, 2, False, "-inf"),
        (math.nan, 2, False, "nan"),
    ],
)
def test_the_rule_by_example(value, places, sign, text) -> None:
    assert format_decimal(value, places, sign=sign) == text


@given(st.floats(allow_nan=False, allow_infinity=False, min_value=-1e12, max_value=1e12), st.integers(0, 4))
def test_rounding_is_within_half_a_unit_of_the_written_number(value, places) -> None:
    from decimal import Decimal

    written = Decimal(repr(value))
    rounded = round_decimal(value, places)
    assert abs(rounded - written) <= Decimal(1).scaleb(-places) / 2
    assert rounded.as_tuple().exponent == -places
    assert format_decimal(value, places).lstrip("-").replace(".", "").isdigit()


def test_the_arena_report_rounds_by_the_rule() -> None:
    points = estimate([2, 2, 2, 2, 2, 2, 2, 3])  # mean 17/8
    assert points.mean == 17 / 8
    assert str(points).startswith("+2.13 ± ")
    assert str(Estimate(17 / 8, math.inf, 1, 0.0)) == "+2.13"
    row = BotSummary("bot", games=8, firsts=1, place_sum=17, points=points)  # avg place 17/8
    report = format_report([row], [], units=8, unit_name="games")
    line = report.splitlines()[2]
    assert "  2.13  " in line and "+2.13 ±" in line and " 12.5%" in line
