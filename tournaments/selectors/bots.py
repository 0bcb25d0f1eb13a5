"""Bots: lists, one by name, a bot's page and two bots' head-to-head over revealed games
(`sealing.revealed`).
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass

from django.db.models import QuerySet

from tournaments.models import Bot, Entrant, Game, GameSeat, Rating, RatingPool
from tournaments.sealing import revealed

Z95 = 1.96


def bot_list(*, owner=None) -> QuerySet[Bot]:
    qs = Bot.objects.select_related("owner")
    if owner is not None:
        qs = qs.filter(owner=owner)
    return qs.order_by("name")


def bot_get(*, name: str) -> Bot:
    return Bot.objects.select_related("owner").get(name=name)


@dataclass
class BotPage:
    bot: Bot
    ratings: list[Rating]
    tournaments: list[Entrant]
    recent_games: list[GameSeat]
    versions: list[str]


def bot_page(*, bot: Bot, recent: int = 20) -> BotPage:
    """What a bot's page shows: ratings per pool, tournaments, recent games (4 queries)."""
    ratings = list(Rating.objects.filter(bot=bot).select_related("pool").order_by("pool__preset", "pool__seats"))
    tournaments = list(
        Entrant.objects.filter(bot=bot).select_related("tournament").order_by("-tournament__created_at")
    )
    recent_games = list(
        GameSeat.objects.filter(revealed("game__"), bot=bot)
        .select_related("game__table__tournament")
        .order_by("-game_id")[:recent]
    )
    versions = list(bot.versions.order_by("first_seen_at").values_list("version", flat=True))
    return BotPage(bot=bot, ratings=ratings, tournaments=tournaments, recent_games=recent_games, versions=versions)


@dataclass(frozen=True)
class HeadToHead:
    games: int
    a_above: int
    b_above: int
    shared_place: int
    a_points: int
    b_points: int

    @property
    def a_score(self) -> float:
        """a's pairwise score rate, with a 95% interval half-width."""
        return (self.a_above + 0.5 * self.shared_place) / self.games if self.games else 0.0

    @property
    def a_score_ci(self) -> float:
        if self.games < 2:
            return float("inf") if self.games else 0.0
        p = self.a_score
        return Z95 * math.sqrt(max(p * (1 - p), 1e-12) / self.games)


def head_to_head(*, bot_a: Bot, bot_b: Bot, pool: RatingPool | None = None) -> HeadToHead:
    """How two bots fared in the revealed games they shared (1 query)."""
    shared = Game.objects.filter(revealed(), seats__bot=bot_a).filter(seats__bot=bot_b)
    qs = GameSeat.objects.filter(bot_id__in=[bot_a.pk, bot_b.pk], game__in=shared)
    if pool is not None:
        qs = qs.filter(game__pool=pool)
    by_game: dict[int, dict[int, tuple[int, int]]] = defaultdict(dict)
    for game_id, bot_id, place, points in qs.values_list("game_id", "bot_id", "place", "points"):
        by_game[game_id][bot_id] = (place, points)
    games = a_above = b_above = shared = a_points = b_points = 0
    for seats in by_game.values():
        if bot_a.pk not in seats or bot_b.pk not in seats:
            continue
        (pa, xa), (pb, xb) = seats[bot_a.pk], seats[bot_b.pk]
        games += 1
        a_above += pa < pb
        b_above += pb < pa
        shared += pa == pb
        a_points += xa
        b_points += xb
    return HeadToHead(games, a_above, b_above, shared, a_points, b_points)


def bot_find(*, name: str) -> Bot | None:
    """The bot of this name, or None (1 query)."""
    return Bot.objects.filter(name=name).first()
