"""What is public about a game, a table, a deal, a standing or a rating, and whose private
data a user may read: the platform's fair-play invariant, in one place.

Two rules, every page, API view, export, log and event stream asks this module:

- **Sealed results** (docs/fair-play.md): a game's result, moves and hands, and anything
  summed from them, are public only once its deal is revealed, i.e. played at every table
  that plays it. Before that a bot that is still to play the deal elsewhere could learn it.
- **A bot's private data** (its hosted code and versions' validation logs, its runtime
  logs, its move notes) is shown to the bot's owner only: never to other bots, other
  users, organisers or spectators, before or after the reveal.

Readers filter with these functions instead of writing the predicates out (a page that
writes its own test of `deal__revealed_at` can forget it; tests/web scan for that).
"""

from __future__ import annotations

from typing import Any

from django.db.models import Q, QuerySet

from tournaments.models import Bot, Game, Tournament


def revealed(path: str = "") -> Q:
    """Games (reached through `path`, e.g. "game__") whose deal is revealed: the only ones
    whose result any public read may show or count. A join to games and deals: reads of
    one tournament exclude `sealed_games` instead, which costs less."""
    return Q(**{f"{path}deal__revealed_at__isnull": False})


def sealed_games(*, tournament: Tournament) -> QuerySet[Game]:
    """The ids of the tournament's sealed games (recorded, deal not revealed), for
    `.exclude(game_id__in=...)`: a hashed subplan over the few sealed games, where joining
    every seat to its game and deal cost the 10,000-game standings 3x the time
    (benchmarks/README.md, sealed results)."""
    return Game.objects.filter(table__tournament_id=tournament.pk, deal__revealed_at__isnull=True).values("id")


def bot_private_visible(*, user: Any, bot: Bot) -> bool:
    """May `user` read `bot`'s private data (hosted code, versions, logs, move notes)? Its
    owner only: staff and organisers see what the public sees, so a platform account with
    privileges cannot become a channel between competitors."""
    return bool(user is not None and user.is_authenticated and bot.owner_id == user.pk)
