"""Card texts in what a page fetched: the play tests assert none of another seat's leaks."""

from __future__ import annotations

import re

CARD = re.compile(r"^(?:10|[2-9TJQKA])[SCDH]$")


def cards_in(value: object, out: set[str] | None = None) -> set[str]:
    """Every card text anywhere in a JSON value."""
    out = set() if out is None else out
    if isinstance(value, str):
        if CARD.match(value):
            out.add(value)
    elif isinstance(value, dict):
        for v in value.values():
            cards_in(v, out)
    elif isinstance(value, list):
        for v in value:
            cards_in(v, out)
    return out
