"""Card and table formatting shared by every template.

Cards are stored as text ("10H"); pages draw them with suit symbols and colours so they
stay readable at small sizes, the same way the replay viewer's JavaScript does.
"""

from __future__ import annotations

from collections.abc import Iterable

from django import template
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from bots_sdk.cards import SUIT_NAME, SUIT_SYMBOL, SUIT_TEXT
from tournaments.models import Table

register = template.Library()

# From the engine's deck table (bots_sdk.cards), the platform's only one.
SUIT_SYMBOLS = dict(zip(SUIT_TEXT, SUIT_SYMBOL, strict=True))
SUIT_NAMES = dict(zip(SUIT_TEXT, SUIT_NAME, strict=True))


def split_card(text: str) -> tuple[str, str]:
    """Return (rank, suit letter) for a card text such as "10H" or "TS"."""
    text = str(text).strip().upper()
    rank, suit = text[:-1], text[-1:]
    if rank == "T":
        rank = "10"
    return rank, suit


@register.simple_tag
def card(text: str) -> SafeString:
    rank, suit = split_card(text)
    return format_html(
        '<span class="card suit-{}" title="{} of {}"><b>{}</b><i>{}</i></span>',
        suit,
        rank,
        SUIT_NAMES.get(suit, suit),
        rank,
        SUIT_SYMBOLS.get(suit, suit),
    )


@register.simple_tag
def cards(texts: Iterable[str] | str | None) -> SafeString:
    if not texts:
        return format_html("{}", "")
    if isinstance(texts, str):
        texts = texts.split()
    return format_html(
        '<span class="cards">{}</span>',
        format_html_join("", "{}", ((card(t),) for t in texts)),
    )


@register.filter
def signed(value: float | int | None) -> str:
    """Points and rating changes with an explicit sign (+3, −2, 0)."""
    if value is None:
        return "–"
    text = f"{abs(value):.1f}" if isinstance(value, float) else str(abs(value))
    if value > 0:
        return f"+{text}"
    if value < 0:
        return f"−{text}"
    return text


@register.filter
def percent(value: float | None, total: float | None = None) -> str:
    if value is None:
        return "–"
    if total is not None:
        value = (value / total) if total else 0.0
    return f"{100 * value:.0f}%"


@register.filter
def table_status(value: str) -> str:
    """A table status's label ("waiting" reads "Waiting for bots"): selectors hand pages the
    stored value, as the API sends it."""
    try:
        return Table.Status(value).label
    except ValueError:
        return str(value)
