"""`DjangoTokenStore`: the referee's bot-token check against the platform database.

Run the referee with `--token-store tournaments.token_store:DjangoTokenStore` (and
`DATABASE_URL` set like the web and workers). Tokens are checked by SHA-256 against
`Bot.token_hash` (remote bots only) and against the running sessions of hosted bots
(`HostedSession.token_hash`, drawn by the platform per session); a revoked or rotated
token, or a session's once it ended, stops working on the next connection, with no
referee restart. The referee calls this from a worker thread, never on its event loop.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path

from referee_service.auth import BotIdentity


def _django_setup() -> None:
    import django
    from django.apps import apps

    if apps.ready:
        return
    root = Path(__file__).resolve().parent.parent
    for path in (str(root), str(root / "platform")):
        if path not in sys.path:
            sys.path.insert(0, path)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tienlen_site.settings")
    django.setup()


class DjangoTokenStore:
    """Bot token -> BotIdentity(bot_id=str(Bot.pk), name=Bot.name), or None."""

    def __init__(self) -> None:
        _django_setup()

    @staticmethod
    def referee_pool():
        """The pool a referee using this store joins by default (`--pool auto`): the
        platform's, so workers route tables to it and bots find it."""
        from tournaments.play.pool import DjangoRefereePool

        return DjangoRefereePool()

    def authenticate_bot(self, token: str) -> BotIdentity | None:
        return self.authenticate_bots([token])[0]

    def authenticate_bots(self, tokens: Sequence[str]) -> list[BotIdentity | None]:
        """Many tokens at once (the referee batches a burst of connecting bots):
        two queries however many, not one or two each."""
        from django.db import DatabaseError, connection

        try:
            return self._lookup(tokens)
        except DatabaseError:
            # A connection dropped by the server (restart, idle timeout): reconnect once.
            connection.close()
            return self._lookup(tokens)

    @staticmethod
    def _lookup(tokens: Sequence[str]) -> list[BotIdentity | None]:
        from tournaments.services.casual import PERSON_PREFIX, SEAT_TOKEN_PREFIX, seat_token_table
        from tournaments.services.hosting import hosted_session_token_bots, remote_token_bots
        from tournaments.tokens import token_hash

        usable = [t if t and len(t) <= 200 else "" for t in tokens]
        digests = {t: token_hash(t) for t in usable if t and not t.startswith(SEAT_TOKEN_PREFIX)}
        bots = remote_token_bots(hashes=set(digests.values()))
        missing = {d for d in digests.values() if d not in bots}
        if missing:
            bots.update(hosted_session_token_bots(hashes=missing))
        found: list[BotIdentity | None] = []
        for token in usable:
            if token.startswith(SEAT_TOKEN_PREFIX):  # a person's seat at a casual table
                casual = seat_token_table(token)
                found.append(None if casual is None else BotIdentity(
                    bot_id=f"{PERSON_PREFIX}{casual}", name=f"person at table {casual}"))
                continue
            bot = bots.get(digests[token]) if token else None
            found.append(None if bot is None else BotIdentity(bot_id=str(bot.pk), name=bot.name))
        return found
