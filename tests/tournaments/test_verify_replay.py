"""`tienlen-bot verify-replay` and docs/fair-play.md: a revealed game verifies, and every
kind of tampering — the seed, a hand, a move, the recorded result, the commitment — is
caught and named. The document's worked example and its JavaScript check are run too."""

from __future__ import annotations

import copy
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from bots_sdk import fairplay
from bots_sdk.cli import main as cli
from tests.tournaments.conftest import running_round_robin
from tests.tournaments.local_play import table_play_locally
from tournaments.models import Game

ROOT = Path(__file__).resolve().parents[2]
DOC = (ROOT / "docs" / "fair-play.md").read_text()
TIENLEN_BOT = [sys.executable, "-m", "bots_sdk.cli"]


@pytest.fixture
def proof(db, organiser, bots, client) -> dict:
    """The proof of a real game: dealt from its committed seed, played, recorded, revealed."""
    t = running_round_robin(organiser, bots[:4], seats_per_table=4, duplicate_sets=1)
    table = t.tables.get()
    table_play_locally(table_id=table.pk, games=2)
    game = Game.objects.get(table=table, index=1)
    return client.get(f"/api/v1/games/{game.pk}/proof/").json()


def run(tmp_path: Path, doc: dict, *args: str, capsys) -> tuple[int, str]:
    path = tmp_path / "proof.json"
    path.write_text(json.dumps(doc))
    code = cli(["verify-replay", str(path), *args])
    out = capsys.readouterr()
    return code, out.out + out.err


def test_a_revealed_game_verifies(proof, tmp_path, capsys) -> None:
    code, out = run(tmp_path, proof, capsys=capsys)
    assert code == 0, out
    for name in ("commitment", "seed", "hands", "moves", "recorded result"):
        assert re.search(rf"^  ok   {name}: ", out, re.M), name
    assert out.rstrip().endswith("verified: every check passed")


def tampered(proof: dict, how: str) -> dict:
    doc = copy.deepcopy(proof)
    replay = doc["replay"]
    if how == "seed":  # the platform reveals another seed than the one it committed to
        doc["deal"]["seed"] = doc["deal"]["seed"][:-1] + ("0" if doc["deal"]["seed"][-1] != "0" else "1")
        replay["seed"] = doc["deal"]["seed"]
    elif how == "hand":  # two seats' cards swapped: no longer the seed's deal
        a, b = replay["hands"][0], replay["hands"][1]
        a[0], b[0] = b[0], a[0]
    elif how == "move":  # a recorded move changed
        move = next(m for m in replay["moves"] if m.get("cards"))
        move["cards"] = ["2H"] if move["cards"] != ["2H"] else ["3S"]
    elif how == "result":  # the platform recorded other points than the game produced
        doc["game"]["points"] = list(reversed(doc["game"]["points"]))
        if doc["game"]["points"] == proof["game"]["points"]:
            doc["game"]["points"][0] += 1
    elif how == "commitment":
        doc["deal"]["commitment"] = "0" * 64
    return doc


@pytest.mark.parametrize(("how", "failing"), [
    ("seed", "commitment"), ("hand", "hands"), ("move", "moves"), ("result", "recorded result"),
    ("commitment", "commitment"),
])
def test_every_kind_of_tampering_is_caught(proof, tmp_path, capsys, how, failing) -> None:
    code, out = run(tmp_path, tampered(proof, how), capsys=capsys)
    assert code == 1, out
    assert re.search(rf"^  FAIL {failing}: ", out, re.M), out
    assert out.rstrip().endswith("NOT verified")


def test_a_bare_replay_checks_hands_and_moves_and_the_commitment_when_given(proof, tmp_path, capsys) -> None:
    code, out = run(tmp_path, proof["replay"], capsys=capsys)
    assert code == 0 and "skip commitment: not checked" in out
    deal = proof["deal"]
    code, out = run(tmp_path, proof["replay"], "--commitment", deal["commitment"], "--salt", deal["salt"], capsys=capsys)
    assert code == 0 and "ok   commitment" in out
    code, out = run(tmp_path, proof["replay"], "--commitment", deal["commitment"], "--salt", "other", capsys=capsys)
    assert code == 1 and "FAIL commitment" in out
    code, out = run(tmp_path, proof["replay"], "--salt", "x", capsys=capsys)
    assert code == 2 and "--commitment and --salt go together" in out


@pytest.mark.parametrize(("content", "message"), [
    ("not json", "is not JSON"),
    ("[1, 2]", "expected a JSON object"),
    ('{"schema": "something/else"}', "not a tienlen.deal-proof/1 document nor a tienlen.replay/1 replay"),
    ('{"schema": "tienlen.replay/1", "seed": null}', "names no deal seed"),
])
def test_unreadable_input_is_exit_2_with_the_reason(tmp_path, capsys, content, message) -> None:
    path = tmp_path / "x.json"
    path.write_text(content)
    assert cli(["verify-replay", str(path)]) == 2
    assert message in capsys.readouterr().err
    assert cli(["verify-replay", str(tmp_path / "missing.json")]) == 2
    assert "No such file" in capsys.readouterr().err
    assert cli(["verify-replay", "ftp://example.org/x"]) == 2


