"""`{{ value|decimal:2 }}`: numbers on the site rounded as in the terminal
(bots_sdk.decimals: the written decimal, halves away from zero; 17/8 reads 2.13 in both).
`{{ value|decimal:"+2" }}` adds a "+" to positive numbers. None and non-numbers read "–"."""

from __future__ import annotations

from django import template

from bots_sdk.decimals import format_decimal

register = template.Library()


@register.filter(name="decimal")
def decimal_filter(value, places="2") -> str:
    text = str(places)
    sign = text.startswith("+")
    try:
        return format_decimal(float(value), int(text.lstrip("+")), sign=sign)
    except (TypeError, ValueError):
        return "–"
