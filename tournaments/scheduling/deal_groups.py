"""Deal groups of field duplicates: which of the tables played together share their deals.

A deal group's tables play the same deals seat for seat, so a bot at one of them that
could tell a bot at another what it was dealt hands it the deal before it plays it (issue
25: four sign-up accounts of one person, one process pooling what their bots were sent,
knew opponents' cards in 55 % of their games). The rule, for every way tables are created
together (a round robin's round, a knockout round, a ladder tick):

* **at most one table of a group seats bots that are not isolated** — remote bots, every
  one presumed able to talk to every other (tournaments.isolation.bot_isolated decides;
  the callers pass its answers here as `isolated`);
* the owner rule still holds (no owner class twice in a group: owners module);
* the tables are disjoint (each bot plays each deal once) — the callers' tables are.

So a table of remote bots shares its deals only with tables of isolated bots (house bots),
which cannot pass anything on; where there are none, its deals are its own: independent
secret deals, compared with the house-bot baseline only (tournaments.scoring.adjusted).
Tables of isolated bots are spread over the remote tables' groups (fewest tables first),
so as many remote tables as possible get counterparts on the same cards; a round without
remote tables stays one group, as before.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

Flags = Mapping[int, bool] | Sequence[bool]
Classes = Mapping[int, int] | Sequence[int]


def table_isolated(table: Sequence[int], isolated: Flags) -> bool:
    """Every entrant at the table is isolated (it may share deals with other tables)."""
    return all(isolated[p] for p in table)


def arrange_deal_groups(
    tables: Sequence[Sequence[int]],
    *,
    isolated: Flags,
    classes: Classes | None = None,
    offset: int = 0,
) -> list[int]:
    """A group index (0-based, numbered in table order) per table of disjoint tables.

    `isolated[e]`: entrant e cannot communicate out of band. `classes[e]`: its owner
    class (entrants of one class never share a group; None: every entrant its own).
    `offset` (e.g. the round number) turns which remote table the isolated tables join
    first, so counterparts vary from round to round. Deterministic.
    """
    members: list[list[int]] = []  # table indices per group
    seen: list[set[int]] = []  # owner classes per group
    remote: list[bool] = []

    def owners(table: Sequence[int]) -> set[int]:
        return {classes[p] for p in table} if classes is not None else {-1 - p for p in table}

    isolated_tables = []
    for i, table in enumerate(tables):
        if table_isolated(table, isolated):
            isolated_tables.append(i)
        else:  # a table with a remote bot: a group of its own, never joined by another
            members.append([i])
            seen.append(owners(table))
            remote.append(True)
    rotation = len(members)
    for i in isolated_tables:
        mine = owners(tables[i])
        fits = [g for g in range(len(members)) if not seen[g] & mine]
        if fits:
            # Fewest tables first; among equals the remote groups in turned order.
            g = min(fits, key=lambda g: (len(members[g]), (g - offset) % rotation if g < rotation else g))
            members[g].append(i)
            seen[g] |= mine
        else:
            members.append([i])
            seen.append(mine)
            remote.append(False)
    out = [0] * len(tables)
    for number, group in enumerate(sorted(members, key=min)):
        for i in group:
            out[i] = number
    return out


def sharing_tables(tables: Sequence[Sequence[int]], groups: Sequence[int]) -> int:
    """How many tables share their deals with at least one other table."""
    sizes: dict[int, int] = {}
    for g in groups:
        sizes[g] = sizes.get(g, 0) + 1
    return sum(1 for g in groups if sizes[g] > 1)
