"""The README's main job, end to end: `manage.py run_demo` with real processes (referee,
Celery worker, web server, one process per bot over gRPC), then the database, the JSON
the site serves, what it shows of fair play (every deal committed before play, played once,
revealed and verifiable with `tienlen-bot verify-replay`), and the replay in real
Chromium; Ctrl-C must leave no process behind."""

from __future__ import annotations

import json
import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from collections import Counter
from pathlib import Path

import pytest

from demo.processes import PROJECT_ROOT, free_port
from tests.e2e.stack import (
    MARKER_VARIABLE,
    broker_clear_stale,
    database_url,
    kill_marked,
    marked_pids,
    new_marker,
    pg_drop,
    pg_dump_and_restore,
)
from tests.needs import CHROMIUM, need_chromium

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

ARTIFACTS = PROJECT_ROOT / "test-artifacts" / "e2e"
GAMES = 8
SEATS = 4
# One table (the default demo plays 33, with house bots: test_demo_command.py checks its
# field; this checks every game of one table of bot processes in depth), with both
# versions of the demo's planner: bot processes loaded from `module:Class`. The demo plays
# the platform's default deal format, field duplicates: each game a new secret deal,
# committed before play, every game a starting game, each bot in the same seat throughout.
BOTS = ("planner-v2", "planner-v1", "greedy", "random")
TIENLEN_BOT = [sys.executable, "-m", "bots_sdk.cli"]


class Output:
    """A child's stdout, read on a thread so the test can wait for a line with a timeout."""

    def __init__(self, stream) -> None:
        self.lines: list[str] = []
        self._queue: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._pump, args=(stream,), daemon=True).start()

    def _pump(self, stream) -> None:
        for line in stream:
            self._queue.put(line.rstrip("\n"))
        self._queue.put(None)

    def wait_for(self, text: str, timeout: float) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                line = self._queue.get(timeout=max(0.1, deadline - time.monotonic()))
            except queue.Empty:
                break
            if line is None:
                raise AssertionError("the demo exited early:\n" + "\n".join(self.lines[-40:]))
            self.lines.append(line)
            if text in line:
                return line
        raise AssertionError(f"no {text!r} after {timeout}s:\n" + "\n".join(self.lines[-40:]))

    def rest(self, timeout: float = 10) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                line = self._queue.get(timeout=0.2)
            except queue.Empty:
                continue
            if line is None:
                break
            self.lines.append(line)
        return "\n".join(self.lines)


@pytest.fixture
def demo_env(tmp_path):
    from django.conf import settings
    from django.db import connection

    broker_clear_stale(settings.CELERY_BROKER_URL)
    marker = new_marker()
    env = {
        **os.environ,
        "DATABASE_URL": database_url(connection.settings_dict),
        # Own var dir: the no-server Celery broker (filesystem) is private to this run.
        "TIENLEN_VAR_DIR": str(tmp_path / "var"),
        "DJANGO_SETTINGS_MODULE": "tests.e2e.settings_e2e",
        "PYTHONPATH": os.pathsep.join([str(PROJECT_ROOT), str(PROJECT_ROOT / "platform")]),
        MARKER_VARIABLE: marker,
    }
    env.pop("TIENLEN_TOKEN_STORE", None)
    yield env, marker
    kill_marked(marker)  # whatever the test's outcome, nothing it started survives it


def fetch_json(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=10) as response:
        assert response.status == 200
        return json.loads(response.read())


