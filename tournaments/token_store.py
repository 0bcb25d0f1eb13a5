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
        from django.db import DatabaseError, connection

        if not token or len(token) > 200:
            return None
        try:
            return self._lookup(token)
        except DatabaseError:
            # A connection dropped by the server (restart, idle timeout): reconnect once.
            connection.close()
            return self._lookup(token)

    @staticmethod
    def _lookup(token: str) -> BotIdentity | None:
        from tournaments.services.casual import PERSON_PREFIX, seat_token_table
        from tournaments.services.hosting import hosted_session_token_bot, remote_token_bot

        casual = seat_token_table(token)  # a person's seat at a casual table (play page)
        if casual is not None:
            return BotIdentity(bot_id=f"{PERSON_PREFIX}{casual}", name=f"person at table {casual}")
        bot = remote_token_bot(token=token) or hosted_session_token_bot(token=token)
        if bot is None:
            return None
        return BotIdentity(bot_id=str(bot.pk), name=bot.name)
