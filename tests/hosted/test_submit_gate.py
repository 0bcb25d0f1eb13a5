"""`tienlen-bot submit --wait` on a bot with the gate on, against the live site: the CLI (a
subprocess, as an author runs it) says after validation that the version now plays
duplicate sets against its predecessor before it is promoted, then follows the gate to the
SPRT's verdict and whether the version was promoted; past --timeout it says where to see
it. The site's side (validation, the gate's games) is driven through the services as a
runner would end them (tests/hosted/test_gate_e2e.py plays a real gate in the sandbox).
The gate's state in the API (`outcome`, `promoted`, `mode`) is the owner's only."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from rest_framework.test import APIClient

from tests.hosted.gate_helpers import validated
from tests.waits import wait_until
from tournaments.models import BotSubmission, Gate
from tournaments.services import hosting
from tournaments.services.accounts import api_token_create, bot_create

pytestmark = [pytest.mark.django_db(transaction=True)]

ROOT = Path(__file__).resolve().parents[2]
BOT = "from bots_sdk.examples import GreedyBot\n\n\nclass Greedy(GreedyBot):\n    pass\n"


class Cli:
    """`tienlen-bot submit PATH --bot NAME --wait` running; its output read line by line."""

    def __init__(self, site: str, token: str, path: Path, bot: str, timeout: float) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "bots_sdk.cli", "submit", str(path), "--bot", bot, "--site", site,
             "--wait", "--timeout", str(timeout)],
            env={"TIENLEN_API_TOKEN": token, "PATH": "/usr/bin:/bin", "PYTHONUNBUFFERED": "1",
                 "PYTHONPATH": os.environ.get("PYTHONPATH", "")},
            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.lines: list[str] = []

    def until(self, found: Callable[[str], bool], timeout: float = 60) -> str:
        """Read its output until a line satisfies `found` (that line)."""
        deadline = time.monotonic() + timeout
        assert self.proc.stdout is not None
        while time.monotonic() < deadline:
            line = self.proc.stdout.readline()
            if not line:
                break
            self.lines.append(line.rstrip("\n"))
            if found(line):
                return line
        raise AssertionError(f"not printed: {self.lines}; stderr: {self.finish()[1]}")

    def finish(self, timeout: float = 60) -> tuple[int, str]:
        """Its exit status and its stderr; the rest of its stdout goes to self.lines."""
        out, err = self.proc.communicate(timeout=timeout)
        self.lines += out.splitlines()
        return self.proc.returncode, err


@pytest.fixture
def author(db):
    owner = User.objects.create_user("gate-cli-author")
    bot, _ = bot_create(owner=owner, name="gated-cli")
    validated(bot, owner)  # s1: ready, active (nothing to gate against yet)
    return owner, bot, api_token_create(user=owner)[1]


@pytest.fixture
def code(tmp_path) -> Path:
    path = tmp_path / "bot.py"
    path.write_text(BOT)
    return path


def submitted(bot, seq: int) -> BotSubmission:
    wait_until(lambda: BotSubmission.objects.filter(bot=bot, seq=seq).exists(), 60, f"s{seq} submitted")
    return BotSubmission.objects.get(bot=bot, seq=seq)


def validate(submission: BotSubmission) -> None:
    assert hosting.submission_validation_begin(submission_id=submission.pk)
    hosting.submission_validation_finish(submission_id=submission.pk, ok=True, log="ready for a ladder", detail="")


def play_gate(submission: BotSubmission, verdict: str, score: float) -> None:
    assert hosting.gate_begin(submission_id=submission.pk) is not None
    hosting.gate_finish(submission_id=submission.pk, result=hosting.GateResult(
        True, 60, 30, score, 0.31, verdict, f"SPRT: {verdict} after 30 sets", "== s2 (new)\n== s1 (predecessor)"))


def gate_reached(author, code: Path, site: str, gate: str, *, timeout: int = 120) -> tuple[Cli, BotSubmission, str]:
    """`submit --wait` of s2 with the bot's gate set to `gate`, followed through its
    validation to the line where the CLI says the gate began: the CLI, s2 and that line."""
    owner, bot, token = author
    hosting.bot_gate_set(bot=bot, user=owner, gate=gate)
    cli = Cli(site, token, code, bot.name, timeout=timeout)
    cli.until(lambda line: line.startswith("submitted gated-cli s2"))
    s2 = submitted(bot, 2)
    validate(s2)
    return cli, s2, cli.until(lambda line: line.startswith("gate ("))


def test_submit_wait_follows_the_gate_to_its_verdict_and_the_promotion(author, code, live_server) -> None:
    _, bot, _ = author
    cli, s2, told = gate_reached(author, code, live_server.url, Gate.AUTO)
    assert "s2 now plays duplicate sets against its predecessor s1 before it is promoted" in told
    assert "auto: promoted when its gate is over unless the verdict is worse" in told
    bot.refresh_from_db()
    assert bot.active_submission.seq == 1  # the predecessor plays while the gate does
    time.sleep(1.5)  # the CLI polls the pending gate at least once
    play_gate(s2, "better", 0.82)
    status, err = cli.finish()
    assert status == 0, (cli.lines, err)
    assert "validated gated-cli s2" in "\n".join(cli.lines)
    assert "gate done: better than s1 (SPRT, 30 duplicate sets, 60 games, +0.82 points a game (± 0.31))" in cli.lines
    assert "promoted: s2 is now gated-cli's active version" in cli.lines
    bot.refresh_from_db()
    assert bot.active_submission.seq == 2


def test_a_worse_version_is_kept_back_and_the_cli_says_so(author, code, live_server) -> None:
    _, bot, _ = author
    cli, s2, _ = gate_reached(author, code, live_server.url, Gate.AUTO)
    play_gate(s2, "worse", -0.9)
    status, err = cli.finish()
    assert status == 1, (cli.lines, err)
    assert "gate done: worse than s1 (SPRT, 30 duplicate sets, 60 games, -0.90 points a game (± 0.31))" in cli.lines
    assert any(line.startswith("not promoted: s1 keeps playing") for line in cli.lines), cli.lines
    bot.refresh_from_db()
    assert bot.active_submission.seq == 1


def test_a_gate_longer_than_the_timeout_says_where_to_see_it(author, code, live_server) -> None:
    _, _, token = author
    cli, s2, told = gate_reached(author, code, live_server.url, Gate.MANUAL, timeout=6)
    assert "manual: you promote it (or not) when its gate is over" in told
    status, err = cli.finish()  # nothing plays the gate: the timeout passes
    assert status == 2, (cli.lines, err)
    late = cli.lines[-1]
    assert late.startswith("the gate of s2 is still queued after 6 s; its verdict and whether it is promoted")
    assert f"{live_server.url}/bots/gated-cli/" in late and "/api/v1/bots/gated-cli/versions/2/" in late

    # where it says: the owner finds the gate there once it is over, awaiting promotion
    play_gate(s2, "better", 0.7)
    mine = APIClient()
    mine.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    gate = mine.get("/api/v1/bots/gated-cli/versions/2/").json()["gate"]
    assert gate["status"] == "done" and gate["verdict"] == "better" and gate["against"] == "s1"
    assert gate["mode"] == "manual" and gate["outcome"] == "awaiting_promotion" and gate["promoted"] is False
    listed = {v["seq"]: v["gate"] for v in mine.get("/api/v1/bots/gated-cli/versions/").json()}
    assert listed[2]["outcome"] == "awaiting_promotion" and listed[1] is None
    promoted = mine.post("/api/v1/bots/gated-cli/versions/2/promote/").json()
    assert promoted["active"] and promoted["gate"]["outcome"] == "promoted" and promoted["gate"]["promoted"]
    # nobody else sees it: not the gate, not that there is one
    rival = APIClient()
    rival.credentials(HTTP_AUTHORIZATION=f"Token {api_token_create(user=User.objects.create_user('rival'))[1]}")
    for url in ("/api/v1/bots/gated-cli/versions/2/", "/api/v1/bots/gated-cli/versions/"):
        theirs = rival.get(url)
        assert theirs.status_code == 404 and b"better" not in theirs.content and b"gate" not in theirs.content
