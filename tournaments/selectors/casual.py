"""Reads of casual tables (a person against bots, out of competition): the lists of the play
and home pages, one table's live state and games, a bot's "people vs bots" record.

Every read of a table's live state goes through sealing.casual_state_for (the person's
hand and legal plays to the person only) and every replay through sealing.casual_replay_for.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from django.db.models import Prefetch, Q, QuerySet

from tournaments import sealing
from tournaments.models import Bot, CasualGame, CasualSeat, CasualTable


def casual_tables(*, open_only: bool = False, owner: Any = None) -> QuerySet[CasualTable]:
    """Casual tables, newest first, with their seats (names and bots)."""
    rows = CasualTable.objects.select_related("owner").prefetch_related(
        Prefetch("seats", queryset=CasualSeat.objects.select_related("bot").order_by("index")))
    if open_only:
        rows = rows.filter(status__in=[CasualTable.Status.PENDING, CasualTable.Status.RUNNING])
    if owner is not None:
        rows = rows.filter(owner_id=owner.pk)
    return rows.order_by("-created_at")


def casual_table(*, table_id: int) -> CasualTable | None:
    return casual_tables().filter(pk=table_id).first()


def casual_state(*, table_id: int, user: Any) -> dict[str, Any] | None:
    """The live state of a table as `user` may see it (sealing.casual_state_for), with its
    finished games' results; None when there is no such table."""
    table = CasualTable.objects.filter(pk=table_id).first()
    if table is None:
        return None
    state = sealing.casual_state_for(table=table, user=user)
    state["totals"] = list(table.totals or [])
    state["names"] = list(CasualSeat.objects.filter(table_id=table_id).order_by("index").values_list("name", flat=True))
    state["games_total"] = table.games
    state["results"] = [casual_game_summary(game=g) for g in
                        CasualGame.objects.filter(table_id=table_id).order_by("index")]
    return state


def casual_game_summary(*, game: CasualGame) -> dict[str, Any]:
    """A finished game's result: points per seat, each payment with its reason, how it ended."""
    result = json.loads(game.replay_text).get("result") or {}
    return {"index": game.index, "points": list(game.points),
            "seat_participants": list(game.seat_participants),
            "payments": list(result.get("payments") or []),
            "end_reason": result.get("end_reason", ""),
            "finishing_order": list(result.get("finishing_order") or []),
            "replay": f"/play/{game.table_id}/games/{game.index}/"}


def casual_game(*, table_id: int, index: int) -> CasualGame | None:
    return CasualGame.objects.filter(table_id=table_id, index=index).select_related("table").first()


def casual_replay(*, game: CasualGame, user: Any) -> dict[str, Any]:
    """A finished casual game's replay as `user` may see it (no other owner's move notes)."""
    owned = frozenset(
        seat for seat, participant in enumerate(game.seat_participants)
        for s in CasualSeat.objects.filter(table_id=game.table_id, index=participant).select_related("bot")
        if s.bot is not None and sealing.bot_private_visible(user=user, bot=s.bot))
    return sealing.casual_replay_for(json.loads(game.replay_text), user=user, game=game,
                                     owned_bot_seats=owned)


def casual_opponents(*, user: Any) -> QuerySet[Bot]:
    """The bots `user` may seat at a casual table: house bots, their own, and the bots
    whose owners accept casual games (services.casual.casual_bot_allowed)."""
    return Bot.objects.filter(sealing.casual_opponents_q(user=user)).select_related("owner").order_by("name")


@dataclass(frozen=True)
class PeopleRecord:
    """A bot's "people vs bots" record: its casual games against a person."""

    games: int
    wins: int  # games the bot finished ahead of the person
    losses: int
    points: int  # the bot's points summed over those games

    @property
    def any(self) -> bool:
        return self.games > 0


def people_record(*, bot: Bot) -> PeopleRecord:
    """The bot's record against people at casual tables (never mixed with its ratings)."""
    games = wins = losses = points = 0
    seats = CasualSeat.objects.filter(bot=bot).values_list("table_id", "index")
    by_table: dict[int, set[int]] = {}
    for table_id, index in seats:
        by_table.setdefault(table_id, set()).add(index)
    if not by_table:
        return PeopleRecord(0, 0, 0, 0)
    person_index = dict(CasualSeat.objects.filter(
        table_id__in=list(by_table), bot__isnull=True).values_list("table_id", "index"))
    for game in CasualGame.objects.filter(table_id__in=list(by_table)).only(
            "table_id", "seat_participants", "points"):
        person = person_index.get(game.table_id)
        if person is None:
            continue
        seat_of = {p: s for s, p in enumerate(game.seat_participants)}
        for index in by_table[game.table_id]:
            mine, theirs = game.points[seat_of[index]], game.points[seat_of[person]]
            games += 1
            points += mine
            wins += mine > theirs
            losses += mine < theirs
    return PeopleRecord(games, wins, losses, points)


def casual_tables_of_bot(*, bot: Bot) -> QuerySet[CasualTable]:
    return casual_tables().filter(Q(seats__bot=bot)).distinct()
