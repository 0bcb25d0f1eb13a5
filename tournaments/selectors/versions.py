"""Reads of hosted bots' private data: their submitted versions (code, validation logs)
and their sessions' logs. Every read takes the viewer and asks
`tournaments.sealing.bot_private_visible` first: the owner sees them, nobody else does
(not staff, not organisers, not the bots at the same table), so `None` / empty otherwise.
"""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet

from tournaments.hosting.storage import DEFAULT_STORAGE_MIB
from tournaments.models import Bot, BotStorage, BotSubmission, HostedSession
from tournaments.sealing import bot_private_visible

SESSIONS_SHOWN = 50


def bot_submissions(*, viewer: Any, bot: Bot) -> QuerySet[BotSubmission] | None:
    """The bot's versions, newest first, without their archives; None for anyone but its owner."""
    if not bot_private_visible(user=viewer, bot=bot):
        return None
    return (BotSubmission.objects.filter(bot=bot).select_related("gate_against")
            .defer("archive", "gate_against__archive").order_by("-seq"))


def bot_submission(*, viewer: Any, bot: Bot, seq: int) -> BotSubmission | None:
    rows = bot_submissions(viewer=viewer, bot=bot)
    return None if rows is None else rows.filter(seq=seq).first()


def bot_sessions(*, viewer: Any, bot: Bot, table_id: int | None = None, casual_table_id: int | None = None,
                 limit: int = SESSIONS_SHOWN) -> list[HostedSession] | None:
    """The bot's latest hosted sessions (for one tournament or casual table, if given), with
    their logs; None for anyone but its owner (not the person who played the casual table)."""
    if not bot_private_visible(user=viewer, bot=bot):
        return None
    rows = HostedSession.objects.filter(bot=bot).select_related("submission", "table__tournament")
    if table_id is not None:
        rows = rows.filter(table_id=table_id)
    if casual_table_id is not None:
        rows = rows.filter(casual_table_id=casual_table_id)
    return list(rows.defer("submission__archive", "token_hash")[:limit])


def bot_storage(*, viewer: Any, bot: Bot) -> dict[str, Any] | None:
    """The size of what the bot keeps between its sessions (never its contents: those are
    the bot's); None for anyone but its owner."""
    if not bot_private_visible(user=viewer, bot=bot):
        return None
    row = BotStorage.objects.filter(bot=bot).values("size", "files", "updated_at").first()
    return {"bot": bot.name, "size": row["size"] if row else 0, "files": row["files"] if row else 0,
            "updated_at": row["updated_at"] if row else None, "cap": DEFAULT_STORAGE_MIB * 1024 * 1024}
