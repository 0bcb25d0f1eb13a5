"""Accounts: who may organise or manage a tournament, API tokens, bots, bot tokens and
the versions bots report. Clear tokens are returned once and never stored."""

from __future__ import annotations

from collections.abc import Iterable

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.hashers import make_password
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
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
    """Staff, holders of `tournaments.organise_tournaments`, and — on a site that lets
    everyone organise (settings.TIENLEN_ANYONE_ORGANISES, on in `make demo`) — every
    signed-in user. Organisers manage only their own tournaments (below)."""
    if not (user and user.is_authenticated):
        return False
    if getattr(settings, "TIENLEN_ANYONE_ORGANISES", False) and user.is_active:
        return True
    return bool(user.is_staff or user.has_perm("tournaments.organise_tournaments"))


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


HOUSE_NAME_PREFIX = "house-"


def bot_create(
    *, owner, name: str, description: str = "", house_bot: str = ""
) -> tuple[Bot, str | None]:
    """Register a bot; returns the bot and its token (None for house bots), shown once.

    Names starting with `house-` are kept for house bots: a bot of a user's own named
    `house-greedy` would pass, in a field of entrants, for the platform's."""
    if house_bot and house_bot not in house_bot_names():
        known = ", ".join(sorted(house_bot_names()))
        raise ValidationError({"house_bot": f"Unknown house bot; choose from {known}."})
    if house_bot and not owner.is_staff:
        raise ValidationError({"house_bot": "Only staff can register house bots."})
    if not house_bot and name.lower().startswith(HOUSE_NAME_PREFIX):
        raise ValidationError({"name": f"Names starting with “{HOUSE_NAME_PREFIX}” are kept for the platform's house bots; pick another name."})
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


def bot_update(*, bot: Bot, description: str | None = None, accepts_invitations: bool | None = None) -> Bot:
    """The owner's settings of a bot: its description; whether every organiser may enter
    it without asking (its invitations accepted at once, tournaments.services.entries)."""
    fields = []
    if description is not None:
        bot.description = description
        fields.append("description")
    if accepts_invitations is not None:
        bot.accepts_invitations = accepts_invitations
        fields.append("accepts_invitations")
    if fields:
        bot.full_clean()
        bot.save(update_fields=fields)
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


# --- house bots for every organiser ------------------------------------------------------

#: The account that owns the platform's house bots. Its name has a space, which Django's
#: username rules refuse, so nobody can sign up as it (or own it before the platform does);
#: it is inactive and has no password, so nobody signs in as it.
HOUSE_ACCOUNT = "house bots"

#: How the organiser's form describes each house bot (the referee plays them in-process:
#: no token, no connection, always there). A kind the referee has and this lacks is offered
#: by its name.
HOUSE_BOT_DESCRIPTIONS = {
    "random": "random: a random legal play (the weakest)",
    "greedy": "greedy: its lowest legal play",
    "heuristic": "heuristic: plans its hand and passes when following would break the plan",
    "search": "search: samples the unseen cards and searches (the strongest; thinks 50 ms a move)",
}


def house_bot_kinds() -> list[str]:
    """The referee's house bots, weakest first as far as known."""
    order = list(HOUSE_BOT_DESCRIPTIONS)
    return sorted(house_bot_names(), key=lambda k: (order.index(k) if k in order else len(order), k))


def house_account():
    """The owner of the house bots the platform creates (HOUSE_ACCOUNT), made on first use."""
    account, _ = get_user_model().objects.get_or_create(
        username=HOUSE_ACCOUNT,
        defaults={"is_active": False, "password": make_password(None), "first_name": "House bots"},
    )
    return account


def house_bot_for(*, kind: str) -> Bot:
    """The house bot of `kind` any organiser may enter: the oldest active one (a house bot
    staff registered counts), else `house-<kind>` created now, owned by the house account.

    This is what makes house bots available to every organiser without a staff-only API
    call: a newcomer's bot gets opponents that are always connected."""
    if kind not in house_bot_names():
        known = ", ".join(house_bot_kinds())
        raise ValidationError({"house_bots": f"Unknown house bot {kind!r}; choose from {known}."})
    for _ in range(3):  # another organiser may be creating the same one
        existing = Bot.objects.filter(house_bot=kind, revoked_at__isnull=True).order_by("created_at", "id").first()
        if existing is not None:
            return existing
        name, number = f"{HOUSE_NAME_PREFIX}{kind}", 2
        while Bot.objects.filter(name__iexact=name).exists():
            name, number = f"{HOUSE_NAME_PREFIX}{kind}-{number}", number + 1
        bot = Bot(
            owner=house_account(), name=name, house_bot=kind,
            description=f"The platform's house bot “{HOUSE_BOT_DESCRIPTIONS.get(kind, kind)}”, played by "
            "the referee itself (the SDK's example bot of that name): always connected, open to every organiser.",
        )
        bot.full_clean()
        try:
            with transaction.atomic():
                bot.save()
        except IntegrityError:
            continue
        return bot
    raise ValidationError({"house_bots": f"Could not register the house bot {kind!r}; try again."})
