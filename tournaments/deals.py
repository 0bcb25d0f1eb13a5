"""Deals: secret seeds, public commitments, and the reveal rule (docs/fair-play.md).

Every deal is a row drawn when its table (or the first table of its deal group) is created:
its seed comes from `secrets` (or, in a reproducible run, from HMAC-SHA256 of the
organiser's seed and the deal's key) and is never derived from anything public. The
commitment to it is public from then on. Deal (G, d) is revealed once every table of group
G has recorded every game that plays it, or is closed: until then no page, API response,
replay, id, error message or INFO log shows its seed or a hand dealt from it.

Writes here follow the services' rules (keyword-only, inside the caller's transaction).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Iterable

from django.db.models import Case, F, IntegerField, Min, OuterRef, Subquery, Value, When
from django.db.models.functions import Cast
from django.utils import timezone

from bots_sdk.fairplay import deal_commitment
from tournaments.models import Deal, Table, Tournament
from tournaments.play.lifecycle import CLOSED
from tournaments.statements import Names, marks, statement

# "Every deal of the group is finished here" for a closed table.
_ALL_DEALS = 2**31 - 1


def deal_seed_new() -> str:
    """A fresh secret deal seed: 128 bits from the operating system's CSPRNG."""
    return secrets.token_hex(16)


def deal_seed_reproducible(*, organiser_seed: str, group: int, index: int) -> str:
    """A reproducible run's deal seed: HMAC-SHA256(organiser seed, "deal/<group>/<index>")."""
    key = f"deal/{group}/{index}".encode()
    return hmac.new(organiser_seed.encode("utf-8"), key, hashlib.sha256).hexdigest()


def house_seed(*, tournament: Tournament, table: Table) -> str:
    """What seeds the house bots' choices at a table: secret too (a bot that knew it could
    predict a random house bot), reproducible only in a reproducible run."""
    if tournament.organiser_seed:
        key = f"house/{table.round}/{table.number}".encode()
        return hmac.new(tournament.organiser_seed.encode("utf-8"), key, hashlib.sha256).hexdigest()
    return secrets.token_hex(16)


