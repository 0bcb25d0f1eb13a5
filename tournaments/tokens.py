"""Secret tokens for bots and API users.

Tokens are 256-bit random strings, so a plain SHA-256 (no salt, no slow hash) is enough to
store them: guessing is infeasible and lookups by hash stay a single indexed query.
"""

from __future__ import annotations

import hashlib
import secrets

BOT_TOKEN_PREFIX = "tlb_"
API_TOKEN_PREFIX = "tla_"


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def token_generate(*, prefix: str) -> str:
    return prefix + secrets.token_urlsafe(32)


def token_display_prefix(token: str) -> str:
    """The first characters, safe to show so an owner can tell tokens apart."""
    return token[:10]
