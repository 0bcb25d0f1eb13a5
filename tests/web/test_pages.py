"""Every page: status, what a visitor sees, permissions, empty states, pinned query counts."""

from __future__ import annotations

import json
import re
import zlib
from html import unescape

import pytest
from django.urls import reverse

from tests.web.factories import (
    load_replay,
    make_knockout_between_rounds,
    make_user,
    make_world,
    make_world_with_closed_tables,
)
from tournaments.models import Bot, GameSeat, Replay, TableSeat, Tournament
from tournaments.services.accounts import bot_create, bot_revoke, user_can_manage_tournament

pytestmark = pytest.mark.django_db


# ------------------------------------------------------------------ empty site
@pytest.mark.parametrize(
    ("url", "text"),
    [
        ("/", "No tournament is running right now."),
        ("/tournaments/", "No tournaments here yet."),
        ("/leaderboards/", "No rating pools yet"),
        ("/bots/", "No bots registered yet."),
    ],
)
def test_empty_site_pages_say_so(client, url, text):
    response = client.get(url)
    assert response.status_code == 200
    assert text in response.content.decode()


def test_unknown_objects_are_404(client):
    assert client.get("/tournaments/nope/").status_code == 404
    assert client.get("/bots/nobody/").status_code == 404
    assert client.get("/games/999/").status_code == 404
    assert client.get("/leaderboards/south-4/").status_code == 404
    assert client.get("/leaderboards/garbage/").status_code == 404


# ------------------------------------------------------------------ home
def test_home_lists_running_finished_and_leaders(client):
    make_world(slug="done-cup", replay=load_replay("game_2p_handmade.json"))
    make_world(slug="live-cup", status=Tournament.Status.RUNNING, games_done_per_table=1,
               replay=load_replay("game_2p_handmade.json"))
    html = client.get("/").content.decode()
    assert "Tournament live-cup" in html and "Tournament done-cup" in html
    assert html.index("Tournament live-cup") < html.index("Recently finished") < html.index("Tournament done-cup")
    assert "south-2" in html
    assert "2 / 4 games" in html  # running tournament's progress


def test_home_query_count_is_fixed(client, django_assert_max_num_queries):
    for i in range(3):
        make_world(slug=f"cup{i}", replay=load_replay("game_2p_handmade.json"))
    with django_assert_max_num_queries(8):
        assert client.get("/").status_code == 200


# ------------------------------------------------------------------ tournament
def test_tournament_page_shows_progress_standings_and_cross_table(client):
    w = make_world(bots=4, tables=3, games_per_table=2, replay=load_replay("game_2p_handmade.json"))
    html = client.get(f"/tournaments/{w.tournament.slug}/").content.decode()
    assert 'id="progress-bar" style="width: 100%"' in html
    assert "6</span> of <span id=\"games-planned\">6</span> games" in html
    assert "± " in html  # confidence intervals
    for b in w.bots:
        assert b.name in html
    assert 'id="cross-table"' in html
    assert 'id="bracket"' not in html


def _standings_forfeits(html: str, bot: str) -> int:
    row = re.search(rf'<tr data-bot="{re.escape(bot)}">(.*?)</tr>', html, re.S)
    assert row, f"no standings row for {bot}"
    found = re.search(r"(\d+) forfeits?\b", row.group(1))
    return int(found.group(1)) if found else 0


def test_tournament_page_counts_forfeited_tables_like_the_api(client):
    # A bot forfeits table 1 mid-table after its first game: the stand-in plays its other
    # three games there (recorded under it, seat marked forfeited). That is one forfeit
    # (a table), on the page as in the API, not three (games).
    w = make_world(bots=4, tables=2, games_per_table=4, replay=load_replay("game_2p_handmade.json"))
    seat = TableSeat.objects.select_related("entrant__bot").get(table=w.tables[0], seat=1)
    seat.forfeited = True
    seat.save(update_fields=["forfeited"])
    forfeited_games = GameSeat.objects.filter(game__table_id=seat.table_id, entrant_id=seat.entrant_id, game__index__gte=1)
    assert forfeited_games.update(forfeited=True) == 3
    bot = seat.entrant.bot.name

    html = client.get(f"/tournaments/{w.tournament.slug}/").content.decode()
    api = {row["bot_name"]: row["forfeits"] for row in client.get(f"/api/v1/tournaments/{w.tournament.slug}/standings/").json()}
    assert api[bot] == 1
    for b in w.bots:
        assert _standings_forfeits(html, b.name) == api[b.name]