@pytest.mark.browser
def test_run_demo_plays_a_round_robin_between_bot_processes(demo_env, tmp_path) -> None:
    from bots_sdk.fairplay import deal_commitment
    from bots_sdk.rules import deal, replay_game
    from tournaments.models import Bot, Deal, Game, GameSeat, Rating, TableSeat, Tournament
    from tournaments.selectors.standings import tournament_standings
    from tournaments.services.ratings import ratings_recompute

    need_chromium()  # the replay check drives it
    env, marker = demo_env
    port = free_port()
    demo = subprocess.Popen(
        [
            sys.executable, "manage.py", "run_demo",
            "--port", str(port), "--seats", str(SEATS), "--bots", ",".join(BOTS), "--house-bots", "",
            "--games-per-table", str(GAMES), "--concurrency", "1",
            "--log-dir", str(tmp_path / "logs"), "--timeout", "240",
        ],
        cwd=PROJECT_ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        text=True, start_new_session=True,
    )
    out = Output(demo.stdout)
    url_line = out.wait_for("Browse the replays at", timeout=280)
    site = f"http://127.0.0.1:{port}"
    assert site in url_line
    out.wait_for("then: Organise", timeout=30)
    text = "\n".join(out.lines)
    assert "Final standings" in text and "Ratings" in text
    for name in ("demo-planner-v2", "demo-planner-v1", "demo-greedy", "demo-random"):
        assert name in text
    assert "Two versions of one bot: demo-planner-v2 - demo-planner-v1:" in text
    # planner-v1 is hosted by default: submitted through the site as its author would,
    # validated in the sandbox and played by a runner; on a host that cannot sandbox the
    # demo says so in one line and runs it as a process
    hosted = [line for line in out.lines if line.startswith("Hosted: ")]
    assert len(hosted) == 1, text
    if "played hosted" in hosted[0]:
        assert "submitted demo-planner-v1 s1" in text and ": ready" in text
        assert "demo-planner-v1 is hosted, playing s1" in text
        assert "0 ended by the bot's own fault" in hosted[0]
        assert Bot.objects.get(name="demo-planner-v1").hosting == "hosted"
    else:
        assert "demo-planner-v1 runs as a process (remote) instead of hosted: this host cannot sandbox it" in hosted[0]
    # The organiser's sign-in, printed with a password that works.
    from django.contrib.auth import get_user_model

    password = re.search(r"user demo-organiser\s+password (\S+)", text).group(1)
    assert get_user_model().objects.get(username="demo-organiser").check_password(password)

    # --- the database: every game stored once, replays re-simulate to the stored results
    tournament = Tournament.objects.get()
    assert tournament.status == Tournament.Status.FINISHED
    assert (tournament.format, tournament.deal_format) == ("round_robin", "field")
    assert not tournament.reproducible and tournament.fair_play_notices == []
    games = list(Game.objects.filter(table__tournament=tournament).select_related("replay", "deal", "table"))
    planned = GAMES  # 4 bots at tables of 4: one table
    assert len(games) == planned
    assert Counter((g.table_id, g.index) for g in games) == Counter(
        {(games[0].table_id, i): 1 for i in range(planned)}
    )
    table = games[0].table
    deals = Counter()
    for game in games:
        replay = json.loads(game.replay.decoded_text())
        simulated = replay_game(replay)  # raises if the stored result differs
        assert simulated.replay()["result"] == replay["result"]
        assert game.finishing_order == replay["result"]["finishing_order"]
        assert game.points == replay["result"]["points"]
        assert sum(game.points) == 0
        # Game i plays deal (the table's group, i), dealt from its secret seed; every game
        # is a starting game (the 3 of spades leads), as at every table of a deal group.
        assert (game.deal.group, game.deal.index) == (table.deal_group, game.index)
        assert replay["seed"] == game.deal.seed and replay["starting"] is True
        assert [sorted(h) for h in replay["hands"]] == [sorted(map(str, h)) for h in deal(game.deal.seed, SEATS)]
        deals[frozenset(frozenset(h) for h in replay["hands"])] += 1
    # Field duplicates with one table: every deal is a new one, played once (no bot is
    # dealt into a deal it has seen), and every deal is committed and revealed.
    assert sorted(deals.values()) == [1] * planned
    committed = list(Deal.objects.filter(tournament=tournament))
    assert len(committed) == planned and all(d.revealed_at is not None for d in committed)
    assert all(deal_commitment(tournament.salt, d.seed) == d.commitment for d in committed)
    assert all(d.created_at <= min(g.recorded_at for g in games) for d in committed)  # before play

    # Every bot played every game, from the seat it was given at the table (no rotation).
    seats = GameSeat.objects.filter(game__table__tournament=tournament)
    per_bot = Counter(seats.values_list("bot__name", flat=True))
    assert set(per_bot.values()) == {planned}
    table_seat = dict(TableSeat.objects.filter(table=table).values_list("entrant__bot__name", "seat"))
    assert set(seats.values_list("bot__name", "seat")) == set(table_seat.items())
    assert not seats.filter(forfeited=True).exists()

    # --- ratings: what is stored equals a full recompute from the games
    pool = tournament.pool
    report = ratings_recompute(pool=pool, write=False)
    assert report.games == planned
    assert report.max_difference < 1e-6
    assert set(Rating.objects.filter(pool=pool).values_list("games", flat=True)) == {planned}

    # --- the JSON API and the site's JSON agree with the database
    api = f"{site}/api/v1"
    progress = fetch_json(f"{api}/tournaments/{tournament.slug}/progress/")
    assert (progress["status"], progress["games_done"]) == ("finished", planned)
    assert fetch_json(f"{site}/tournaments/{tournament.slug}/progress.json")["games_done"] == planned
    standings = tournament_standings(tournament=tournament)
    served = fetch_json(f"{api}/tournaments/{tournament.slug}/standings/")
    assert [(r["bot_name"], r["points"], r["games"]) for r in served] == [
        (r.bot_name, r.points, r.games) for r in standings
    ]
    assert sum(r["points"] for r in served) == 0
    game = games[0]
    stored = json.loads(game.replay.decoded_text())
    assert fetch_json(f"{api}/games/{game.id}/replay/") == stored
    assert fetch_json(f"{site}/games/{game.id}/replay.json")["result"] == stored["result"]
    schema = urllib.request.urlopen(f"{site}/api/v1/schema/", timeout=10).read().decode()
    assert "/api/v1/tournaments/{slug}/standings/" in schema

    # --- fair play as a competitor sees it: the commitments published, every seed revealed
    # now that every deal has been played, and a game checked with the one-line command.
    served_deals = fetch_json(f"{api}/tournaments/{tournament.slug}/deals/")
    assert served_deals["count"] == planned
    assert {(d["index"], d["commitment"], d["seed"]) for d in served_deals["results"]} == {
        (d.index, d.commitment, d.seed) for d in committed}
    about = fetch_json(f"{api}/games/{game.id}/")["deal"]
    assert (about["seed"], about["salt"], about["withheld"]) == (game.deal.seed, tournament.salt, None)
    verified = subprocess.run([*TIENLEN_BOT, "verify-replay", f"{site}/games/{game.id}/"],
                              capture_output=True, text=True, timeout=120, env=os.environ.copy())
    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert "verified: every check passed" in verified.stdout
    page = urllib.request.urlopen(f"{site}/tournaments/{tournament.slug}/", timeout=10).read().decode()
    assert f'<b id="deals-committed">{planned}</b>' in page and f'<b id="deals-revealed">{planned}</b>' in page

    # --- the replay in Chromium
    # A game that was played: a deal won instantly has no move to step through.
    played = next(g for g in games if json.loads(g.replay.decoded_text())["moves"])
    check_replay_page_in_chromium(f"{site}/games/{played.id}/", played)
    check_tournament_page_in_chromium(
        f"{site}/tournaments/{tournament.slug}/", [r.bot_name for r in standings]
    )

    # --- the documented backup (pg_dump / pg_restore) restores the same results
    check_backup_restores_results(tmp_path, planned=planned)

    # --- Ctrl-C stops the demo and everything it started
    children = set(marked_pids(marker)) - {demo.pid}
    assert len(children) >= 7  # referee, worker (+ pool), web, 4 bots
    os.killpg(demo.pid, signal.SIGINT)
    assert demo.wait(timeout=60) == 0, out.rest()
    deadline = time.monotonic() + 20
    while marked_pids(marker) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert marked_pids(marker) == []
    assert "every process the demo started has been shut down" in out.rest()
    assert Bot.objects.filter(name__startswith="demo-").count() == 4


