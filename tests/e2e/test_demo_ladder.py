"""Ladders and scheduled starts in the demo's own process set: with
nothing to start by hand, a ladder created and started from the demo's site plays tables
(Celery beat is one of the demo's processes); a ladder that cannot play says why on its
page and in the Organise list, never "Running"; a tournament scheduled a few seconds ahead
starts and finishes on its own. Real processes throughout: `manage.py run_demo` (referee,
bots over gRPC, worker, beat, uvicorn) and Chromium."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
from datetime import timedelta

import pytest

from demo.processes import PROJECT_ROOT, free_port
from tests.e2e import test_demo as _demo
from tests.e2e.stack import marked_pids
from tests.e2e.test_demo import Output, chromium_page, launch
from tests.needs import need_chromium

pytestmark = [pytest.mark.slow, pytest.mark.browser, pytest.mark.django_db(transaction=True)]

demo_env = _demo.demo_env  # the demo's environment fixture: own var dir, marked processes
BOTS = ("planner-v2", "planner-v1", "greedy", "random")
ARTIFACTS = PROJECT_ROOT / "test-artifacts" / "e2e"


def fetch_json(url: str, *, token: str | None = None, body: dict | None = None) -> dict:
    request = urllib.request.Request(url, data=None if body is None else json.dumps(body).encode())
    request.add_header("Accept", "application/json")
    if body is not None:
        request.add_header("Content-Type", "application/json")
    if token:
        request.add_header("Authorization", f"Token {token}")
    with urllib.request.urlopen(request, timeout=15) as response:
        return json.loads(response.read())


def wait_for(condition, *, timeout: float, what: str, demo: subprocess.Popen, out: Output, interval: float = 1.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert demo.poll() is None, "the demo exited:\n" + out.rest(timeout=2)
        value = condition()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")


def create_from_the_form(page, site: str, *, name: str, fmt: str, bots: list[str]) -> str:
    """The organiser's form, as a person fills it in; returns the new tournament's slug."""
    page.goto(f"{site}/organise/new/")
    page.fill("#id_name", name)
    page.select_option("#id_format", fmt)
    labels = page.eval_on_selector_all("#id_entrants input", "os => os.map(o => [o.value, o.parentElement.textContent.trim()])")
    values = [v for v, label in labels if label.split(" (")[0] in bots]
    assert len(values) == len(bots), labels
    for value in values:
        page.check(f"#id_entrants input[value='{value}']")
    page.click("#tournament-form button[type=submit]")
    page.wait_for_selector("text=Start now")
    slug = page.url.rstrip("/").rsplit("/", 1)[-1]
    page.click("text=Start now")
    page.wait_for_selector(".messages >> text=Tournament started")
    return slug


def test_the_demo_ticks_ladders_and_scheduled_starts(demo_env, tmp_path) -> None:
    from tournaments.models import Tournament
    from tournaments.services.accounts import api_token_create

    need_chromium()
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    env, marker = demo_env
    port = free_port()
    demo = subprocess.Popen(
        [sys.executable, "manage.py", "run_demo", "--port", str(port), "--bots", ",".join(BOTS),
         "--games-per-table", "4", "--concurrency", "2", "--log-dir", str(tmp_path / "logs"),
         "--timeout", "240"],
        cwd=PROJECT_ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        start_new_session=True,
    )
    out = Output(demo.stdout)
    site = f"http://127.0.0.1:{port}"
    try:
        out.wait_for("Starting Celery beat (ladder tables and scheduled starts, a tick every 5 s)", timeout=200)
        out.wait_for("then: Organise", timeout=280)
        password = re.search(r"user demo-organiser\s+password (\S+)", "\n".join(out.lines)).group(1)
        demo_bots = [f"demo-{b}" for b in BOTS]

        with chromium_page() as playwright:
            browser = launch(playwright)
            try:
                organiser = browser.new_page(viewport={"width": 1280, "height": 900})
                organiser.set_default_timeout(30_000)
                organiser.goto(f"{site}/accounts/login/")
                organiser.fill("#id_username", "demo-organiser")
                organiser.fill("#id_password", password)
                organiser.click("main button[type=submit]")
                organiser.wait_for_selector("nav >> text=Organise")

                # --- a ladder of the four demo bots plays, ticked by the demo's beat
                ladder = create_from_the_form(organiser, site, name="Demo ladder", fmt="ladder", bots=demo_bots)
                progress = wait_for(
                    lambda: (p := fetch_json(f"{site}/tournaments/{ladder}/progress.json"))["games_done"] >= 4 and p,
                    timeout=180, what="the ladder's first table", demo=demo, out=out,
                )
                assert progress["status"] == "running" and progress["activity"] in ("running", "waiting")
                assert progress["tables_total"] >= 1
                organiser.goto(f"{site}/tournaments/{ladder}/")
                assert "Ladder:" in organiser.text_content("#progress-label")
                assert "0 of 0" not in organiser.text_content("#progress-panel")
                assert organiser.text_content("#t-status") in ("Running", "Waiting")
                (ARTIFACTS / "demo-ladder.png").write_bytes(organiser.screenshot(full_page=True))

                # --- a newcomer signs up (anyone organises on the demo's site), registers a bot
                # they never run, and starts a ladder of it and three demo bots: it waits, and says so
                newcomer = browser.new_page(viewport={"width": 1280, "height": 900})
                newcomer.set_default_timeout(30_000)
                newcomer.goto(f"{site}/accounts/signup/")
                newcomer.fill("#id_username", "newbie")
                newcomer.fill("#id_password1", "Kettle-drum-4411")
                newcomer.fill("#id_password2", "Kettle-drum-4411")
                newcomer.click("main button[type=submit]")
                newcomer.wait_for_url("**/me/bots/new/")
                newcomer.fill("#id_name", "newbie-bot")
                newcomer.click("main button[type=submit]")
                newcomer.wait_for_selector("#bot-token")
                idle = create_from_the_form(newcomer, site, name="Newbie ladder", fmt="ladder",
                                            bots=["newbie-bot", *demo_bots[:3]])
                waiting = wait_for(
                    lambda: (p := fetch_json(f"{site}/tournaments/{idle}/progress.json"))["activity"] == "waiting" and p,
                    timeout=120, what="the idle ladder's reason", demo=demo, out=out,
                )
                assert waiting["activity_label"] == "Waiting" and waiting["games_done"] == 0
                assert waiting["reason"].startswith("Waiting for bots: ") and "1 not connected" in waiting["reason"]
                newcomer.goto(f"{site}/tournaments/{idle}/")
                newcomer.wait_for_selector("#status-reason >> text=1 not connected")
                assert newcomer.text_content("#t-status") == "Waiting"
                newcomer.goto(f"{site}/organise/")
                row = newcomer.text_content(f"tr:has(a[href='/tournaments/{idle}/'])")
                assert "Waiting" in row and "Running" not in row and "not scheduled" not in row
                (ARTIFACTS / "demo-ladder-waiting.png").write_bytes(newcomer.screenshot(full_page=True))

                # the organiser stops the first ladder from its page
                organiser.goto(f"{site}/tournaments/{ladder}/")
                organiser.once("dialog", lambda dialog: dialog.accept())
                organiser.click("#organiser-actions >> text=Cancel")
                organiser.wait_for_selector(".messages >> text=Tournament cancelled")
            finally:
                browser.close()

        # --- a round robin scheduled a few seconds ahead (through the API) starts on its own
        from django.contrib.auth import get_user_model

        _, token = api_token_create(user=get_user_model().objects.get(username="demo-organiser"), name="e2e")
        api = f"{site}/api/v1"
        fetch_json(f"{api}/tournaments/", token=token, body={
            "name": "Scheduled cup", "slug": "scheduled-cup", "format": "round_robin", "games_per_table": 4})
        for bot in demo_bots:
            fetch_json(f"{api}/tournaments/scheduled-cup/entrants/", token=token, body={"bot": bot})
        from django.utils import timezone

        starts_at = timezone.now() + timedelta(seconds=8)
        started = fetch_json(f"{api}/tournaments/scheduled-cup/start/", token=token,
                             body={"starts_at": starts_at.isoformat()})
        assert (started["status"], started["activity"]) == ("scheduled", "scheduled")
        assert started["status_reason"].startswith("Starts at ")
        finished = wait_for(
            lambda: (p := fetch_json(f"{api}/tournaments/scheduled-cup/progress/"))["status"] == "finished" and p,
            timeout=180, what="the scheduled round robin to start and finish", demo=demo, out=out,
        )
        assert finished["games_done"] == 4
        scheduled = Tournament.objects.get(slug="scheduled-cup")
        assert scheduled.started_at >= starts_at  # started by the tick, not before its time
        assert Tournament.objects.get(slug=ladder).ticked_at is not None
        assert "tournaments_tick" in (tmp_path / "logs" / "beat.log").read_text()
    finally:
        if demo.poll() is None:
            os.killpg(demo.pid, signal.SIGINT)
            assert demo.wait(timeout=60) == 0, out.rest()
    deadline = time.monotonic() + 20
    while marked_pids(marker) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert marked_pids(marker) == []