def games_per_deal(*, tournament: Tournament, games_planned: int) -> int:
    """How many consecutive games of a table play one deal: its seats in the rotation format
    (a table's games are `duplicate_sets` rotations), else 1."""
    if tournament.deal_format == Tournament.DealFormat.ROTATION and tournament.duplicate_sets:
        return max(1, games_planned // tournament.duplicate_sets)
    return 1


def deals_per_table(*, tournament: Tournament, games_planned: int) -> int:
    per = games_per_deal(tournament=tournament, games_planned=games_planned)
    return -(-games_planned // per)


def deal_group_next(*, tournament: Tournament) -> int:
    """The first unused deal group of the tournament (call under the tournament's lock)."""
    last = (
        Table.objects.filter(tournament_id=tournament.pk)
        .order_by("-deal_group")
        .values_list("deal_group", flat=True)
        .first()
    )
    return (last or 0) + 1


def deals_create(*, tournament: Tournament, group: int, count: int) -> int:
    """Commit to deals 0..count-1 of a group (the ones missing): returns how many were new.

    Idempotent, so every table of a field-duplicate group may ask for its deals."""
    return deals_create_groups(tournament=tournament, counts={group: count})


def deals_create_groups(*, tournament: Tournament, counts: dict[int, int]) -> int:
    """`deals_create` for several groups at once ({group: count}): two queries."""
    have = set(
        Deal.objects.filter(tournament_id=tournament.pk, group__in=list(counts)).values_list("group", "index")
    )
    rows = []
    for group in sorted(counts):
        for index in range(counts[group]):
            if (group, index) in have:
                continue
            if tournament.organiser_seed:
                seed = deal_seed_reproducible(organiser_seed=tournament.organiser_seed, group=group, index=index)
            else:
                seed = deal_seed_new()
            rows.append(
                Deal(
                    tournament_id=tournament.pk, group=group, index=index, seed=seed,
                    commitment=deal_commitment(tournament.salt, seed),
                )
            )
    Deal.objects.bulk_create(rows, batch_size=1000)
    return len(rows)


def table_deal_seeds(*, tournament: Tournament, table: Table, first_game_index: int) -> list[str]:
    """The secret seed of every game still to play at the table, from `first_game_index`
    (the worker sends them on every attempt, so a resumed table plays the same deals).
    One query once the group's deals are committed (a table's first attempt commits them)."""
    per = games_per_deal(tournament=tournament, games_planned=table.games_planned)
    count = deals_per_table(tournament=tournament, games_planned=table.games_planned)
    seeds = _group_seeds(tournament.pk, table.deal_group)
    if any(i not in seeds for i in range(count)):
        deals_create(tournament=tournament, group=table.deal_group, count=count)
        seeds = _group_seeds(tournament.pk, table.deal_group)
    return [seeds[i // per] for i in range(first_game_index, table.games_planned)]


def _group_seeds(tournament_id: int, group: int) -> dict[int, str]:
    """{index: seed} of a deal group (written out: read on every attempt of every table)."""
    return dict(_group_seeds_sql.rows([tournament_id, group]))


@statement("deals.group-seeds")
def _group_seeds_sql() -> str:
    d = Names(Deal)
    return f"SELECT {d.index}, {d.seed} FROM {d} WHERE {d.tournament_id} = %s AND {d.group} = %s"


def deals_reveal(*, tournament: Tournament, groups: Iterable[int] | None = None) -> int:
    """Reveal every deal of these groups (all groups: None) that every table of its group
    has finished; returns how many were revealed now (one UPDATE per group).

    A table has finished deal d once it recorded every game playing it (its first
    `games_recorded` games are recorded: a table resumes from its next unrecorded game) or
    once it is closed. Two tables of one group recording at the same moment may each miss
    the other's uncommitted games: that only delays a reveal to the next recording or
    close, it never reveals early.
    """
    now = timezone.now()
    if groups is None:
        rotation = tournament.deal_format == Tournament.DealFormat.ROTATION and tournament.duplicate_sets
        return _deals_reveal_all(tournament, now, rotation)
    return sum(len(_reveal_group(tournament, group, now)) for group in sorted(set(groups)))


def deals_reveal_recording(*, tournament: Tournament, group: int, table_id: int, new_games: int) -> set[int]:
    """The recording path's reveal, run before the batch's games are saved (so that the
    rating order knows which of them are revealed): reveal the group's deals finished
    everywhere once table `table_id` counts `new_games` more recorded games. Returns the
    indices of the deals revealed now (one UPDATE)."""
    return _reveal_group(tournament, group, timezone.now(), pending=(table_id, new_games))


def _reveal_group(tournament: Tournament, group: int, now, pending: tuple[int, int] | None = None) -> set[int]:
    """One plain statement whose subquery is evaluated once: building it with the ORM cost
    the recording path more than running it. `pending`: (table id, games) the table is
    about to record in this transaction."""
    rotation = bool(tournament.deal_format == Tournament.DealFormat.ROTATION and tournament.duplicate_sets)
    params = [now, tournament.pk, group, *CLOSED, _ALL_DEALS, *(pending or ()),
              *([tournament.duplicate_sets] if rotation else []), tournament.pk, group]
    return {index for (index,) in _reveal_group_sql.rows(params, pending=pending is not None, rotation=rotation)}


@statement("deals.reveal-group", *({"pending": p, "rotation": r} for p in (True, False) for r in (True, False)))
def _reveal_group_sql(pending: bool, rotation: bool) -> str:
    """`pending`: a table's games about to be recorded count as recorded; `rotation`: a
    deal is finished after games_planned / duplicate_sets games (integer division)."""
    d, t = Names(Deal), Names(Table)
    recorded = f"({t.games_recorded} + CASE WHEN {t.id} = %s THEN %s ELSE 0 END)" if pending else t.games_recorded
    finished = f"{recorded} / ({t.games_planned} / %s)" if rotation else recorded
    return (
        f"UPDATE {d.TABLE} SET {d.revealed_at} = %s "
        f"WHERE {d.tournament_id} = %s AND {d.group} = %s AND {d.revealed_at} IS NULL "
        f"AND {d.index} < (SELECT MIN(CASE WHEN {t.status} IN ({marks(len(CLOSED))}) THEN %s ELSE {finished} END) "
        f"FROM {t} WHERE {t.tournament_id} = %s AND {t.deal_group} = %s) "
        f"RETURNING {d.index}"
    )


def _deals_reveal_all(tournament: Tournament, now, rotation) -> int:
    """Every group at once (a cancel): one UPDATE, a correlated subquery per deal."""
    games_recorded = F("games_recorded")
    finished = games_recorded / (F("games_planned") / Value(tournament.duplicate_sets)) if rotation else games_recorded
    per_table = Case(
        When(status__in=CLOSED, then=Value(_ALL_DEALS)),
        default=Cast(finished, IntegerField()),
        output_field=IntegerField(),
    )
    finished_everywhere = Subquery(
        Table.objects.filter(tournament_id=tournament.pk, deal_group=OuterRef("group")).order_by()
        .values("deal_group").annotate(m=Min(per_table)).values("m")
    )
    return Deal.objects.filter(
        tournament_id=tournament.pk, revealed_at__isnull=True, index__lt=finished_everywhere
    ).update(revealed_at=now)
