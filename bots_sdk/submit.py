"""`tienlen-bot submit PATH --bot NAME`: hand a bot's code to the platform, which runs it
itself, sandboxed (docs/hosting.md). PATH is a bot file (`bot.py`, `bot.js`) or a folder
holding one; it is zipped (hidden files and `__pycache__` left out; a symlink is sent as
one, so the site says it refuses it) and sent with the author's API token
(`TIENLEN_API_TOKEN`, from the site's tokens page) to `POST /api/v1/bots/NAME/versions/`.
Prints the new version and its status; `--wait` follows its validation to the end and
prints its log; `--hosted` then switches the bot to hosted (if the version is ready). When
the bot has the gate on, `--wait` then follows the gate too: the version plays duplicate
sets against its predecessor, and the SPRT's verdict and whether it was promoted are
printed (or, past `--timeout`, where to see them; exit status 2)."""

from __future__ import annotations

import argparse
import io
import json
import os
import stat
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
import zipfile
from pathlib import Path
from typing import Any

DONE = ("ready", "failed")
POLL_S = 1.0


class SubmitError(Exception):
    """What went wrong, for the author (the site's own message when it answered)."""


def pack(path: Path) -> bytes:
    """A zip of a bot file (as itself, at the top) or of a folder's files."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as zf:
        files = [path] if path.is_file() else sorted(path.rglob("*"))
        for file in files:
            rel = Path(file.name) if file == path else file.relative_to(path)
            if any(part.startswith(".") or part == "__pycache__" for part in rel.parts):
                continue
            info = zipfile.ZipInfo(rel.as_posix())
            if file.is_symlink():
                info.external_attr = (stat.S_IFLNK | 0o777) << 16
                zf.writestr(info, os.readlink(file))
            elif file.is_file():
                info.external_attr = (stat.S_IFREG | 0o644) << 16
                info.compress_type = zipfile.ZIP_DEFLATED
                zf.writestr(info, file.read_bytes())
    return buffer.getvalue()


def guess_runtime(path: Path) -> str:
    if path.is_file():
        return "node20" if path.suffix in (".js", ".mjs", ".cjs") else "python3.11"
    return "node20" if (path / "bot.js").is_file() and not (path / "bot.py").is_file() else "python3.11"


def sdk_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    for name in ("tienlen-bot-sdk", "tienlen-platform"):
        try:
            return version(name)
        except PackageNotFoundError:
            continue
    return ""


class Site:
    def __init__(self, base: str, token: str) -> None:
        self.base = base.rstrip("/") + "/api/v1/"
        self.token = token

    def call(self, method: str, path: str, body: bytes | None = None, content_type: str = "application/json",
             query: dict[str, str] | None = None) -> Any:
        url = self.base + path + ("?" + urllib.parse.urlencode(query) if query else "")
        request = urllib.request.Request(url, data=body, method=method, headers={
            "Authorization": f"Token {self.token}", "Content-Type": content_type, "Accept": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                return json.loads(response.read() or b"null")
        except urllib.error.HTTPError as exc:
            raise SubmitError(f"{exc.code}: {_message(exc.read())}") from exc
        except urllib.error.URLError as exc:
            raise SubmitError(f"cannot reach {self.base}: {exc.reason}") from exc


def _message(body: bytes) -> str:
    try:
        data = json.loads(body)
    except ValueError:
        return body.decode("utf-8", "replace")[:500]
    if isinstance(data, dict):
        return "; ".join(f"{k}: {' '.join(v) if isinstance(v, list) else v}" if k != "detail" else str(v)
                         for k, v in data.items())
    return str(data)


def _line(version: dict[str, Any]) -> str:
    detail = f" — {version['detail']}" if version.get("detail") else ""
    return f"{version['version']} ({version['sha256'][:12]}, {version['size']} bytes): {version['status']}{detail}"


def cmd_submit(args: argparse.Namespace) -> int:
    token = os.environ.get("TIENLEN_API_TOKEN", "")
    if not token:
        raise SubmitError("set TIENLEN_API_TOKEN to one of your API tokens (the site's tokens page issues them)")
    path = Path(args.path)
    if not path.exists():
        raise SubmitError(f"{path}: no such file or folder")
    runtime = args.runtime or guess_runtime(path)
    site = Site(args.site, token)
    name = urllib.parse.quote(args.bot, safe="")
    version = site.call("POST", f"bots/{name}/versions/", pack(path), "application/zip",
                        {"runtime": runtime, "sdk_version": sdk_version()})
    print(f"submitted {args.bot} {_line(version)}")
    if not (args.wait or args.hosted):
        return 0
    deadline = time.monotonic() + args.timeout
    while version["status"] not in DONE:
        if time.monotonic() > deadline:
            raise SubmitError(f"still {version['status']} after {args.timeout:.0f} s (see the bot's page)")
        time.sleep(POLL_S)
        version = site.call("GET", f"bots/{name}/versions/{version['seq']}/")
    print(f"validated {args.bot} {_line(version)}")
    if version.get("validation_log"):
        print(version["validation_log"], file=sys.stderr if version["status"] == "failed" else sys.stdout)
    if version["status"] != "ready":
        return 1
    if args.hosted:
        bot = site.call("POST", f"bots/{name}/hosting/", json.dumps({"hosting": "hosted"}).encode())
        print(f"{args.bot} is {bot['hosting']}, playing {bot['active_version']}")
    if version.get("gate"):
        return follow_gate(site, args, name, version, deadline)
    return 0


#: How --wait ends on a gated version: 0 when it is promoted or waits for the owner's
#: promotion (the manual gate), 1 when the gate kept it back or could not be played out.
GATE_EXIT = {"promoted": 0, "awaiting_promotion": 0, "superseded": 1, "not_promoted": 1}


def follow_gate(site: Site, args: argparse.Namespace, name: str, version: dict[str, Any], deadline: float) -> int:
    """The bot has the gate on: the ready version first plays duplicate sets against its
    predecessor (docs/hosting.md, "The gate"); follow that to its verdict and promotion."""
    gate = version["gate"]
    print(f"gate ({gate['mode']}: {gate['mode_means']}): {version['version']} now plays duplicate sets "
          f"against its predecessor {gate['against']} before it is promoted; {gate['against']} keeps "
          f"playing meanwhile")
    where = (f"{args.site.rstrip('/')}/bots/{name}/ (the versions table), or "
             f"GET {site.base}bots/{name}/versions/{version['seq']}/ (its field \"gate\")")
    while gate["outcome"] == "pending":
        if time.monotonic() > deadline:
            print(f"the gate of {version['version']} is still {gate['status']} after {args.timeout:.0f} s; "
                  f"its verdict and whether it is promoted will be on {where}")
            return 2
        time.sleep(POLL_S)
        version = site.call("GET", f"bots/{name}/versions/{version['seq']}/")
        gate = version["gate"]
    if gate["status"] == "failed":
        print(f"gate failed: {gate['detail'] or 'it could not be played out'}; nothing was promoted "
              f"({gate['against']} keeps playing). Its log is on {where}", file=sys.stderr)
        return 1
    verdict = (gate["verdict"] or "").replace("_", " ")
    score = (f", {gate['score']:+.2f} points a game (± {gate['half_width']:.2f})"
             if gate["score"] is not None and gate["half_width"] is not None else "")
    print(f"gate done: {verdict} than {gate['against']} (SPRT, {gate['duplicate_sets']} duplicate sets, "
          f"{gate['games']} games{score})" if verdict in ("better", "worse") else
          f"gate done: {verdict} against {gate['against']} (SPRT, {gate['duplicate_sets']} duplicate sets, "
          f"{gate['games']} games{score})")
    outcome = gate["outcome"]
    if outcome == "promoted":
        print(f"promoted: {version['version']} is now {args.bot}'s active version")
    elif outcome == "awaiting_promotion":
        print(f"not promoted yet: {gate['against']} keeps playing until you promote {version['version']} "
              f"(POST {site.base}bots/{name}/versions/{version['seq']}/promote/, or Promote on the bot's page)")
    elif outcome == "superseded":
        print(f"not promoted: a newer version of {args.bot} is active")
    else:
        print(f"not promoted: {gate['against']} keeps playing (a version judged worse is kept back; "
              f"you may still promote it by hand)")
    return GATE_EXIT.get(outcome, 1)


def add_parser(sub: Any) -> None:
    p = sub.add_parser("submit", help="send a bot's code to the platform, which runs it (hosted bots)")
    p.add_argument("path", help="a bot file (bot.py / bot.js) or a folder with one")
    p.add_argument("--bot", required=True, help="the bot's name on the site")
    p.add_argument("--site", default=os.environ.get("TIENLEN_SITE", "http://127.0.0.1:8000"),
                   help="the site's address (default $TIENLEN_SITE or %(default)s)")
    p.add_argument("--runtime", choices=("python3.11", "node20"), help="default: from the entry file")
    p.add_argument("--wait", action="store_true",
                   help="follow the validation to the end (and the gate, if the bot has it on)")
    p.add_argument("--hosted", action="store_true", help="then switch the bot to hosted (implies --wait)")
    p.add_argument("--timeout", type=float, default=600.0,
                   help="seconds --wait waits, validation and gate together (default %(default)s)")
