"""Real Chromium on every kind of page: nothing is loaded from another host, and the
Content-Security-Policy is never violated (the API docs were blank offline because
Swagger UI came from a CDN).

The policy is the enforcement; this test is the proof that our own pages live within it:
a page that needed an inline script, a CDN style or a web font would show a violation here
(and be broken for visitors).
"""

from __future__ import annotations

import os
from urllib.parse import urlparse

import pytest

from tests.web.conftest import shot
from tests.web.factories import load_replay, make_world

os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

RECORD_VIOLATIONS = """
window.__csp = [];
document.addEventListener("securitypolicyviolation", function (e) {
  window.__csp.push(e.violatedDirective + " " + (e.blockedURI || "inline") + " " + e.sourceFile + ":" + e.lineNumber);
});
"""


def watch(page, origin: str) -> dict[str, list[str]]:
    seen: dict[str, list[str]] = {"external": [], "console": []}
    host = urlparse(origin).netloc

    def on_request(request) -> None:
        url = urlparse(request.url)
        if url.scheme in ("http", "https", "ws", "wss") and url.netloc != host:
            seen["external"].append(request.url)

    page.on("request", on_request)
    page.on(
        "console",
        lambda msg: seen["console"].append(msg.text) if "Content Security Policy" in msg.text else None,
    )
    page.add_init_script(RECORD_VIOLATIONS)
    return seen


def sign_in(page, origin: str, username: str, password: str = "pw-for-tests-123") -> None:
    page.goto(f"{origin}/accounts/login/")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", password)
    page.click("main button[type=submit]")
    page.wait_for_url(f"{origin}/")


def test_every_page_type_loads_only_from_this_site_within_the_policy(live_server, page):
    from django.contrib.auth import get_user_model

    w = make_world(replay=load_replay("game_4p.json"), tables=2, games_per_table=2)
    get_user_model().objects.filter(username="organiser").update(is_superuser=True)  # the admin too
    origin = live_server.url
    seen = watch(page, origin)
    public = [
        ("home", "/"),
        ("tournaments", "/tournaments/"),
        ("tournament", f"/tournaments/{w.tournament.slug}/"),
        ("tournament-games", f"/tournaments/{w.tournament.slug}/games/"),
        ("game", f"/games/{w.games[0].id}/?move=5"),
        ("tournament-deals", f"/tournaments/{w.tournament.slug}/deals/"),
        ("fair-play", "/fair-play/"),
        ("leaderboards", "/leaderboards/"),
        ("leaderboard", f"/leaderboards/{w.pool.slug}/"),
        ("bots", "/bots/"),
        ("bot", f"/bots/{w.bots[0].name}/"),
        ("signup", "/accounts/signup/"),
        ("login", "/accounts/login/"),
        ("api-root", "/api/v1/"),
        ("api-list", "/api/v1/tournaments/"),
        ("api-standings", f"/api/v1/tournaments/{w.tournament.slug}/standings/"),
        ("api-swagger", "/api/v1/docs/"),
        ("admin-login", "/admin/login/"),
    ]
    signed_in = [
        ("my-bots", "/me/bots/"),
        ("bot-register", "/me/bots/new/"),
        ("api-tokens", "/me/tokens/"),
        ("organise", "/organise/"),
        ("tournament-new", "/organise/new/"),
        ("tournament-as-organiser", f"/tournaments/{w.tournament.slug}/"),
        ("api-list-signed-in", "/api/v1/tournaments/"),
        ("admin", "/admin/"),
        ("admin-changelist", "/admin/tournaments/tournament/"),
    ]
    pages = [*public, ("sign-in", None), *signed_in]
    for name, path in pages:
        if path is None:
            sign_in(page, origin, "organiser")
            continue
        response = page.goto(origin + path)
        assert response is not None and response.status == 200, (name, response and response.status)
        assert "content-security-policy" in response.headers, name
        if name == "api-swagger":
            page.wait_for_selector(".swagger-ui .opblock", timeout=20_000)  # the schema rendered
        else:
            page.wait_for_load_state("load")
        violations = page.evaluate("window.__csp")
        assert violations == [], (name, violations)
        if name in ("api-swagger", "game", "tournament"):
            shot(page, f"csp-{name}")
    # The token shown once after registering a bot (its copy button is in site.js now).
    page.goto(f"{origin}/me/bots/new/")
    page.fill("input[name=name]", "csp-bot")
    page.click("main button[type=submit]")
    page.wait_for_selector("#bot-token")
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=origin)
    page.click('[data-copy="bot-token"]')
    page.wait_for_selector('[data-copy="bot-token"]:text("Copied")')
    assert page.evaluate("navigator.clipboard.readText()") == page.text_content("#bot-token")
    assert page.evaluate("window.__csp") == []
    assert seen["external"] == []
    assert seen["console"] == []


def test_confirmations_still_ask_before_a_destructive_form_submits(live_server, page):
    """The confirm() that an inline onsubmit did is now site.js's: dismissing it keeps the
    tournament running."""
    from tournaments.models import Tournament

    w = make_world(replay=load_replay("game_4p.json"), status=Tournament.Status.RUNNING,
                   games_done_per_table=1, slug="live-cup")
    seen = watch(page, live_server.url)
    sign_in(page, live_server.url, "organiser")
    page.goto(f"{live_server.url}/tournaments/{w.tournament.slug}/")
    asked: list[str] = []

    def dismiss(dialog) -> None:
        asked.append(dialog.message)
        dialog.dismiss()

    page.on("dialog", dismiss)
    page.click("#organiser-actions button.danger")
    page.wait_for_timeout(300)
    assert asked == ["Cancel this tournament? Games already played are kept."]
    w.tournament.refresh_from_db()
    assert w.tournament.status == Tournament.Status.RUNNING
    assert page.evaluate("window.__csp") == [] and seen["external"] == []
