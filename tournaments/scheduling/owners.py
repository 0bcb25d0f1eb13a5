"""The owner rule: entrants of one owner never share a table or a deal group.

Two bots of one owner at one table could pool what they see (their hands, a signal in
their play); at two tables of one deal group (field duplicates) the first to play a deal
could tell the other its cards. So they never meet, in any format.

Exempt (docs/organiser-guide.md): house bots (run by the platform; their owner is given
as None here) and an organiser's explicit `allow_same_owner`. Tournaments whose other
entrants all have one owner are exempt from the table rule (nobody to collude against,
and their bots could not be seated apart anyway) but not from the deal-group rule:
splitting a group never makes a design impossible, and two bots of one owner pooling
what they saw at one table of a group would know the deal before playing it at the other
(the memorising bot of tests/tournaments/test_fair_formats.py did exactly that).

The owner rule sees accounts, not people: a stronger rule keeps remote bots of any owners
out of one deal group (tournaments.isolation, tournaments.scheduling.deal_groups, which
applies both).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

Owner = int | None  # None: a house bot, exempt


def owner_rule_applies(owners: Sequence[Owner]) -> bool:
    """False when at most one owner has non-house entrants (or none has two)."""
    counts = Counter(o for o in owners if o is not None)
    return len(counts) > 1 and max(counts.values()) > 1


def owner_classes(
    owners: Sequence[Owner] | None, *, allow_same_owner: bool = False, single_owner_exempt: bool = True
) -> list[int]:
    """A class per entrant: entrants of one class must never meet. House bots, and exempt
    tournaments, give every entrant a class of its own (`single_owner_exempt=False`: the
    deal-group rule, which a single owner does not escape)."""
    n = len(owners or ())
    if owners is None or allow_same_owner:
        return list(range(n))
    if single_owner_exempt and not owner_rule_applies(owners):
        return list(range(n))
    labels: dict[int, int] = {}
    classes = []
    for i, owner in enumerate(owners):
        if owner is None:
            classes.append(n + i)  # its own class
        else:
            classes.append(labels.setdefault(owner, len(labels)))
    return classes


def forbidden_pairs(classes: Sequence[int]) -> set[tuple[int, int]]:
    return {
        (a, b)
        for a in range(len(classes))
        for b in range(a + 1, len(classes))
        if classes[a] == classes[b]
    }


def check_owner_capacity(classes: Sequence[int], k: int) -> None:
    """Raise ValueError (clear, for the organiser) when no design can keep the rule."""
    counts = Counter(classes)
    n = len(classes)
    if len(counts) < k:
        raise ValueError(
            f"owner rule: tables of {k} need entrants of at least {k} different owners "
            f"(house bots count separately); there are {len(counts)}"
        )
    biggest = max(counts.values())
    if biggest * k > n:
        raise ValueError(
            f"owner rule: one owner has {biggest} of the {n} entrants; at tables of {k} an "
            f"owner can have at most {n // k} (each of their bots needs a table of its own in "
            "every round)"
        )