def test_tournament_page_standings_and_cross_table_are_the_apis(client):
    w = make_world(bots=5, tables=5, games_per_table=3, replay=load_replay("game_4p.json"))
    slug = w.tournament.slug
    html = client.get(f"/tournaments/{slug}/").content.decode()
    api = client.get(f"/api/v1/tournaments/{slug}/standings/").json()
    # the same bots in the same order with the same games and points
    page_rows = re.findall(r'<tr data-bot="([^"]+)"><td class="num">(\d+)</td>.*?<td class="num">(\d+)</td>'
                           r'<td class="num[^"]*">([^<]+)</td>', html, re.S)
    assert [(bot, int(rank), int(games)) for bot, rank, games, _ in page_rows] == [
        (r["bot_name"], r["rank"], r["games"]) for r in api
    ]
    assert [pts.replace("−", "-").lstrip("+") for *_, pts in page_rows] == [str(r["points"]) for r in api]
    # every cross-table cell: games finished above-below and the point difference
    cross = client.get(f"/api/v1/tournaments/{slug}/cross-table/").json()
    ids = {e["bot_name"]: str(e["entrant_id"]) for e in cross["entrants"]}
    section = html.split('id="cross-table"')[1].split("</section>")[0]
    cross_rows = re.findall(r'<tr><th style="text-align:left">\d+\. ([^<]+)</th>(.*?)</tr>', section, re.S)
    assert [bot for bot, _ in cross_rows] == [r["bot_name"] for r in api]  # standings order
    for bot, body in cross_rows:
        shown = re.findall(r'(?:<td class="self">|<td class="muted">|<b class="[a-z]*">(\d+)–(\d+)</b><br><span class="small muted">([^<]+)</span>)', body)
        expected = []
        for other, _, _, _ in page_rows:
            cell = cross["cells"][ids[bot]].get(ids[other])
            if cell is None or not cell["games"]:
                expected.append(("", "", ""))
            else:
                diff = cell["points"]
                text = f"+{diff}" if diff > 0 else f"−{-diff}" if diff < 0 else "0"
                expected.append((str(cell["above"]), str(cell["below"]), text))
        assert shown == expected, bot


def test_tournament_progress_json_counts_games(client, django_assert_num_queries):
    w = make_world(tables=2, games_per_table=4, games_done_per_table=1, status=Tournament.Status.RUNNING,
                   replay=load_replay("game_2p_handmade.json"))
    with django_assert_num_queries(2):  # tournament, progress
        data = client.get(f"/tournaments/{w.tournament.slug}/progress.json").json()
    assert data["games_done"] == 2 and data["games_planned"] == 8
    assert data["percent"] == 25.0 and data["status"] == "running"
    assert data["tables_total"] == 2 and data["tables_done"] == 0


def _page_progress(html: str) -> dict:
    """The progress the tournament page renders (before any JavaScript runs)."""
    def number(pattern: str) -> str:
        found = re.search(pattern, html)
        assert found, f"no {pattern!r} on the page"
        return found.group(1)

    return {
        "percent": float(number(r'role="progressbar"[^>]*aria-valuenow="([\d.]+)"')),
        "bar_width": float(number(r'id="progress-bar" style="width: ([\d.]+)%"')),
        "games_done": int(number(r'id="games-done">(\d+)<')),
        "games_planned": int(number(r'id="games-planned">(\d+)<')),
        "tables_done": int(number(r'id="tables-done">(\d+)<')),
        "tables_total": int(number(r'id="tables-total">(\d+)<')),
    }


