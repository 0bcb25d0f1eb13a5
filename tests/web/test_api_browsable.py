"""Every API URL opened in a browser: the browsable API renders it (several list
endpoints answered 500 to `Accept: text/html` while JSON clients got 200, so no test saw it).

Each URL pattern of `tournaments.api.urls` has a sample address below; a pattern added
without one fails `test_every_api_route_has_a_sample`, so no route escapes the check.
"""

from __future__ import annotations

import pytest
from django.urls import URLPattern

from tests.web.factories import make_world
from tournaments.api import urls as api_urls
from tournaments.services.accounts import api_token_create

pytestmark = pytest.mark.django_db

BROWSER_ACCEPT = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"

# name -> (path template, methods besides GET: who may open it without 401/403)
OPEN = "anyone"
SIGNED_IN = "signed in"
DOWNLOAD = "download"  # a file, whatever the browser accepts: it saves it, no page


def samples(world, token_id: int) -> dict[str, tuple[str, str]]:
    t = world.tournament.slug
    bot, other = world.bots[0].name, world.bots[1].name
    game = world.games[0].id
    return {
        "root": ("/api/v1/", OPEN),
        "tokens": ("/api/v1/tokens/", SIGNED_IN),
        "account": ("/api/v1/account/", SIGNED_IN),
        "account-approval": ("/api/v1/accounts/owner/approval/", SIGNED_IN),
        "token-revoke": (f"/api/v1/tokens/{token_id}/", SIGNED_IN),
        "bots": ("/api/v1/bots/", OPEN),
        "bot": (f"/api/v1/bots/{bot}/", OPEN),
        "bot-rotate": (f"/api/v1/bots/{bot}/rotate-token/", SIGNED_IN),
        "bot-revoke": (f"/api/v1/bots/{bot}/revoke/", SIGNED_IN),
        "bot-versions": (f"/api/v1/bots/{bot}/versions/", SIGNED_IN),
        "bot-version": (f"/api/v1/bots/{bot}/versions/1/", SIGNED_IN),
        "bot-hosting": (f"/api/v1/bots/{bot}/hosting/", SIGNED_IN),
        "bot-sessions": (f"/api/v1/bots/{bot}/sessions/", SIGNED_IN),
        "bot-version-promote": (f"/api/v1/bots/{bot}/versions/1/promote/", SIGNED_IN),
        "bot-storage": (f"/api/v1/bots/{bot}/storage/", SIGNED_IN),
        "bot-ratings": (f"/api/v1/bots/{bot}/ratings/", OPEN),
        "bot-rating-history": (f"/api/v1/bots/{bot}/ratings/{world.pool.slug}/", OPEN),
        "bot-games": (f"/api/v1/bots/{bot}/games/", OPEN),
        "head-to-head": (f"/api/v1/bots/{bot}/vs/{other}/", OPEN),
        "tournaments": ("/api/v1/tournaments/", OPEN),
        "tournament": (f"/api/v1/tournaments/{t}/", OPEN),
        "progress": (f"/api/v1/tournaments/{t}/progress/", OPEN),
        "entrants": (f"/api/v1/tournaments/{t}/entrants/", OPEN),
        "entrant": (f"/api/v1/tournaments/{t}/entrants/{bot}/", SIGNED_IN),
        "entrant-notes-publish": (f"/api/v1/tournaments/{t}/entrants/{bot}/publish-notes/", SIGNED_IN),
        "invitation-accept": (f"/api/v1/tournaments/{t}/entrants/{bot}/accept/", SIGNED_IN),
        "invitation-decline": (f"/api/v1/tournaments/{t}/entrants/{bot}/decline/", SIGNED_IN),
        "entrant-disqualify": (f"/api/v1/tournaments/{t}/entrants/{bot}/disqualify/", SIGNED_IN),
        "invitations": ("/api/v1/invitations/", SIGNED_IN),
        "join": (f"/api/v1/tournaments/{t}/join/", SIGNED_IN),
        "leave": (f"/api/v1/tournaments/{t}/leave/", SIGNED_IN),
        "start": (f"/api/v1/tournaments/{t}/start/", SIGNED_IN),
        "cancel": (f"/api/v1/tournaments/{t}/cancel/", SIGNED_IN),
        "standings": (f"/api/v1/tournaments/{t}/standings/", OPEN),
        "standings-luck-adjusted": (f"/api/v1/tournaments/{t}/standings/luck-adjusted/", OPEN),
        "cross-table": (f"/api/v1/tournaments/{t}/cross-table/", OPEN),
        "standings-csv": (f"/api/v1/tournaments/{t}/standings.csv", DOWNLOAD),
        "cross-table-csv": (f"/api/v1/tournaments/{t}/cross-table.csv", DOWNLOAD),
        "games-csv": (f"/api/v1/tournaments/{t}/games.csv", DOWNLOAD),
        "replays-zip": (f"/api/v1/tournaments/{t}/replays.zip", DOWNLOAD),
        "collusion": (f"/api/v1/tournaments/{t}/collusion/", SIGNED_IN),
        "bracket": (f"/api/v1/tournaments/{t}/bracket/", OPEN),
        "tables": (f"/api/v1/tournaments/{t}/tables/", OPEN),
        "games": (f"/api/v1/tournaments/{t}/games/", OPEN),
        "deals": (f"/api/v1/tournaments/{t}/deals/", OPEN),
        "pools": ("/api/v1/pools/", OPEN),
        "leaderboard": (f"/api/v1/pools/{world.pool.slug}/leaderboard/", OPEN),
        "game": (f"/api/v1/games/{game}/", OPEN),
        "replay": (f"/api/v1/games/{game}/replay/", OPEN),
        "game-proof": (f"/api/v1/games/{game}/proof/", OPEN),
    }


