"""Ladder matchmaking: tables of bots with close ratings, with some randomness.

An anchor is drawn among the bots that have waited longest (fewest recent tables, then at
random); the table is filled with the bots whose noisy rating is closest to the anchor's.
The noise (a normal draw, 100 Elo by default) keeps the same groups from meeting forever.
Bots of one owner never share a table unless the ladder allows it; house bots (run by the
platform) are exempt. A ladder whose other bots all have one owner is exempt too (nobody to
collude against): its caller decides that over all its entrants, not only the free ones
(tournaments.scheduling.owners.owner_rule_applies), and passes `allow_same_owner`.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Candidate:
    bot_id: int
    owner_id: int
    rating: float
    recent_tables: int = 0
    house: bool = False  # a house bot: exempt from the owner rule


def ladder_pick_tables(
    candidates: Sequence[Candidate],
    *,
    seats: int,
    tables: int,
    rng: random.Random,
    allow_same_owner: bool = False,
    noise: float = 100.0,
) -> list[list[int]]:
    """Up to `tables` tables of `seats` bot ids each; every bot at most once."""
    free = list(candidates)
    rng.shuffle(free)
    picked: list[list[int]] = []
    while len(picked) < tables and len(free) >= seats:
        free.sort(key=lambda c: c.recent_tables)
        least = free[0].recent_tables
        waiting = [c for c in free if c.recent_tables == least]
        anchor = rng.choice(waiting)
        noisy = {c.bot_id: c.rating + rng.gauss(0.0, noise) for c in free}
        others = sorted(
            (c for c in free if c.bot_id != anchor.bot_id),
            key=lambda c: abs(noisy[c.bot_id] - noisy[anchor.bot_id]),
        )
        table = [anchor]
        for c in others:
            if len(table) == seats:
                break
            if allow_same_owner or c.house or all(t.house or c.owner_id != t.owner_id for t in table):
                table.append(c)
        if len(table) < seats:
            free.remove(anchor)  # no compatible opponents for this anchor now
            continue
        ids = {c.bot_id for c in table}
        free = [c for c in free if c.bot_id not in ids]
        picked.append([c.bot_id for c in table])
    return picked
