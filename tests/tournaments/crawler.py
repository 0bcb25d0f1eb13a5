"""An anonymous client walking the whole public site: every API route and page, each URL
pattern instantiated with every tournament, game, bot and pool that exists, then every
same-site link found in the answers. Used by the fair-play tests (test_no_deal_leak.py,
test_sealed_results.py) to look at everything the public can see."""

from __future__ import annotations

import io
import json
import re
import zipfile
from collections import deque
from urllib.parse import urldefrag, urlsplit

from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver

from tournaments.models import Bot, Game, RatingPool, Tournament

MAX_PAGES = 4000
SKIP = ("/admin", "/static/", "/accounts/logout", "/favicon", "/api/v1/schema", "/api/v1/docs")


def _patterns(resolver, prefix: str = "") -> list[tuple[str, object]]:
    """Every (route, pattern) of the site, with the prefixes of included URL confs."""
    out = []
    for p in resolver.url_patterns:
        route = prefix + str(p.pattern)
        if isinstance(p, URLResolver):
            out += _patterns(p, route)
        elif isinstance(p, URLPattern):
            out.append((route, p))
    return out


def game_routes() -> list[str]:
    """Every public route that serves one game (its page, API answers, downloads), as a
    path with `<game_id>` to fill in."""
    routes = []
    for route, _ in _patterns(get_resolver()):
        if not route.startswith(("admin", "^")) and re.search(r"<(?:\w+:)?game_id>", route):
            routes.append("/" + re.sub(r"<(?:\w+:)?game_id>", "<game_id>", route))
    return routes


def seed_urls() -> list[str]:
    """Every route, each parameter filled with every value that exists."""
    values = {
        "slug": list(Tournament.objects.values_list("slug", flat=True)),
        "game_id": [str(i) for i in Game.objects.values_list("id", flat=True)],
        "name": list(Bot.objects.values_list("name", flat=True)),
        "bot": list(Bot.objects.values_list("name", flat=True)[:2]),
        "other": list(Bot.objects.values_list("name", flat=True)[1:2]),
        "pool": [p.slug for p in RatingPool.objects.all()],
        "token_id": ["1"],
    }
    urls = []
    for route, _ in _patterns(get_resolver()):
        if route.startswith(("admin", "^")):
            continue
        params = re.findall(r"<(?:\w+:)?(\w+)>", route)
        filled = [route]
        for name in params:
            filled = [re.sub(rf"<(?:\w+:)?{name}>", v, r, count=1) for r in filled for v in values.get(name, ["x"])]
        urls += ["/" + u for u in filled]
    return urls


def archive_as_json(raw: bytes) -> str:
    """A zip archive's members as one JSON document, name -> parsed JSON (or text)."""
    members = {}
    with zipfile.ZipFile(io.BytesIO(raw)) as archive:
        for name in archive.namelist():
            text = archive.read(name).decode("utf-8", "replace")
            try:
                members[name] = json.loads(text)
            except ValueError:
                members[name] = text
    return json.dumps(members)


def crawl(client: Client) -> dict[str, tuple[int, str, dict]]:
    """GET every seed URL and every same-site link found in the answers (HTML hrefs, JSON
    string values): url -> (status, body, headers)."""
    seen: dict[str, tuple[int, str, dict]] = {}
    todo = deque(seed_urls())
    while todo and len(seen) < MAX_PAGES:
        url = urldefrag(todo.popleft())[0]
        if url in seen or url.startswith(SKIP) or not url.startswith("/") or url.endswith("/live/"):
            continue  # (the live stream sends the progress document of progress.json)
        accept = "application/json" if url.startswith("/api/") else "text/html"
        response = client.get(url, HTTP_ACCEPT=accept)
        raw = b"".join(response.streaming_content) if response.streaming else response.content
        if response.get("Content-Type") == "application/zip":
            body = archive_as_json(raw)  # what it holds, so every check reads its members
        else:
            body = raw.decode("utf-8", "replace")
        assert response.status_code < 500, (url, response.status_code)
        seen[url] = (response.status_code, body, dict(response.items()))
        links = re.findall(r'href="([^"]+)"', body)
        links += re.findall(r'"(https?://testserver/[^"]*|/[^"\s]*)"', body)
        for link in links:
            parts = urlsplit(link.replace("&amp;", "&"))
            if parts.netloc in ("", "testserver") and parts.path.startswith("/"):
                todo.append(parts.path + (f"?{parts.query}" if parts.query else ""))
    return seen


