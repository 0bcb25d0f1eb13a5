"""Writes behind the account pages that the tournaments app does not provide (yet).

A bot's token is generated here, returned once to be shown to its owner, and only its
SHA-256 is stored, exactly as `tournaments.tokens` prescribes for the referee's token store.
"""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils import timezone

from tournaments.models import Bot
from tournaments.tokens import BOT_TOKEN_PREFIX, token_display_prefix, token_generate, token_hash


@transaction.atomic
def bot_register(*, owner: AbstractBaseUser, name: str, description: str = "") -> tuple[Bot, str]:
    """Create a bot and return it with its plain token (never stored)."""
    token = token_generate(prefix=BOT_TOKEN_PREFIX)
    bot = Bot(owner=owner, name=name, description=description)
    bot.full_clean()
    bot.token_hash = token_hash(token)
    bot.token_prefix = token_display_prefix(token)
    bot.token_created_at = timezone.now()
    bot.save()
    return bot, token


@transaction.atomic
def bot_token_rotate(*, bot: Bot) -> str:
    """Replace the bot's token; the old one stops working at once."""
    bot = Bot.objects.select_for_update().get(pk=bot.pk)
    token = token_generate(prefix=BOT_TOKEN_PREFIX)
    bot.token_hash = token_hash(token)
    bot.token_prefix = token_display_prefix(token)
    bot.token_created_at = timezone.now()
    bot.save(update_fields=["token_hash", "token_prefix", "token_created_at"])
    return token
