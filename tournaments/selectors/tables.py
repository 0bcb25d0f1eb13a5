"""A tournament's tables with their seats, annotated with what of each is public
(`sealing.table_results_public`, `sealing.table_has_sealed`).
"""

from __future__ import annotations

from django.db.models import OuterRef, Prefetch, QuerySet

from tournaments.models import Table, TableSeat, Tournament
from tournaments.sealing import table_has_sealed, table_results_public


def table_list(*, tournament: Tournament) -> QuerySet[Table]:
    """Tables with their seats (2 queries a page), each annotated `results_public` (closed,
    every game recorded revealed) and `sealed` (it recorded a game whose deal is not
    revealed): show a seat's result through `table_seat_result`, and the table's
    `last_error` only while it is not sealed."""
    return (
        Table.objects.filter(tournament=tournament)
        .annotate(results_public=table_results_public(), sealed=table_has_sealed(OuterRef("pk")))
        .order_by("round", "number")
        .prefetch_related(Prefetch("seats", queryset=TableSeat.objects.select_related("entrant__bot")))
    )
