"""Deal commitments: what the platform publishes before a deal is played (docs/fair-play.md).

Before play, the platform publishes ``commitment = SHA-256("tienlen-deal-commit-v1\\n" +
salt + "\\n" + seed)`` (UTF-8, lower-case hex) for every deal, with a public random salt per
tournament; the seed itself stays secret until the deal has been played at every table.
After the reveal anyone can check the seed against the commitment, the dealt hands against
the seed (``tienlen-deal-v1``, docs/rules.md §10) and the moves against the result
(``tienlen-bot verify-replay``). Everything here is the standard library, so the scheme is
a few lines in any language.
"""

from __future__ import annotations

import hashlib
import hmac

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
