"""Every URL of the site and the API, with every path id and every query parameter replaced
by values that do not fit the database: a clear 4xx, never a 500.

The URL list is read from the resolver, so a route added later is swept too. Each path
parameter in turn gets each bad value (the others stay valid), as an anonymous visitor and
as a staff organiser who owns everything; then each known query parameter gets each bad
value on every GET page.
"""

from __future__ import annotations

import re
from urllib.parse import quote

import pytest
from django.urls import URLPattern, URLResolver, get_resolver

from tests.web.factories import load_replay, make_world

pytestmark = pytest.mark.django_db

# Too big for a 64-bit id (the example), one past bigint, one past int, zero.
BAD_INTS = ["99999999999999999999", "9223372036854775808", "2147483648", "0"]
# NUL (PostgreSQL text cannot hold it), broken percent-encoding, invalid UTF-8, very long,
# a non-ASCII digit (str.isdigit() is True, int() fails).
# Values starting with "raw:" go into the URL as they are (already percent-encoded).
BAD_TEXT = ["a\x00b", "raw:%E0%A4%A", "raw:%FF", "x" * 300, "²", "-1", " ", "9" * 30]
# Every parameter a page or the API reads, and one nobody reads.
QUERY_PARAMS = ["page", "tables", "seat", "status", "format", "mine", "min_games", "limit", "offset", "next", "id"]
BAD_QUERY = ["99999999999999999999", "-1", "²", "\x00"]


def routes(resolver=None, prefix: str = ""):
    """(route template, converters) of every URL pattern, recursively."""
    resolver = resolver or get_resolver()
    for entry in resolver.url_patterns:
        pattern = str(entry.pattern)
        if isinstance(entry, URLResolver):
            yield from routes(entry, prefix + pattern)
        elif isinstance(entry, URLPattern):
            yield prefix + pattern


PARAM = re.compile(r"<(?:(\w+):)?(\w+)>")


def fill(route: str, values: dict[str, str]) -> str | None:
    """The URL of a route (path() syntax) with its parameters filled; None for regex routes."""
    if route.startswith("^") or "(?P" in route:
        return None
    def one(m: re.Match) -> str:
        value = values.get(m.group(2), "x")
        return value[4:] if value.startswith("raw:") else quote(value, safe="")

    return "/" + PARAM.sub(one, route)


@pytest.fixture(scope="module")
def world(django_db_setup, django_db_blocker):
    """One committed world for the whole sweep (each test still rolls back its own
    writes); the database is flushed afterwards, as after a transactional test."""
    from django.core.management import call_command

    from tournaments.models import ApiToken

    with django_db_blocker.unblock():
        w = make_world(replay=load_replay("game_4p.json"), tables=2, games_per_table=2)
        w.token = ApiToken.objects.create(user=w.tournament.organiser, key_hash="h" * 64, prefix="tla_x")
        yield w
        call_command("flush", interactive=False, verbosity=0)


def valid_values(w) -> dict[str, str]:
    bot = w.bots[0].name
    return {
        "slug": w.tournament.slug, "name": bot, "other": w.bots[1].name, "bot": bot,
        "pool": w.pool.slug, "game_id": str(w.games[0].pk), "token_id": str(w.token.pk),
        "object_id": "1", "app_label": "tournaments", "content_type_id": "1", "url": "x",
    }


def clients(client, w):
    """An anonymous visitor and the staff organiser of everything; a view's exception is a
    500 response (as a visitor gets it), collected instead of stopping the sweep."""
    from django.test import Client

    anonymous = Client(raise_request_exception=False)
    staff = Client(raise_request_exception=False)
    staff.force_login(w.tournament.organiser)
    return {"anonymous": anonymous, "staff organiser": staff}


def check(response, label: str, failures: list[str]) -> None:
    if response.status_code >= 500:
        failures.append(f"{label} -> {response.status_code}")


ROUTES = [r for r in routes() if fill(r, {}) is not None]
WITH_PARAMS = [r for r in ROUTES if PARAM.search(r)]


def test_the_sweep_sees_the_routes_with_ids() -> None:
    assert "api/v1/games/<dbid:game_id>/replay/" in WITH_PARAMS
    assert "games/<dbid:game_id>/" in WITH_PARAMS
    assert len(WITH_PARAMS) >= 30


@pytest.mark.parametrize("route", WITH_PARAMS)
def test_a_path_parameter_out_of_range_or_malformed_gives_4xx(client, world, route) -> None:
    good = valid_values(world)
    failures: list[str] = []
    who = clients(client, world)
    methods = ("get",) if route.startswith("admin/") else ("get", "post", "delete")
    for name in [m.group(2) for m in PARAM.finditer(route)]:
        for bad in [*BAD_INTS, *BAD_TEXT]:
            url = fill(route, {**good, name: bad})
            check(who["anonymous"].get(url), f"anonymous GET {url[:120]}", failures)
            for method in methods:  # the owner of everything gets past every permission check
                check(getattr(who["staff organiser"], method)(url), f"staff {method.upper()} {url[:120]}", failures)
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("route", [r for r in ROUTES if not r.startswith("admin/") and "logout" not in r])
def test_a_query_parameter_out_of_range_or_malformed_gives_4xx(client, world, route) -> None:
    """Django's admin is left out here (its list filters are Django's own); its object ids
    are swept above."""
    url = fill(route, valid_values(world))
    failures: list[str] = []
    who = clients(client, world)
    anonymous_sees_it = who["anonymous"].get(url).status_code < 400
    for name, c in who.items():
        if name != "anonymous" and anonymous_sees_it:
            continue  # the same view reads the same parameters: sweep it once
        if c.get(url).status_code >= 400:
            continue  # a page this visitor cannot see: its parameters are never read
        for param in QUERY_PARAMS:
            for bad in BAD_QUERY:
                check(c.get(url, {param: bad}), f"{who} GET {url}?{param}={bad[:40]!r}", failures)
    assert not failures, "\n".join(failures)