@pytest.fixture
def world():
    w = make_world()
    from django.contrib.auth import get_user_model

    organiser = get_user_model().objects.get(username="organiser")
    token, _ = api_token_create(user=organiser, name="browser test")
    return w, token.id


def test_every_api_route_has_a_sample(world) -> None:
    w, token_id = world
    names = {p.name for p in api_urls.urlpatterns if isinstance(p, URLPattern)}
    assert names == set(samples(w, token_id))


def _get_html(client, path: str):
    response = client.get(path, HTTP_ACCEPT="text/html")
    assert response["Content-Type"].startswith("text/html"), (path, response["Content-Type"])
    html = response.content.decode()
    assert 'class="response-info"' in html, path  # the browsable API page, not an error page
    return response, html


@pytest.mark.parametrize("who", ["anonymous", "owner", "organiser"])
def test_every_api_url_renders_in_a_browser(client, world, who) -> None:
    from django.contrib.auth import get_user_model

    w, token_id = world
    if who != "anonymous":
        client.force_login(get_user_model().objects.get(username=who))
    for name, (path, access) in samples(w, token_id).items():
        if access == DOWNLOAD:
            response = client.get(path, HTTP_ACCEPT=BROWSER_ACCEPT)
            assert response.status_code == 200, (name, path, response.status_code)
            assert response["Content-Disposition"].startswith("attachment; "), (name, path)
            continue
        response, _ = _get_html(client, path)
        if access == OPEN:
            assert response.status_code == 200, (name, path, response.status_code)
        elif who == "anonymous":
            assert response.status_code in (401, 403), (name, path, response.status_code)
        else:
            # Signed in: either the page (GET) or "method not allowed" with the forms of the
            # methods it does allow; never a server error.
            assert response.status_code in (200, 403, 404, 405), (name, path, response.status_code)