@pytest.mark.parametrize(("where", "message"), [
    ("proof", "replay hands do not match its number of players (4)"),
    ("bare", "is malformed (no seat of the game)"),
])
def test_a_malformed_replay_is_exit_2_with_the_readers_message(proof, tmp_path, capsys, where, message) -> None:
    """Not a failed check but an unreadable input: the engine's replay reader says why."""
    doc = copy.deepcopy(proof)
    if where == "proof":
        doc["replay"]["hands"].pop()
    else:
        doc = doc["replay"]
        doc["moves"].append({"cards": ["3S"]})  # appended: an instant win has no move
    code, out = run(tmp_path, doc, capsys=capsys)
    assert code == 2, out
    assert f"tienlen-bot: error: {tmp_path / 'proof.json'}" in out and message in out


def test_a_withheld_proof_is_exit_3(tmp_path, capsys) -> None:
    doc = {"detail": "The replay of game 7 is withheld until this deal has been played at every table."}
    path = tmp_path / "w.json"
    path.write_text(json.dumps(doc))
    assert cli(["verify-replay", str(path)]) == 3
    assert "not yet: The replay of game 7 is withheld" in capsys.readouterr().err


@pytest.mark.parametrize(("url", "proof_url"), [
    ("https://x.org/games/12/", "https://x.org/api/v1/games/12/proof/"),
    ("https://x.org/games/12/replay.json", "https://x.org/api/v1/games/12/proof/"),
    ("http://h:8000/api/v1/games/12/", "http://h:8000/api/v1/games/12/proof/"),
    ("http://h:8000/api/v1/games/12/replay/?x=1", "http://h:8000/api/v1/games/12/proof/"),
    ("https://x.org/sub/games/3/proof/", "https://x.org/sub/api/v1/games/3/proof/"),
    ("https://x.org/other/", "https://x.org/other/"),
])
def test_game_urls_lead_to_their_proof(url, proof_url) -> None:
    assert fairplay.proof_url_of(url) == proof_url


# --- docs/fair-play.md -----------------------------------------------------------------------


def test_the_documented_worked_example_is_true() -> None:
    from bots_sdk.rules.deal import deal

    salt = re.search(r"Tournament salt `([0-9a-f]{32})`", DOC)[1]
    seed = re.search(r"revealed with the seed\s+`([0-9a-f]{32})`", DOC)[1]
    commitment = re.search(r"with the commitment\s+```\s+([0-9a-f]{64})\s+```", DOC)[1]
    assert fairplay.deal_commitment(salt, seed) == commitment
    assert f"`{commitment[:8]}…{commitment[-8:]}`" in DOC
    wrong = fairplay.deal_commitment(salt, seed + "x")
    assert f"`{wrong[:8]}…{wrong[-8:]}`" in DOC
    rows = re.findall(r"^  \| (\d) \| `([^`]+)` \|$", DOC.split("## A worked example")[1], re.M)
    assert [(int(s), h) for s, h in rows] == [(s, " ".join(map(str, hand))) for s, hand in enumerate(deal(seed, 4))]
    # and the documented formula is the code's
    assert '"tienlen-deal-commit-v1" + "\\n" + salt + "\\n" + seed' in DOC


@pytest.mark.skipif(shutil.which("node") is None, reason="Node.js is not installed")
def test_the_documented_javascript_check_agrees(proof, tmp_path) -> None:
    script = re.search(r"```js\n(.*?)```", DOC, re.S)[1]
    (tmp_path / "verify-deal.mjs").write_text(script)
    good, bad = tmp_path / "good.json", tmp_path / "bad.json"
    good.write_text(json.dumps(proof))
    bad.write_text(json.dumps(tampered(proof, "hand")))
    ok = subprocess.run(["node", "verify-deal.mjs", str(good)], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert ok.returncode == 0 and ok.stdout.strip() == "commitment ok, hands ok", ok.stderr
    ko = subprocess.run(["node", "verify-deal.mjs", str(bad)], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert ko.returncode == 1 and ko.stdout.strip() == "commitment ok, hands FAIL"


# --- against a running site -------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_the_one_liner_against_a_live_site(live_server, organiser, house_bots) -> None:
    # Field duplicates among house bots: the tables of a round share their deals.
    t = running_round_robin(organiser, house_bots, seats_per_table=4, duplicate_sets=1)
    tables = list(t.tables.order_by("number"))
    a = tables[0]
    b = next(x for x in tables[1:] if x.deal_group == a.deal_group)
    table_play_locally(table_id=a.pk, games=1)
    game = Game.objects.get(table=a, index=0)

    def verify(url: str) -> subprocess.CompletedProcess:
        return subprocess.run([*TIENLEN_BOT, "verify-replay", url], capture_output=True, text=True, timeout=120)

    sealed = verify(f"{live_server.url}/games/{game.pk}/")
    assert sealed.returncode == 3, sealed.stderr
    assert "withheld until this deal has been played at every table" in sealed.stderr
    table_play_locally(table_id=b.pk, games=1)
    for url in (f"{live_server.url}/games/{game.pk}/", f"{live_server.url}/api/v1/games/{game.pk}/"):
        done = verify(url)
        assert done.returncode == 0, done.stdout + done.stderr
        assert "verified: every check passed" in done.stdout
    # The API's `verify` field is the command itself.
    import urllib.request

    with urllib.request.urlopen(f"{live_server.url}/api/v1/games/{game.pk}/") as response:
        command = json.loads(response.read())["deal"]["verify"]
    assert command.startswith("tienlen-bot verify-replay http")
    assert verify(command.split()[-1]).returncode == 0
    missing = verify(f"{live_server.url}/api/v1/games/999999/")
    assert missing.returncode == 2 and "HTTP 404" in missing.stderr
