"""Deal commitments: what the platform publishes before a deal is played (docs/fair-play.md).

Before play, the platform publishes ``commitment = SHA-256("tienlen-deal-commit-v1\\n" +
salt + "\\n" + seed)`` (UTF-8, lower-case hex) for every deal, with a public random salt per
tournament; the seed itself stays secret until the deal has been played at every table.
After the reveal anyone can check the seed against the commitment, the dealt hands against
the seed (``tienlen-deal-v1``, docs/rules.md §10) and the moves against the result
(``tienlen-bot verify-replay``, which `verify` implements). The commitment is the standard
library only, so the scheme is a few lines in any language.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import sys
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bots_sdk.rules.record import REPLAY_SCHEMA

COMMIT_SCHEME = "tienlen-deal-commit-v1"
DEAL_ALGORITHM = "tienlen-deal-v1"


def deal_commitment(salt: str, seed: str) -> str:
    """The published commitment to a deal seed under a tournament's salt."""
    if not isinstance(salt, str) or not isinstance(seed, str):
        raise ValueError("salt and seed are strings")
    return hashlib.sha256((COMMIT_SCHEME + "\n" + salt + "\n" + seed).encode("utf-8")).hexdigest()


def commitment_matches(commitment: str, salt: str, seed: str) -> bool:
    """Whether `seed` opens `commitment` (constant-time comparison)."""
    return hmac.compare_digest(deal_commitment(salt, seed), str(commitment).lower())


# ------------------------------------------------------------------ verification

PROOF_SCHEMA = "tienlen.deal-proof/1"
_GAME_PATH = re.compile(r"^(?P<prefix>.*?)/(?:api/v1/)?games/(?P<id>\d+)(?:/.*)?$")


class VerifyInputError(ValueError):
    """The document cannot be read or is not something verify-replay knows."""


class DealWithheld(VerifyInputError):
    """The platform withholds this game's deal: it is still being played elsewhere."""


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool | None  # None: not checked (and why is in `detail`)
    detail: str


@dataclass
class Report:
    source: str
    checks: list[Check] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(c.ok is not False for c in self.checks) and any(c.ok for c in self.checks)

    def add(self, name: str, ok: bool | None, detail: str) -> None:
        self.checks.append(Check(name, ok, detail))

    def text(self) -> str:
        mark = {True: "ok  ", False: "FAIL", None: "skip"}
        lines = [f"{self.source}"]
        lines += [f"  {mark[c.ok]} {c.name}: {c.detail}" for c in self.checks]
        lines.append("verified: every check passed" if self.ok else "NOT verified")
        return "\n".join(lines)


def proof_url_of(url: str) -> str:
    """The platform's proof document for a game URL (the page, the API game, its replay)."""
    parts = urllib.parse.urlsplit(url)
    match = _GAME_PATH.match(parts.path)
    if not match:
        return url
    path = f"{match['prefix']}/api/v1/games/{match['id']}/proof/"
    return urllib.parse.urlunsplit((parts.scheme, parts.netloc, path, "", ""))


