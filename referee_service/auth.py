"""Who may connect: bot tokens (a pluggable store) and the organiser's credential.

The referee never stores or logs a bot token; it only asks a `TokenStore` who a token
belongs to. The platform plugs in its database (`tournaments.token_store:DjangoTokenStore`);
for standalone use there are a JSON file store and an environment store, both of which may
hold SHA-256 hashes instead of the tokens themselves.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, cast, runtime_checkable

from referee_service.plugins import plugin_load


@dataclass(frozen=True, slots=True)
class BotIdentity:
    """A registered bot, as the token store knows it."""

    bot_id: str
    name: str


@runtime_checkable
class TokenStore(Protocol):
    """Maps a bot token to its bot; None for unknown or revoked tokens.

    Called from a worker thread (never on the event loop), so a store may block on a
    database."""

    def authenticate_bot(self, token: str) -> BotIdentity | None: ...


def token_digest(token: str) -> str:
    """The hex SHA-256 of a token: what the file and env stores may keep instead of it."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


class StaticTokenStore:
    """Tokens held in memory: {token: BotIdentity}. For tests and embedding."""

    def __init__(self, tokens: Mapping[str, BotIdentity] | None = None) -> None:
        self._by_digest: dict[str, BotIdentity] = {}
        self._revoked: set[str] = set()
        for token, identity in (tokens or {}).items():
            self.add(token, identity)

    def add(self, token: str, identity: BotIdentity) -> None:
        self._by_digest[token_digest(token)] = identity

    def add_digest(self, digest: str, identity: BotIdentity) -> None:
        self._by_digest[digest.lower()] = identity

    def revoke(self, token: str) -> None:
        self._revoked.add(token_digest(token))

    def authenticate_bot(self, token: str) -> BotIdentity | None:
        if not token:
            return None
        digest = token_digest(token)
        if digest in self._revoked:
            return None
        return self._by_digest.get(digest)


def _entries_to_store(entries: Iterable[Mapping[str, Any]], source: str) -> StaticTokenStore:
    store = StaticTokenStore()
    for number, entry in enumerate(entries, start=1):
        where = f"{source}: bot entry {number}"
        bot_id = str(entry.get("bot_id") or "").strip()
        if not bot_id:
            raise ValueError(f"{where}: missing bot_id")
        identity = BotIdentity(bot_id=bot_id, name=str(entry.get("name") or bot_id))
        if entry.get("revoked"):
            continue
        if entry.get("token"):
            store.add(str(entry["token"]), identity)
        elif entry.get("token_sha256"):
            digest = str(entry["token_sha256"]).lower()
            if len(digest) != 64 or any(ch not in "0123456789abcdef" for ch in digest):
                raise ValueError(f"{where}: token_sha256 must be 64 hex digits")
            store.add_digest(digest, identity)
        else:
            raise ValueError(f"{where}: needs token or token_sha256")
    return store


class FileTokenStore:
    """Tokens in a JSON file, re-read when it changes (so revoking needs no restart).

    Format: ``{"bots": [{"bot_id": "b1", "name": "Alice", "token": "..."} |
    {"bot_id": ..., "token_sha256": "<hex>"}, ..., {"...", "revoked": true}]}``."""

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        chosen = path or os.environ.get("TIENLEN_TOKEN_FILE")
        if not chosen:
            raise ValueError("FileTokenStore needs a path (or TIENLEN_TOKEN_FILE)")
        self.path = Path(chosen)
        self._mtime: float | None = None
        self._store = StaticTokenStore()
        self._load()

    def _load(self) -> None:
        try:
            stat = self.path.stat()
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise ValueError(f"token file {self.path} does not exist") from None
        except json.JSONDecodeError as exc:
            raise ValueError(f"token file {self.path} is not valid JSON: {exc}") from None
        if not isinstance(data, dict) or not isinstance(data.get("bots"), list):
            raise ValueError(f"token file {self.path} must be an object with a 'bots' list")
        self._store = _entries_to_store(data["bots"], str(self.path))
        self._mtime = stat.st_mtime

    def authenticate_bot(self, token: str) -> BotIdentity | None:
        try:
            if self.path.stat().st_mtime != self._mtime:
                self._load()
        except (OSError, ValueError):
            pass  # keep the last good copy rather than lock every bot out
        return self._store.authenticate_bot(token)


class EnvTokenStore:
    """Tokens in an environment variable (default ``TIENLEN_BOT_TOKENS``).

    Format: comma-separated ``bot_id:token`` or ``bot_id:sha256=<hex>`` entries; the bot's
    display name is its id."""

    def __init__(self, variable: str = "TIENLEN_BOT_TOKENS") -> None:
        raw = os.environ.get(variable, "")
        entries = []
        for number, item in enumerate(filter(None, (p.strip() for p in raw.split(","))), 1):
            bot_id, sep, secret = item.partition(":")
            if not sep or not bot_id or not secret:
                raise ValueError(f"{variable}: entry {number} must be bot_id:token")
            if secret.startswith("sha256="):
                entries.append({"bot_id": bot_id, "token_sha256": secret[len("sha256="):]})
            else:
                entries.append({"bot_id": bot_id, "token": secret})
        self._store = _entries_to_store(entries, variable)

    def authenticate_bot(self, token: str) -> BotIdentity | None:
        return self._store.authenticate_bot(token)


BUILTIN_STORES = {"file": FileTokenStore, "env": EnvTokenStore}


def load_token_store(spec: str) -> TokenStore:
    """Build a store from ``--token-store``: "env", "file" (or "file:PATH"), or
    "module:Class" (constructed without arguments)."""
    name, _, arg = spec.partition(":")
    if name == "file":
        return FileTokenStore(arg or None)
    if name == "env":
        return EnvTokenStore(arg or "TIENLEN_BOT_TOKENS")
    if not arg:
        raise ValueError(
            f"--token-store {spec!r}: use 'env', 'file:PATH' or 'module:Class'"
        )
    store = plugin_load("--token-store", spec, ("authenticate_bot",))
    return cast(TokenStore, store)  # a plug-in: its one method is checked by plugin_load


def bearer_token(metadata: Iterable[tuple[str, Any]] | None) -> str | None:
    """The token of an ``authorization: Bearer <token>`` metadata entry, if any."""
    for key, value in metadata or ():
        if key.lower() == "authorization":
            text = value.decode() if isinstance(value, bytes) else str(value)
            scheme, _, token = text.partition(" ")
            if scheme.lower() == "bearer" and token.strip():
                return token.strip()
    return None


def organizer_token_ok(expected: str | None, offered: str | None) -> bool:
    """Constant-time check of the organiser credential; no credential configured = refuse."""
    if not expected or not offered:
        return False
    return hmac.compare_digest(expected.encode(), offered.encode())
