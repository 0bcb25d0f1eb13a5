"""Rating pools, leaderboards and a bot's rating history.

No sealing filter: a game is rated only once its deal is revealed (tournaments.rating_order),
so every rating change here is of a revealed game.
"""

from __future__ import annotations

from django.db.models import Count, QuerySet

from tournaments.models import Bot, Rating, RatingChange, RatingPool


def pool_list() -> QuerySet[RatingPool]:
    return RatingPool.objects.annotate(bots=Count("ratings")).order_by("preset", "seats")


def pool_get(*, preset: str, seats: int) -> RatingPool:
    return RatingPool.objects.get(preset=preset, seats=seats)


def rating_list() -> QuerySet[Rating]:
    """The ratings public rankings show: bots whose token was revoked are left out (their
    pages and rating history stay)."""
    return Rating.objects.filter(bot__revoked_at__isnull=True)


def pool_leaderboard(*, pool: RatingPool, min_games: int = 0) -> QuerySet[Rating]:
    """Ratings of a pool, best first (1 query; page it)."""
    return (
        rating_list().filter(pool=pool, games__gte=min_games)
        .select_related("bot", "bot__owner")
        .order_by("-rating", "bot__name")
    )


def bot_rating_history(*, bot: Bot, pool: RatingPool) -> QuerySet[RatingChange]:
    return RatingChange.objects.filter(bot=bot, pool=pool).order_by("seq")


class PoolNameInvalid(ValueError):
    """Not a pool's name: pools are named <preset>-<seats>, e.g. south-4."""


def pool_by_name(*, name: str) -> RatingPool:
    """The pool named `<preset>-<seats>` (1 query): PoolNameInvalid if the name cannot be
    one, RatingPool.DoesNotExist if there is none."""
    preset, _, seats = name.rpartition("-")
    if not preset or not seats.isdigit():
        raise PoolNameInvalid("Pools are named <preset>-<seats>, e.g. south-4.")
    return RatingPool.objects.get(preset=preset, seats=int(seats))


def bot_ratings(*, bot: Bot) -> QuerySet[Rating]:
    """A bot's rating in each pool, with the pool (1 query)."""
    return Rating.objects.filter(bot=bot).select_related("pool").order_by("pool__preset", "pool__seats")