def fetch_json(url: str, *, timeout: float = 30.0) -> Any:
    """GET a JSON document (VerifyInputError / DealWithheld with the server's reason)."""
    request = urllib.request.Request(url, headers={"Accept": "application/json", "User-Agent": "tienlen-bot"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            body = response.read()
    except urllib.error.HTTPError as exc:
        detail = _error_detail(exc.read())
        if exc.code == 403 and "withheld" in detail:
            raise DealWithheld(detail) from None
        raise VerifyInputError(f"{url}: HTTP {exc.code} {detail}".rstrip()) from None
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise VerifyInputError(f"{url}: cannot fetch it ({reason})") from None
    try:
        return json.loads(body)
    except ValueError:
        raise VerifyInputError(f"{url}: the answer is not JSON") from None


def _error_detail(body: bytes) -> str:
    try:
        doc = json.loads(body)
    except ValueError:
        return body.decode("utf-8", "replace").strip()[:300]
    return str(doc.get("detail", doc)) if isinstance(doc, dict) else str(doc)


def load(source: str) -> tuple[Any, str]:
    """The document at a URL (a game URL means its proof) or in a file ("-": stdin)."""
    if source.startswith(("http://", "https://")):
        url = proof_url_of(source)
        doc = fetch_json(url)
        if isinstance(doc, dict) and isinstance(doc.get("deal"), dict) and doc["deal"].get("proof_url") \
                and doc.get("schema") != PROOF_SCHEMA:
            url = doc["deal"]["proof_url"]  # a game document: follow it to its proof
            doc = fetch_json(url)
        return doc, url
    if "://" in source:
        raise VerifyInputError(f"{source}: only http:// and https:// URLs can be fetched")
    try:
        text = sys.stdin.read() if source == "-" else Path(source).read_text(encoding="utf-8")
    except OSError as exc:
        raise VerifyInputError(f"{source}: {exc.strerror or exc}") from None
    try:
        return json.loads(text), source
    except ValueError as exc:
        raise VerifyInputError(f"{source} is not JSON: {exc}") from None


def verify(doc: Any, *, source: str = "", commitment: str | None = None, salt: str | None = None) -> Report:
    """Check a proof document (tienlen.deal-proof/1) or a bare replay (tienlen.replay/1):

    1. the seed opens the published commitment under the tournament's salt;
    2. the replay was dealt from that seed (tienlen-deal-v1, every hand);
    3. re-simulating every move gives the replay's stored result;
    4. that result is the one the platform recorded for the game.
    """
    if not isinstance(doc, dict):
        raise VerifyInputError(f"{source or 'the document'}: expected a JSON object")
    report = Report(source or "document")
    if doc.get("schema") == PROOF_SCHEMA:
        deal, replay, game = doc.get("deal"), doc.get("replay"), doc.get("game")
        if not isinstance(deal, dict) or not isinstance(replay, dict) or not isinstance(game, dict):
            raise VerifyInputError(f"{report.source}: a {PROOF_SCHEMA} document has deal, game and replay objects")
        if deal.get("seed") is None:
            raise DealWithheld(f"{report.source}: the deal's seed is not revealed yet")
        seed = str(deal["seed"])
        commitment = commitment or deal.get("commitment")
        salt = salt if salt is not None else deal.get("salt")
        report.source = f"{report.source} (game {game.get('id')}, deal {deal.get('group')}/{deal.get('index')})"
    elif doc.get("schema") == REPLAY_SCHEMA:
        replay, game = doc, None
        named = replay.get("seed")
        if not isinstance(named, str):
            raise VerifyInputError(f"{report.source}: this replay names no deal seed (a hand-made position?)")
        seed = named
    elif isinstance(doc.get("detail"), str) and "withheld" in doc["detail"]:
        raise DealWithheld(doc["detail"])
    else:
        raise VerifyInputError(
            f"{report.source}: not a {PROOF_SCHEMA} document nor a {REPLAY_SCHEMA} replay "
            f"(schema {doc.get('schema')!r})")
    from bots_sdk.rules.replay import ReplayError, replay_read

    try:
        replay = replay_read(replay)
    except ReplayError as exc:
        raise VerifyInputError(f"{report.source}: {exc}") from None
    if commitment and salt is not None:
        ok = commitment_matches(commitment, salt, seed)
        report.add("commitment", ok, (
            f"the seed opens the commitment {commitment} ({COMMIT_SCHEME})" if ok else
            f"{COMMIT_SCHEME} of the seed is {deal_commitment(salt, seed)}, "
            f"but the published commitment is {commitment}"))
    else:
        report.add("commitment", None, "not checked: give --commitment and --salt, or verify the game's URL")
    if replay.get("seed") != seed:
        report.add("seed", False, f"the replay names seed {replay.get('seed')!r}, the deal's seed is {seed!r}")
    else:
        report.add("seed", True, f"the replay was dealt from seed {seed}")
    _check_hands(report, replay, seed)
    _check_moves(report, replay)
    if game is not None:
        _check_recorded(report, replay, game)
    return report


def _check_hands(report: Report, replay: dict[str, Any], seed: str) -> None:
    from bots_sdk.rules.deal import deal

    players = replay.get("players")
    hands = replay.get("hands")
    if type(players) is not int or not 2 <= players <= 4 or not isinstance(hands, list) or len(hands) != players:
        report.add("hands", False, "the replay's players and hands do not match")
        return
    dealt = [{str(c) for c in hand} for hand in deal(seed, players)]
    for seat, (theirs, mine) in enumerate(zip(hands, dealt, strict=True)):
        got = {str(c) for c in theirs} if isinstance(theirs, list) else set()
        if got != mine or len(theirs) != len(mine):
            extra, missing = sorted(got - mine), sorted(mine - got)
            report.add("hands", False, f"seat {seat} was not dealt from the seed ({DEAL_ALGORITHM}): "
                                       f"holds {extra or '-'} instead of {missing or '-'}")
            return
    report.add("hands", True, f"all {players} hands are {DEAL_ALGORITHM}(seed, {players})")


def _check_moves(report: Report, replay: dict[str, Any]) -> None:
    from bots_sdk.rules import replay_game

    try:
        game = replay_game(replay, check=True)
    except (ValueError, KeyError, TypeError) as exc:
        report.add("moves", False, str(exc))
        return
    if replay.get("result") is None:
        report.add("moves", None, "the replay stores no result to compare")
        return
    report.add("moves", True, f"{len(replay.get('moves', []))} moves re-simulated to the stored result "
                              f"(points {list(game.points)})")


def _check_recorded(report: Report, replay: dict[str, Any], game: dict[str, Any]) -> None:
    result = replay.get("result") or {}
    for key in ("points", "finishing_order"):
        if key in game and game[key] != result.get(key):
            report.add("recorded result", False, f"the platform recorded {key} {game[key]}, the replay says {result.get(key)}")
            return
    report.add("recorded result", True, f"the platform's record matches (points {game.get('points')})")
