"""Every page at a phone's width (390 px, Chromium): nothing wider than the screen, wide
tables scroll inside their own box instead of being cut, the standings chart's labels stay
readable, and bot names break only where they have a hyphen, never mid-word."""

from __future__ import annotations

import os

import pytest

from tests.web.conftest import shot
from tests.web.factories import load_replay, make_user, make_world

os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PHONE = 390

# Each table: fits, or sits in an ancestor that scrolls sideways (so nothing is cut off).
TABLES_CUT = """() => [...document.querySelectorAll('table')].filter(t => {
  if (t.getBoundingClientRect().right <= window.screen.width + 1) return false;
  for (let e = t.parentElement; e && e !== document.body; e = e.parentElement) {
    const o = getComputedStyle(e).overflowX;
    if ((o === 'auto' || o === 'scroll') && e.getBoundingClientRect().right <= window.screen.width + 1) return false;
  }
  return true;
}).map(t => t.id || t.className || 'table')"""

# Text that may break anywhere (break-all / anywhere) splits a name like "spring-open-bot0"
# mid-word; names must break only at their hyphens.
MID_WORD = """() => [...document.querySelectorAll('td, th, a, .bot-name')].filter(e => {
  const s = getComputedStyle(e);
  return s.wordBreak === 'break-all' || s.overflowWrap === 'anywhere' || s.overflowWrap === 'break-word';
}).slice(0, 5).map(e => e.textContent.trim().slice(0, 40))"""

# The smallest rendered label of the standings chart, in CSS pixels.
CHART_LABEL_PX = """() => {
  const texts = [...document.querySelectorAll('svg text')].filter(t => t.textContent.trim());
  if (!texts.length) return null;
  return Math.min(...texts.map(t => t.getBoundingClientRect().height));
}"""


def test_every_page_fits_a_phone(live_server, phone_page, client) -> None:
    w = make_world(replay=load_replay("game_4p.json"), bots=8, tables=4, games_per_table=2)
    page = phone_page
    slug, bot = w.tournament.slug, w.bots[0].name
    public = [
        ("home", "/"),
        ("tournaments", "/tournaments/"),
        ("tournament", f"/tournaments/{slug}/"),
        ("tournament-games", f"/tournaments/{slug}/games/"),
        ("deals", f"/tournaments/{slug}/deals/"),
        ("leaderboards", "/leaderboards/"),
        ("leaderboard", f"/leaderboards/{w.pool.slug}/"),
        ("bots", "/bots/"),
        ("bot", f"/bots/{bot}/"),
        ("bot-games", f"/bots/{bot}/games/"),
        ("game", f"/games/{w.games[0].id}/"),
        ("fair-play", "/fair-play/"),
        ("sign-up", "/accounts/signup/"),
    ]
    problems = []
    for name, path in public:
        page.goto(live_server.url + path)
        problems += measure(page, name)
    # An organiser's and an owner's pages, signed in.
    make_user("phone-organiser", staff=True)
    page.goto(live_server.url + "/accounts/login/")
    page.fill("input[name=username]", "phone-organiser")
    page.fill("input[name=password]", "pw-for-tests-123")
    page.click("form button[type=submit], form input[type=submit]")
    page.wait_for_load_state()
    for name, path in [("organise", "/organise/"), ("organise-new", "/organise/new/"),
                       ("my-bots", "/me/bots/"), ("tokens", "/me/tokens/"), ("account", "/me/account/"),
                       ("play", "/play/")]:
        page.goto(live_server.url + path)
        assert "/accounts/login/" not in page.url, f"{name}: not signed in"
        problems += measure(page, name)
    assert not problems, "\n".join(problems)


def measure(page, name: str) -> list[str]:
    found = []
    shot(page, f"phone-{name}")
    # (a mobile browser widens its layout viewport to fit wide content: compare with the
    # device's width, not window.innerWidth)
    overflow = page.evaluate("document.documentElement.scrollWidth - screen.width")
    if overflow > 1:
        found.append(f"{name}: {overflow}px wider than the phone")
    cut = page.evaluate(TABLES_CUT)
    if cut:
        found.append(f"{name}: tables cut at the right instead of scrolling in their box: {cut}")
    broken = page.evaluate(MID_WORD)
    if broken:
        found.append(f"{name}: names may break mid-word: {broken}")
    label = page.evaluate(CHART_LABEL_PX)
    if label is not None and label < 9:
        found.append(f"{name}: the chart's smallest label is {label:.1f}px tall (unreadable)")
    return found