def check_backup_restores_results(tmp_path: Path, *, planned: int) -> None:
    from django.db import connection

    settings_dict = connection.settings_dict
    if not settings_dict["ENGINE"].endswith("postgresql"):
        return  # SQLite: a backup is a copy of the file
    target = f"{settings_dict['NAME']}_restore"
    try:
        url = pg_dump_and_restore(settings_dict, tmp_path / "backup.dump", target)
        out = subprocess.run(
            [sys.executable, "manage.py", "recompute_ratings", "--check"],
            cwd=PROJECT_ROOT, capture_output=True, text=True, check=False,
            env={**os.environ, "DATABASE_URL": url},
        )
        assert out.returncode == 0, out.stderr
        assert f"{planned} games" in out.stdout
        assert "would change 0 ratings, max difference 0" in out.stdout
    finally:
        pg_drop(settings_dict, target)


def chromium_page():
    from playwright.sync_api import sync_playwright

    return sync_playwright()


def launch(playwright):
    return playwright.chromium.launch(
        executable_path=CHROMIUM,  # checked by need_chromium() before the demo starts
        headless=True,
        args=["--no-sandbox", "--disable-gpu", "--disable-background-networking",
              "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage"],
    )


def check_replay_page_in_chromium(url: str, game) -> None:
    replay = json.loads(game.replay.decoded_text())
    total = len(replay["moves"])
    with chromium_page() as playwright:
        browser = launch(playwright)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.set_default_timeout(15_000)
            page.goto(url)
            step = lambda: int(page.get_attribute("#replay-viewer", "data-step"))  # noqa: E731
            assert step() == total  # a finished game opens on its result
            assert page.is_visible("#result-panel")
            page.keyboard.press("Home")
            assert step() == 0
            for seat, hand in enumerate(replay["hands"]):
                shown = page.eval_on_selector_all(
                    f'.seat[data-seat="{seat}"] .hand .card', "els => els.map(e => e.dataset.card)"
                )
                assert sorted(shown) == sorted(hand)
            page.click("#btn-next")
            assert step() == 1
            first = replay["moves"][0]
            assert page.get_attribute("#table-cards", "data-cards") == " ".join(first["cards"])
            ARTIFACTS.mkdir(parents=True, exist_ok=True)
            (ARTIFACTS / "demo-game.png").write_bytes(page.screenshot(full_page=True))
        finally:
            browser.close()


def check_tournament_page_in_chromium(url: str, bot_names: list[str]) -> None:
    with chromium_page() as playwright:
        browser = launch(playwright)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.set_default_timeout(15_000)
            page.goto(url)
            body = page.text_content("body")
            for name in bot_names:
                assert name in body
            (ARTIFACTS / "demo-tournament.png").write_bytes(page.screenshot(full_page=True))
        finally:
            browser.close()
