"""A knockout's bracket (rounds, tables, seats) and its rounds still to come.

A seat's points, place, advancement and forfeit are shown once its table's result is
public (`sealing.table_results_public`, `sealing.table_seat_result`).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from django.db.models import Prefetch

from tournaments.models import Table, TableSeat, Tournament
from tournaments.scheduling.knockout import knockout_advance_count, knockout_plan
from tournaments.sealing import table_results_public, table_seat_result


def tournament_bracket(*, tournament: Tournament) -> list[dict[str, Any]]:
    """Rounds -> tables -> seats, for drawing a bracket (2 queries). A seat's points, place,
    advanced and forfeited are None until its table's result is public (`results_public`:
    the table is closed and every game it recorded is revealed)."""
    tables = (
        Table.objects.filter(tournament=tournament)
        .annotate(results_public=table_results_public())
        .order_by("round", "number")
        .prefetch_related(
            Prefetch("seats", queryset=TableSeat.objects.select_related("entrant__bot").order_by("seat"))
        )
    )
    rounds: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for table in tables:
        rounds[table.round].append(
            {
                "table_id": table.pk,
                "number": table.number,
                "status": table.status,
                "games_recorded": table.games_recorded,
                "games_planned": table.games_planned,
                "results_public": table.results_public,
                "seats": [
                    {
                        "seat": s.seat,
                        "entrant_id": s.entrant_id,
                        "bot_id": s.entrant.bot_id,
                        "bot_name": s.entrant.bot.name,
                        "seed_rank": s.entrant.seed_rank,
                        **table_seat_result(s, public=table.results_public),
                    }
                    for s in table.seats.all()
                ],
            }
        )
    last = max(rounds, default=None)
    return [
        {
            "round": r,
            # What each table of the round really seats (a round can mix 3- and 2-seat tables).
            "table_sizes": [len(t["seats"]) for t in rounds[r]],
            "final": r == last and len(rounds[r]) == 1,
            "tables": rounds[r],
        }
        for r in sorted(rounds)
    ]


def knockout_rounds(*, tournament: Tournament, bracket: list[dict[str, Any]], entrants: int) -> list[dict[str, Any]]:
    """Every round of a knockout with its real table sizes and games per table, then the
    rounds still to come as planned from who goes through (no query: from the bracket).

    Each: {round, table_sizes, games, final, planned}.
    """
    advance = tournament.advance_per_table
    rounds = [
        {
            "round": r["round"],
            "table_sizes": r["table_sizes"],
            "games": [t["games_planned"] for t in r["tables"]],
            "final": r["final"],
            "planned": False,
        }
        for r in bracket
    ]
    if tournament.status in (Tournament.Status.FINISHED, Tournament.Status.CANCELLED):
        return rounds
    if rounds:
        last = rounds[-1]["table_sizes"]
        going_on = 0 if len(last) == 1 else sum(knockout_advance_count(size, advance) for size in last)
    else:
        going_on = entrants
    if going_on >= 2:
        number = rounds[-1]["round"] if rounds else 0
        plan = knockout_plan(going_on, tournament.seats_per_table, advance)
        for i, sizes in enumerate(plan, start=1):
            rounds.append({
                "round": number + i,
                "table_sizes": sizes,
                "games": [tournament.games_per_table or tournament.duplicate_sets * size for size in sizes],
                "final": i == len(plan),
                "planned": True,
            })
    return rounds