def test_the_browsable_api_offers_the_input_fields_of_each_write(client, world) -> None:
    """The form under a list is the create form (the input serializer), not the output's."""
    from django.contrib.auth import get_user_model

    w, _ = world
    client.force_login(get_user_model().objects.get(username="organiser"))
    _, html = _get_html(client, "/api/v1/tournaments/")
    for field in ("seats_per_table", "move_time_ms", "allow_same_owner"):
        assert f'name="{field}"' in html
    assert 'name="entrant_count"' not in html  # an output-only field
    _, html = _get_html(client, f"/api/v1/tournaments/{w.tournament.slug}/entrants/")
    assert 'name="bot"' in html
    client.force_login(get_user_model().objects.get(username="owner"))
    _, html = _get_html(client, f"/api/v1/bots/{w.bots[0].name}/")
    # The owner's bot: a raw PATCH body to edit, with the one field it takes.
    raw = html[html.index('name="_content"'):]
    raw = raw[: raw.index("</textarea>")]
    assert "&quot;description&quot;: &quot;Test bot number 0&quot;" in raw
    assert "token_prefix" not in raw


def test_the_api_root_links_every_entry_point(client, world) -> None:
    data = client.get("/api/v1/", HTTP_ACCEPT="application/json").json()
    assert set(data) == {"tournaments", "bots", "pools", "tokens", "schema", "docs"}
    for url in data.values():
        path = url.removeprefix("http://testserver")
        assert client.get(path, HTTP_ACCEPT=BROWSER_ACCEPT).status_code in (200, 401)


@pytest.mark.parametrize(
    ("path", "content_type"),
    [
        ("/api/v1/schema/", "application/vnd.oai.openapi"),
        ("/api/v1/schema/?format=json", "application/vnd.oai.openapi+json"),
        ("/api/v1/docs/", "text/html"),
    ],
)
def test_the_schema_and_its_readers_are_served_under_v1(client, path, content_type) -> None:
    response = client.get(path, HTTP_ACCEPT=BROWSER_ACCEPT)
    assert response.status_code == 200
    assert response["Content-Type"].startswith(content_type)


def test_the_schema_names_the_api_paths_and_not_its_own(client) -> None:
    schema = client.get("/api/v1/schema/?format=json").json()
    assert "/api/v1/tournaments/{slug}/standings/" in schema["paths"]
    assert not any(p.startswith(("/api/v1/schema", "/api/v1/docs")) for p in schema["paths"])
    assert schema["paths"]["/api/v1/bots/"]["get"]["operationId"] == "v1_bots_list"  # stable ids


@pytest.mark.parametrize(
    ("old", "new"),
    [("/api/schema/", "/api/v1/schema/"), ("/api/docs/", "/api/v1/docs/"), ("/api/", "/api/v1/")],
)
def test_addresses_published_before_v1_redirect(client, old, new) -> None:
    response = client.get(old)
    assert response.status_code == 302
    assert response["Location"] == new


def test_the_api_docs_load_swagger_ui_from_this_site(client) -> None:
    html = client.get("/api/v1/docs/").content.decode()
    assert "cdn.jsdelivr.net" not in html and "https://" not in html
    assert "/static/drf_spectacular_sidecar/swagger-ui-dist/swagger-ui-bundle.js" in html
    assert "<script>" not in html  # the init script comes from ?script, never inline
    script = client.get("/api/v1/docs/?script=")
    assert script.status_code == 200
    assert script["Content-Type"].startswith("application/javascript")
    assert "/api/v1/schema/" in script.content.decode()


def test_favicon_is_an_icon(client) -> None:
    response = client.get("/favicon.ico")
    assert response.status_code == 200
    assert response["Content-Type"] == "image/x-icon"
    assert b"".join(response.streaming_content)[:4] == b"\x00\x00\x01\x00"  # ICO header


def test_the_schema_generates_without_warnings(tmp_path) -> None:
    """Every view, serializer and authenticator is described (an unknown authenticator, for
    example, would be left out of the docs with only a warning)."""
    from django.core.management import call_command

    call_command("spectacular", "--fail-on-warn", "--file", str(tmp_path / "schema.yml"))
    assert "securitySchemes" in (tmp_path / "schema.yml").read_text()
