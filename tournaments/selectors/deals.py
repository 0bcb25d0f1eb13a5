"""A tournament's deals: commitments for all, seeds only once revealed (read them through
`sealing.deal_seed`), and which tables play each deal group.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from django.db.models import Count, QuerySet

from tournaments.models import Deal, Table, Tournament
from tournaments.sealing import deals_revealed


def deal_list(*, tournament: Tournament, group: int | None = None, revealed: bool | None = None) -> QuerySet[Deal]:
    """A tournament's deals in (group, index) order: commitments for all, seeds only on the
    revealed ones (read them through `sealing.deal_seed`)."""
    qs = Deal.objects.filter(tournament_id=tournament.pk)
    if group is not None:
        qs = qs.filter(group=group)
    if revealed is not None:
        qs = qs.filter(deals_revealed(revealed))
    return qs.order_by("group", "index")


def deal_group_tables(*, tournament: Tournament, groups: Iterable[int]) -> dict[int, list[Table]]:
    """The tables of each deal group (1 query)."""
    out: dict[int, list[Table]] = defaultdict(list)
    for table in Table.objects.filter(tournament_id=tournament.pk, deal_group__in=list(groups)).order_by("round", "number"):
        out[table.deal_group].append(table)
    return dict(out)


def deal_counts(*, tournament: Tournament) -> dict[str, int]:
    """How many deals are committed and how many revealed (1 query)."""
    row = Deal.objects.filter(tournament_id=tournament.pk).aggregate(
        committed=Count("id"), revealed=Count("id", filter=deals_revealed())
    )
    return {"committed": row["committed"] or 0, "revealed": row["revealed"] or 0}