PROGRESS_CASES = {
    # The first round is over and the final not created yet: the bar must not reach 100 %.
    "knockout-between-rounds": (
        make_knockout_between_rounds,
        {"tables_total": 3, "tables_done": 2, "games_done": 4, "games_planned": 6, "percent": 66.7},
    ),
    # Failed and cancelled tables are done (they will not play on), as in the API; their
    # unplayed games are no longer planned.
    "failed-and-cancelled-tables": (
        make_world_with_closed_tables,
        {"tables_total": 4, "tables_done": 3, "tables_running": 1, "tables_failed": 1,
         "games_done": 8, "games_planned": 10, "percent": 80.0},
    ),
}


@pytest.mark.parametrize("case", list(PROGRESS_CASES))
def test_tournament_progress_on_the_page_is_the_apis(client, case):
    build, expected = PROGRESS_CASES[case]
    slug = build().tournament.slug
    api = client.get(f"/api/v1/tournaments/{slug}/progress/").json()
    assert {k: api[k] for k in expected} == expected
    # the polled endpoint sends exactly the API's document
    assert client.get(f"/tournaments/{slug}/progress.json").json() == api
    # the page's bar and counts, as rendered
    page = _page_progress(client.get(f"/tournaments/{slug}/").content.decode())
    assert page == {
        "percent": api["percent"], "bar_width": api["percent"], "games_done": api["games_done"],
        "games_planned": api["games_planned"], "tables_done": api["tables_done"], "tables_total": api["tables_total"],
    }
    # and the tournament lists (home, /tournaments/) show the same games count
    row = f"{api['games_done']} / {api['games_planned']} games"
    assert row in client.get("/").content.decode()
    assert row in client.get("/tournaments/?status=live").content.decode()


@pytest.mark.parametrize("status", [Tournament.Status.FINISHED, Tournament.Status.RUNNING])
def test_knockout_draws_a_bracket(client, django_assert_num_queries, status):
    w = make_world(fmt=Tournament.Format.KNOCKOUT, bots=4, tables=3, replay=load_replay("game_2p_handmade.json"),
                   status=status)
    # tournament, entrants, standings, progress, latest games (+seats), incidents, deal
    # counts, bracket tables + seats; no cross-table or table pages. A running knockout's
    # rounds not created yet are counted in the same progress query. Luck-adjusted
    # standings: revealed games' seats, withheld games, entrants. The entrants shown apart
    # (invited, withdrawn, disqualified).
    with django_assert_num_queries(14):
        html = client.get(f"/tournaments/{w.tournament.slug}/").content.decode()
    assert 'id="bracket"' in html and 'class="bracket-round"' in html
    assert html.count('class="match"') == 3
    assert "entrant winner" in html and "entrant loser" in html


def test_tournament_without_entrants_has_empty_states(client):
    org = make_user("org", staff=True)
    Tournament.objects.create(name="Empty cup", slug="empty-cup", organiser=org, format="round_robin")
    html = client.get("/tournaments/empty-cup/").content.decode()
    assert "No entrants yet." in html and "No tables scheduled yet." in html and "No games played yet." in html


