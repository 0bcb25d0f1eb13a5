"""Path converters for every id and name in a URL of the API and the site.

A URL part that cannot name a row gives a plain 404 before any query, whatever the
database: Django's `int` and `str` converters accept 99999999999999999999 (SQLite raises
OverflowError on it) and NUL bytes (PostgreSQL refuses them in text), which made such URLs
answer 500. Registered once, on import, by the URL modules that use them.
"""

from __future__ import annotations

from django.urls import register_converter

MAX_ID = 2**63 - 1  # a 64-bit primary key


class DatabaseIdConverter:
    """A primary key: 1-19 ASCII digits that fit a signed 64-bit integer."""

    regex = "[0-9]{1,19}"

    def to_python(self, value: str) -> int:
        number = int(value)
        if number > MAX_ID:
            raise ValueError("too large for an id")  # Django: no match, so 404
        return number

    def to_url(self, value: int) -> str:
        return str(value)


class BotNameConverter:
    """A bot name as `tournaments.models.name_validator` allows it."""

    regex = "[A-Za-z0-9][A-Za-z0-9_.-]{0,62}"

    def to_python(self, value: str) -> str:
        return value

    def to_url(self, value: str) -> str:
        return value


class PoolConverter:
    """A rating pool: `<preset>-<seats>`, e.g. south-4 or south_extended-3."""

    regex = "[A-Za-z0-9_]{1,32}-[0-9]{1,2}"

    def to_python(self, value: str) -> str:
        return value

    def to_url(self, value: str) -> str:
        return value


register_converter(DatabaseIdConverter, "dbid")
register_converter(BotNameConverter, "botname")
register_converter(PoolConverter, "pool")
