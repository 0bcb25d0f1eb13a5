"""Accounts: who may organise or manage a tournament, API tokens, bots, bot tokens and
the versions bots report. Clear tokens are returned once and never stored."""

from __future__ import annotations

from collections.abc import Iterable

from django.core.exceptions import ValidationError
from django.utils import timezone

from referee_service.house import house_bot_names
from tournaments.models import (
    ApiToken,
    Bot,
    BotVersion,
    Tournament,
)
from tournaments.tokens import (
    API_TOKEN_PREFIX,
    BOT_TOKEN_PREFIX,
    token_display_prefix,
    token_generate,
    token_hash,
)


def user_is_organiser(*, user) -> bool:
    return bool(
        user
        and user.is_authenticated
        and (user.is_staff or user.has_perm("tournaments.organise_tournaments"))
    )


def user_can_manage_tournament(*, user, tournament: Tournament) -> bool:
    """Who may change a tournament (entrants, start, cancel): an organiser, on their own
    tournament; staff on any. The API, the organiser pages and the page's buttons ask this."""
    return user_is_organiser(user=user) and (user.is_staff or tournament.organiser_id == user.pk)


def api_token_create(*, user, name: str = "") -> tuple[ApiToken, str]:
    """A new API token; the clear token is returned once and never stored."""
    key = token_generate(prefix=API_TOKEN_PREFIX)
    token = ApiToken.objects.create(
        user=user, name=name[:100], key_hash=token_hash(key), prefix=token_display_prefix(key)
    )
    return token, key


def api_token_revoke(*, token: ApiToken) -> None:
    if token.revoked_at is None:
        token.revoked_at = timezone.now()
        token.save(update_fields=["revoked_at"])


def bot_create(
    *, owner, name: str, description: str = "", house_bot: str = ""
) -> tuple[Bot, str | None]:
    """Register a bot; returns the bot and its token (None for house bots), shown once."""
    if house_bot and house_bot not in house_bot_names():
        known = ", ".join(sorted(house_bot_names()))
        raise ValidationError({"house_bot": f"Unknown house bot; choose from {known}."})
    if house_bot and not owner.is_staff:
        raise ValidationError({"house_bot": "Only staff can register house bots."})
    if Bot.objects.filter(name__iexact=name).exists():
        raise ValidationError({"name": "A bot with this name already exists."})
    bot = Bot(owner=owner, name=name, description=description, house_bot=house_bot)
    token = None
    if not house_bot:
        token = token_generate(prefix=BOT_TOKEN_PREFIX)
        bot.token_hash = token_hash(token)
        bot.token_prefix = token_display_prefix(token)
        bot.token_created_at = timezone.now()
    bot.full_clean()
    bot.save()
    return bot, token


def bot_token_rotate(*, bot: Bot) -> str:
    """Replace the bot's token (the old one stops working at once); also un-revokes."""
    if bot.house_bot:
        raise ValidationError({"house_bot": "House bots have no token."})
    token = token_generate(prefix=BOT_TOKEN_PREFIX)
    bot.token_hash = token_hash(token)
    bot.token_prefix = token_display_prefix(token)
    bot.token_created_at = timezone.now()
    bot.revoked_at = None
    bot.save(update_fields=["token_hash", "token_prefix", "token_created_at", "revoked_at"])
    return token


def bot_revoke(*, bot: Bot) -> None:
    """Revoke the bot's token: it can no longer connect (its games stay)."""
    bot.token_hash = None
    bot.revoked_at = timezone.now()
    bot.save(update_fields=["token_hash", "revoked_at"])


def bot_update(*, bot: Bot, description: str | None = None) -> Bot:
    if description is not None:
        bot.description = description
        bot.full_clean()
        bot.save(update_fields=["description"])
    return bot


def bot_version_touch(*, bot_id: int, version: str) -> BotVersion | None:
    """Note the version a bot reported; re-seeing an old version makes it current again."""
    if not version:
        return None
    obj, created = BotVersion.objects.get_or_create(bot_id=bot_id, version=version[:64])
    if not created:
        latest = BotVersion.objects.filter(bot_id=bot_id).order_by("-first_seen_at", "-id").first()
        if latest is not None and latest.pk != obj.pk:
            obj.first_seen_at = timezone.now()
            obj.save(update_fields=["first_seen_at"])
    return obj


def bot_versions_note(*, connected: dict[str, str], bot_ids: Iterable[int]) -> None:
    """Record the versions the referee reports for these bots (before a table starts).

    One query when every bot still reports its current version (every table but the first
    after a bot changes): only a changed version is written."""
    reported = {bot_id: connected.get(str(bot_id)) for bot_id in bot_ids}
    reported = {bot_id: version[:64] for bot_id, version in reported.items() if version}
    if not reported:
        return
    current: dict[int, str] = {}
    for bot_id, version in (
        BotVersion.objects.filter(bot_id__in=list(reported))
        .order_by("bot_id", "first_seen_at", "id").values_list("bot_id", "version")
    ):
        current[bot_id] = version  # ordered: the newest wins
    for bot_id, version in reported.items():
        if current.get(bot_id) != version:
            bot_version_touch(bot_id=bot_id, version=version)