@pytest.mark.parametrize("games", [2, 40])
def test_tournament_page_query_count_does_not_grow(client, django_assert_num_queries, games):
    w = make_world(bots=8, tables=4, games_per_table=games // 4 or 1, replay=load_replay("game_2p_handmade.json"))
    # tournament, entrants, standings, progress, latest games (+seats), incidents, deal counts,
    # cross-table (entrants, seats: the selector's, as the API's), tables page (count, rows,
    # seats), luck-adjusted standings (revealed games' seats, withheld games, entrants), the
    # entrants shown apart (invited, withdrawn, disqualified)
    with django_assert_num_queries(17):
        assert client.get(f"/tournaments/{w.tournament.slug}/").status_code == 200


def test_tournament_games_page_paginates(client, django_assert_num_queries):
    w = make_world(tables=3, games_per_table=30, replay=load_replay("game_2p_handmade.json"))
    with django_assert_num_queries(5):  # tournament, count, games, their seats, sealed games
        html = client.get(f"/tournaments/{w.tournament.slug}/games/").content.decode()
    assert "90 games" in html and "page 1 of 2" in html
    assert html.count('href="/games/') == 50


# ------------------------------------------------------------------ leaderboard and bots
def test_leaderboard_ranks_bots_with_owner_and_recent_change(client, django_assert_num_queries):
    w = make_world(bots=4, replay=load_replay("game_2p_handmade.json"))
    with django_assert_num_queries(4):  # pool, ratings, recent changes, sparkline series
        html = client.get(f"/leaderboards/{w.pool.slug}/").content.decode()
    # highest rating first
    names = [b.name for b in sorted(w.bots, key=lambda b: -b.ratings.get().rating)]
    positions = [html.index(n) for n in names]
    assert positions == sorted(positions)
    assert "owner" in html and "+" in html
    assert html.count('<svg class="spark"') == 3  # the fourth bot has not played yet


def test_leaderboards_leave_out_revoked_bots_as_the_api_does(client):
    w = make_world(bots=4, replay=load_replay("game_2p_handmade.json"))
    gone = max(w.bots, key=lambda b: b.ratings.get().rating)  # the top bot
    bot_revoke(bot=gone)
    page = client.get(f"/leaderboards/{w.pool.slug}/").content.decode()
    home = client.get("/").content.decode()
    api = client.get(f"/api/v1/pools/{w.pool.slug}/leaderboard/").json()
    api_rows = api["results"] if isinstance(api, dict) else api
    assert gone.name not in page and gone.name not in home
    assert gone.name not in json.dumps(api_rows)
    others = [b for b in w.bots if b != gone]
    assert all(b.name in page for b in others)


def test_leaderboards_index_lists_pools(client):
    w = make_world(replay=load_replay("game_2p_handmade.json"))
    html = client.get("/leaderboards/").content.decode()
    assert f"/leaderboards/{w.pool.slug}/" in html


def test_bot_page_has_history_h2h_and_results(client, django_assert_num_queries):
    w = make_world(bots=4, tables=3, replay=load_replay("game_2p_handmade.json"))
    bot = w.bots[0]
    # bot, rating history, versions, ratings, results, head-to-head, recent games (+seats),
    # its casual seats (the "people vs bots" record: none here)
    with django_assert_num_queries(9):
        html = client.get(f"/bots/{bot.name}/").content.decode()
    assert "Test bot number 0" in html and "owner" in html
    assert "<svg" in html  # rating chart
    assert w.tournament.name in html
    assert 'id="head-to-head"' in html and w.bots[1].name in html
    assert "<code>1.0</code>" in html


def test_bot_page_empty_states(client):
    owner = make_user("solo")
    Bot.objects.create(owner=owner, name="lonely")
    html = client.get("/bots/lonely/").content.decode()
    assert "Not rated yet." in html and "No tournament games yet." in html
    assert "No games against other bots yet." in html and "This bot has not connected yet." in html


# ------------------------------------------------------------------ game page
def test_game_page_embeds_replay_and_seats(client, django_assert_num_queries):
    w = make_world(replay=load_replay("game_2p_handmade.json"))
    game = w.games[0]
    with django_assert_num_queries(3):  # game with table and tournament, seats, replay
        response = client.get(f"/games/{game.id}/")
    html = response.content.decode()
    assert response.status_code == 200
    assert 'id="replay-data"' in html and "replay.js" in html
    data = json.loads(html.split('id="replay-data" type="application/json">')[1].split("</script>")[0])
    assert len(data["moves"]) == 11 and len(data["states"]) == 12
    assert data["hands"][0][0] == "3S"
    assert data["names"][0] == w.bots[0].name
    assert "Download replay JSON" in html
    # the referee's timing log: think time per move, the fallback after a timeout
    assert data["moves"][0]["ms"] == 1.0 and data["moves"][4]["fallback"] == "timeout"
    assert 'id="timing"' in html and "Thinking ms" in html
    # the two clocks say whose they are, so a slowest move above the thinking total is no puzzle
    timing = html[html.index('id="timing"'):]
    assert "bot-reported" in timing and "referee-measured" in timing


def test_replay_download_is_the_stored_json(client):
    replay = load_replay("game_2p_handmade.json")
    w = make_world(replay=replay)
    response = client.get(f"/games/{w.games[0].id}/replay.json")
    assert response.status_code == 200
    assert response["Content-Disposition"].startswith("attachment;")
    assert json.loads(response.content) == replay


@pytest.mark.parametrize(("stored", "message"), [
    (b"not zlib at all", "The stored replay of game {id} is damaged"),
    (zlib.compress(b'{"schema": "tienlen.replay/0"}'),
     "The stored replay of game {id} cannot be read: unsupported replay schema 'tienlen.replay/0'"),
    (zlib.compress(b'{"schema": "tienlen.replay/1", "preset": "south"'),
     "The stored replay of game {id} cannot be read: not a replay: the text is not JSON"),
])
def test_a_damaged_stored_replay_is_explained_never_a_500(client, stored, message):
    """The engine's one replay reader reads every stored replay: the game page still shows
    the result and says why there are no moves, the download, the API and the proof answer
    410 with the reader's message, and the front page's highlights skip it."""
    w = make_world(replay=load_replay("game_2p_handmade.json"))
    game = w.games[0]
    Replay.objects.filter(game=game).update(data=stored)
    message = message.format(id=game.id)
    page = client.get(f"/games/{game.id}/")
    assert page.status_code == 200
    html = page.content.decode()
    assert message in html and "The recorded result is shown; the moves are not." in html
    download = client.get(f"/games/{game.id}/replay.json")
    assert download.status_code == 410 and message in download.content.decode()
    for url in (f"/api/v1/games/{game.id}/replay/", f"/api/v1/games/{game.id}/proof/"):
        answer = client.get(url)
        assert answer.status_code == 410, url
        assert answer.json()["detail"].startswith(message)
        assert answer.json()["detail"].endswith(".")
    assert client.get("/").status_code == 200


# ------------------------------------------------------------------ accounts and bots
def test_signup_logs_in_and_leads_to_bot_registration(client):
    response = client.post("/accounts/signup/", {"username": "ann", "password1": "a-Long-pass-123", "password2": "a-Long-pass-123"})
    assert response.status_code == 302 and response["Location"] == reverse("web:bot_register")
    assert client.get("/me/bots/").status_code == 200


def test_bot_registration_shows_an_install_command_that_exists(client):
    """Not `pip install tienlen-platform` (no such package on PyPI): the SDK's own
    distribution from a checkout (`packaging/sdk/`), which brings the `tienlen-bot` command the run
    line uses; tests/sdk/test_sdk_install.py runs this command in a clean venv."""
    import tomllib

    from django.conf import settings

    client.force_login(make_user("ann"))
    html = client.post("/me/bots/new/", {"name": "ann-bot"}).content.decode()
    assert "pip install tienlen-platform" not in html
    assert f'<code id="install-command">{settings.TIENLEN_SDK_INSTALL}</code>' in html
    assert "in a checkout of the platform" in html
    assert settings.TIENLEN_SDK_INSTALL == "pip install ./packaging/sdk"  # installs the SDK project...
    sdk = tomllib.loads((settings.BASE_DIR / "packaging" / "sdk" / "pyproject.toml").read_text())["project"]
    assert "tienlen-bot" in sdk["scripts"]  # ...whose script the run command calls
    assert "tienlen-bot run" in html


def test_signup_errors_are_shown_and_keep_input(client):
    html = client.post("/accounts/signup/", {"username": "ann", "password1": "x", "password2": "y"}).content.decode()
    assert "errorlist" in html and 'value="ann"' in html


def test_bot_registration_shows_token_once(client):
    user = make_user("ann")
    client.force_login(user)
    response = client.post("/me/bots/new/", {"name": "ann-bot", "description": "mine"})
    html = response.content.decode()
    assert response.status_code == 200 and response["Cache-Control"] == "no-store"
    bot = Bot.objects.get(name="ann-bot")
    token = html.split('id="bot-token">')[1].split("<")[0]
    assert token.startswith("tlb_")
    from tournaments.tokens import token_hash

    assert bot.token_hash == token_hash(token) and token not in bot.token_hash
    # The command to run it asks for the token: never on a command line (shell history, ps).
    command = unescape(html.split('id="run-command">')[1].split("<")[0])
    assert token not in command and command.startswith("read -rs TIENLEN_TOKEN && export TIENLEN_TOKEN && tienlen-bot run")
    # never shown again
    assert token not in client.get("/me/bots/").content.decode()
    assert token not in client.get("/bots/ann-bot/").content.decode()


def test_bot_registration_rejects_bad_and_duplicate_names(client):
    user = make_user("ann")
    client.force_login(user)
    Bot.objects.create(owner=user, name="taken")
    html = client.post("/me/bots/new/", {"name": "Taken"}).content.decode()
    assert "already exists" in html
    html = client.post("/me/bots/new/", {"name": "bad name!"}).content.decode()
    assert "Use 1-63 letters" in html
    assert Bot.objects.count() == 1


def test_token_rotation_only_by_owner(client):
    owner = make_user("ann")
    other = make_user("bob")
    bot = Bot.objects.create(owner=owner, name="annbot", token_hash="x" * 64)
    client.force_login(other)
    assert client.post("/me/bots/annbot/token/").status_code == 404
    client.force_login(owner)
    html = client.post("/me/bots/annbot/token/").content.decode()
    bot.refresh_from_db()
    assert bot.token_hash != "x" * 64 and "previous token no longer works" in html


def test_account_pages_need_login(client):
    for url in ["/me/bots/", "/me/bots/new/", "/organise/", "/organise/new/"]:
        response = client.get(url)
        assert response.status_code == 302 and "/accounts/login/" in response["Location"]


def test_login_page_and_logout(client):
    make_user("ann", password="a-Long-pass-123")
    assert client.get("/accounts/login/").status_code == 200
    response = client.post("/accounts/login/", {"username": "ann", "password": "a-Long-pass-123"})
    assert response.status_code == 302
    assert "Sign out (ann)" in client.get("/").content.decode()
    client.post("/accounts/logout/")
    assert "Sign in" in client.get("/").content.decode()


# ------------------------------------------------------------------ organiser
def test_organiser_pages_forbidden_for_players(client):
    client.force_login(make_user("player"))
    assert client.get("/organise/").status_code == 403
    assert client.get("/organise/new/").status_code == 403


def test_tournament_form_reports_bad_fields(client):
    client.force_login(make_user("boss", staff=True))
    html = client.post("/organise/new/", {"name": "", "format": "swiss", "preset": "south", "options": "{not json",
                                          "seats_per_table": 4, "duplicate_sets": 1, "cycles": 1,
                                          "advance_per_table": 2, "move_time_ms": 5, "time_bank_ms": 0}).content.decode()
    assert "This field is required." in html
    assert "Select a valid choice" in html
    assert "Not valid JSON" in html
    assert "Ensure this value is greater than or equal to 10." in html
    assert Tournament.objects.count() == 0


def _organiser(username: str = "boss"):
    from django.contrib.auth.models import Permission

    user = make_user(username)
    user.user_permissions.add(Permission.objects.get(codename="organise_tournaments"))
    return user


def test_organiser_creates_a_tournament_with_entrants(client):
    boss = _organiser()
    bots = [Bot.objects.create(owner=boss, name=f"entry{i}") for i in range(4)]
    client.force_login(boss)
    assert client.get("/organise/new/").status_code == 200
    response = client.post("/organise/new/", {
        "name": "Autumn Open", "format": "round_robin", "preset": "south", "options": "",
        "seats_per_table": 4, "games_per_table": 8, "duplicate_sets": 1, "cycles": 2,
        "advance_per_table": 2, "move_time_ms": 500, "time_bank_ms": 5000, "rated": "on",
        "entrants": [b.id for b in bots], "seed": "autumn", "deal_format": "independent",
    })
    t = Tournament.objects.get(name="Autumn Open")
    assert response.status_code == 302 and response["Location"] == f"/tournaments/{t.slug}/"
    assert t.status == "draft" and t.games_per_table == 8 and t.cycles == 2 and t.organiser_seed == "autumn"
    assert t.deal_format == "independent"
    assert sorted(t.entrants.values_list("bot__name", flat=True)) == [b.name for b in bots]
    html = client.get(response["Location"]).content.decode()
    assert "Start now" in html and "Cancel" in html
    assert "Autumn Open" in client.get("/organise/").content.decode()


def test_the_form_offers_the_engines_presets():
    from bots_sdk.rules import PRESETS
    from web.forms import TournamentForm

    assert [name for name, _ in TournamentForm().fields["preset"].choices] == list(PRESETS)


def test_unknown_rule_option_is_reported_and_nothing_saved(client):
    boss = _organiser()
    client.force_login(boss)
    form = {
        "name": "Bad options", "format": "round_robin", "preset": "south", "deal_format": "field",
        "seats_per_table": 4, "duplicate_sets": 1, "cycles": 1, "advance_per_table": 2,
        "move_time_ms": 500, "time_bank_ms": 0,
    }
    html = client.post("/organise/new/", {**form, "options": '{"no_such_option": 1}'}).content.decode()
    assert "Unknown option(s): no_such_option." in html and 'value="Bad options"' in html
    # A known option with a value of the wrong type, refused by the same check as the API's.
    html = client.post("/organise/new/", {**form, "options": '{"steal_lead": "yes"}'}).content.decode()
    assert "Invalid rule options: option steal_lead must be true or false" in html
    assert 'value="Bad options"' in html
    assert Tournament.objects.count() == 0


def test_start_needs_enough_entrants_and_cancel_keeps_games(client):
    boss = _organiser()
    client.force_login(boss)
    t = Tournament.objects.create(name="Tiny", slug="tiny", organiser=boss, format="round_robin")
    response = client.post("/organise/tiny/start/", follow=True)
    assert "Could not start" in response.content.decode() and "At least 4 entrants" in response.content.decode()
    t.refresh_from_db()
    assert t.status == "draft"
    response = client.post("/organise/tiny/cancel/", follow=True)
    assert "Tournament cancelled" in response.content.decode()
    t.refresh_from_db()
    assert t.status == "cancelled"


def test_only_the_owning_organiser_may_start_or_cancel(client):
    owner_org = _organiser("org1")
    other_org = _organiser("org2")
    Tournament.objects.create(name="Mine", slug="mine", organiser=owner_org, format="round_robin")
    client.force_login(other_org)
    assert client.post("/organise/mine/cancel/").status_code == 403
    assert Tournament.objects.get(slug="mine").status == "draft"
    client.force_login(make_user("player"))
    assert client.post("/organise/mine/start/").status_code == 403
    html = client.get("/tournaments/mine/").content.decode()
    assert "Start now" not in html


def test_the_page_the_organiser_pages_and_the_api_agree_on_who_manages_a_tournament(client):
    """One rule (user_can_manage_tournament): the page shows the buttons exactly to
    those the organiser pages and the API let cancel it."""
    from django.contrib.auth.models import Permission
    from rest_framework.test import APIClient

    owner_org = _organiser("org1")
    demoted = _organiser("org3")
    users = {
        "its organiser": (owner_org, True),
        "another organiser": (_organiser("org2"), False),
        "staff": (make_user("admin", staff=True), True),
        "a bot owner": (make_user("player"), False),
        "its organiser without the permission any more": (demoted, False),
    }
    for label, (user, allowed) in users.items():
        organiser = demoted if label.endswith("any more") else owner_org
        slug = f"t-{user.username}"
        Tournament.objects.create(name=slug, slug=slug, organiser=organiser, format="round_robin")
        if label.endswith("any more"):
            demoted.user_permissions.remove(Permission.objects.get(codename="organise_tournaments"))
            user = type(demoted).objects.get(pk=demoted.pk)  # the permission cache is per instance
        assert user_can_manage_tournament(user=user, tournament=Tournament.objects.get(slug=slug)) is allowed, label
        client.force_login(user)
        assert ("Cancel" in client.get(f"/tournaments/{slug}/").content.decode()) is allowed, label
        api = APIClient()
        api.force_authenticate(user)
        assert (api.post(f"/api/v1/tournaments/{slug}/cancel/", {}, format="json").status_code == 200) is allowed, label
        assert (client.post(f"/organise/{slug}/cancel/").status_code == 302) is allowed, label


def test_owner_edits_and_retires_a_bot(client):
    owner = make_user("ann")
    bot, _token = bot_create(owner=owner, name="annbot")
    client.force_login(make_user("bob"))
    assert client.get("/me/bots/annbot/edit/").status_code == 404
    assert client.post("/me/bots/annbot/retire/").status_code == 404
    client.force_login(owner)
    response = client.post("/me/bots/annbot/edit/", {"description": "Plays low cards first."})
    assert response.status_code == 302
    assert "Plays low cards first." in client.get("/bots/annbot/").content.decode()
    response = client.post("/me/bots/annbot/retire/", follow=True)
    bot.refresh_from_db()
    assert bot.token_hash is None and bot.revoked_at is not None
    assert "token no longer works" in response.content.decode() and "revoked" in response.content.decode()
    assert "retired" in client.get("/bots/annbot/").content.decode()


def test_tournament_list_filters_by_status(client):
    make_world(slug="done-cup", replay=load_replay("game_2p_handmade.json"))
    make_world(slug="live-cup", status=Tournament.Status.RUNNING, replay=load_replay("game_2p_handmade.json"))
    html = client.get("/tournaments/?status=live").content.decode()
    assert "Tournament live-cup" in html and "Tournament done-cup" not in html
    html = client.get("/tournaments/?status=finished").content.decode()
    assert "Tournament done-cup" in html and "Tournament live-cup" not in html
    assert "No tournaments here yet." in client.get("/tournaments/?status=draft").content.decode()
    html = client.get("/tournaments/?status=bogus").content.decode()  # unknown filter: everything
    assert "Tournament live-cup" in html and "Tournament done-cup" in html


def test_bot_games_page_lists_every_game(client, django_assert_num_queries):
    w = make_world(tables=2, games_per_table=30, replay=load_replay("game_2p_handmade.json"))
    bot = w.bots[1]  # sits at both tables
    with django_assert_num_queries(4):  # bot, count, games, seats
        html = client.get(f"/bots/{bot.name}/games/").content.decode()
    assert "60 games" in html and "page 1 of 2" in html
    assert f"/bots/{bot.name}/games/" in client.get(f"/bots/{bot.name}/").content.decode()


def test_bot_list_and_my_bots_empty_state(client):
    owner = make_user("ann")
    bot_create(owner=owner, name="alpha", description="Greedy with a twist")
    html = client.get("/bots/").content.decode()
    assert "alpha" in html and "Greedy with a twist" in html and "ann" in html
    client.force_login(make_user("newcomer"))
    assert "You have no bots yet." in client.get("/me/bots/").content.decode()


def test_game_without_replay_and_wrong_methods(client):
    w = make_world(replay=load_replay("game_2p_handmade.json"))
    game = w.games[0]
    game.replay.delete()
    response = client.get(f"/games/{game.id}/")
    assert response.status_code == 404
    assert client.get(f"/games/{game.id}/replay.json").status_code == 404
    client.force_login(_organiser())
    assert client.get(f"/organise/{w.tournament.slug}/start/").status_code == 405
    assert client.post("/tournaments/").status_code == 405


def test_start_cancel_buttons_only_for_the_owning_organiser(client):
    mine = _organiser("org1")
    other = _organiser("org2")
    Tournament.objects.create(name="Mine", slug="mine", organiser=mine, format="round_robin")
    client.force_login(other)
    assert "Start now" not in client.get("/tournaments/mine/").content.decode()
    client.force_login(mine)
    assert "Start now" in client.get("/tournaments/mine/").content.decode()
    client.force_login(make_user("staffer", staff=True))
    assert "Start now" in client.get("/tournaments/mine/").content.decode()
