"""Tournaments: create (validated), edit a draft (by the same checks), entrants (added
as trusted entries: consent is tournaments.services.entries'), start, cancel, schedule
the first tables, finish; and the table planning they share with knockout rounds and ladder ticks (the owner rule, deal groups, creating a table
with its committed deals).

Services validate, write in one transaction, and enqueue follow-up work only after commit
(tournaments.jobs), so a rolled-back write never starts a task. Bad input raises Django's
ValidationError with field errors (the API turns it into a 400)."""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from datetime import datetime

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone
from django.utils.text import slugify

from bots_sdk.rules import PRESETS, Options
from tournaments.deals import (
    deal_group_next,
    deals_create,
    deals_create_groups,
    deals_per_table,
)
from tournaments.isolation import bot_isolated
from tournaments.jobs import enqueue_tables_on_commit
from tournaments.models import (
    START_RATING,
    Bot,
    Entrant,
    Table,
    TableSeat,
    Tournament,
)
from tournaments.play.lifecycle import (
    tables_cancel,
)
from tournaments.rating_order import ratings_advance
from tournaments.scheduling.deal_groups import arrange_deal_groups
from tournaments.scheduling.knockout import (
    knockout_tables,
)
from tournaments.scheduling.owners import (
    check_owner_capacity,
    owner_classes,
    owner_rule_applies,
)
from tournaments.scheduling.round_robin import round_robin_schedule
from tournaments.services.accounts import user_is_organiser
from tournaments.services.ratings import rating_pool_get, ratings_by_bot
from tournaments.services.recording import deals_reveal_played
from tournaments.services.verification import NOT_VERIFIED, bot_entry_check, bots_unverified


def _validate_rules(preset: str, options: dict, errors: dict) -> None:
    """The preset must be one of the engine's and the options valid on top of it (names and
    value types, as the engine reads them); the referee checks them again."""
    if preset not in PRESETS:
        errors["preset"] = f"Unknown preset {preset!r}; choose from {', '.join(PRESETS)}."
        return
    if not isinstance(options, dict):
        errors["options"] = "Options must be a JSON object."
        return
    unknown = sorted(set(options) - set(PRESETS[preset].to_dict()))
    if unknown:
        errors["options"] = f"Unknown option(s): {', '.join(unknown)}."
        return
    try:
        Options.from_dict(options, base=PRESETS[preset])
    except (ValueError, TypeError) as exc:
        errors["options"] = f"Invalid rule options: {exc}."


def _unique_slug(name: str) -> str:
    base = slugify(name)[:60] or "tournament"
    slug = base
    while Tournament.objects.filter(slug=slug).exists():
        slug = f"{base}-{secrets.token_hex(3)}"
    return slug


ROTATION_NEEDS_HOUSE_BOTS = (
    "Seat rotation repeats each deal to the same bots, so only house bots can play it "
    "(trusted entrants only); use independent deals."
)


def _validate_deal_format(format: str, fields: dict, errors: dict) -> None:
    deal_format = fields.get("deal_format") or Tournament.DealFormat.FIELD
    if deal_format not in Tournament.DealFormat.values:
        known = ", ".join(Tournament.DealFormat.values)
        errors["deal_format"] = f"Unknown deal format {deal_format!r}; choose from {known}."
    elif deal_format == Tournament.DealFormat.ROTATION:
        if format == Tournament.Format.LADDER:
            errors["deal_format"] = (
                "Seat rotation repeats each deal to the same bots: never for ladders, which "
                "anyone can join; use independent deals."
            )
        elif fields.get("games_per_table"):
            errors["deal_format"] = (
                "Seat rotation plays duplicate_sets sets of one deal in every seat; "
                "games_per_table is for independent deals."
            )


def _settings_errors(format: str, fields: dict) -> dict[str, str]:
    """Every check of a tournament's settings that needs more than one field, or the
    engine: what creation and a draft's edit both ask (field by field, no write)."""
    errors: dict[str, str] = {}
    _validate_rules(fields.get("preset") or "south", fields.get("options") or {}, errors)
    _validate_deal_format(format, fields, errors)
    seats = fields.get("seats_per_table") or 4
    if fields.get("games_per_table") and fields.get("duplicate_sets"):
        errors["games_per_table"] = "Set either games_per_table or duplicate_sets, not both."
    if format == Tournament.Format.KNOCKOUT and (fields.get("advance_per_table") or 2) >= seats:
        errors["advance_per_table"] = "Fewer players than seats per table must advance."
    opens, closes = fields.get("registration_opens_at"), fields.get("registration_closes_at")
    if opens and closes and closes <= opens:
        errors["registration_closes_at"] = "Registration must close after it opens."
    if (opens or closes) and not fields.get("open_registration"):
        errors["open_registration"] = (
            "A registration window is for an open tournament: open it to bot owners, or leave the window empty."
        )
    if format != Tournament.Format.LADDER and fields.get("season_days"):
        errors["season_days"] = "Only a ladder runs in seasons."
    organiser_seed = fields.get("seed") or ""
    if not isinstance(organiser_seed, str) or len(organiser_seed) > 64:
        errors["seed"] = "A tournament seed is a string of at most 64 characters."
    return errors


def _settings_save(tournament: Tournament) -> Tournament:
    """The model's own field checks, the one game at least a table must play, and the
    rating pool its preset and seats rate in; then saved. Shared by create and edit."""
    tournament.full_clean()
    if tournament.duplicate_sets == 0 and not tournament.games_per_table:
        raise ValidationError({"duplicate_sets": "Play at least one duplicate set or one game."})
    tournament.pool = (
        rating_pool_get(preset=tournament.preset, seats=tournament.seats_per_table) if tournament.rated else None
    )
    tournament.save()
    return tournament


def tournament_create(*, organiser, name: str, format: str, **fields) -> Tournament:
    """Create a tournament in draft; every field is validated before anything is saved.

    `seed` (optional) makes the run reproducible: every deal is then derived from it, so
    the organiser knows every deal, and every page and API response of the tournament says
    so. Without it every deal seed is a fresh secret (docs/fair-play.md)."""
    if not user_is_organiser(user=organiser):
        raise PermissionError("Only organisers can create tournaments.")
    if fields.get("open_registration") is None:
        # Ladders are open to every bot owner unless created otherwise; the rest by invitation.
        fields["open_registration"] = format == Tournament.Format.LADDER
    errors = _settings_errors(format, fields)
    if errors:
        raise ValidationError(errors)
    options = fields.pop("options", None) or {}
    preset = fields.pop("preset", None) or "south"
    organiser_seed = fields.pop("seed", None) or ""
    if fields.get("games_per_table"):
        fields["duplicate_sets"] = 0
    tournament = Tournament(
        organiser=organiser,
        name=name,
        format=format,
        slug=fields.pop("slug", None) or _unique_slug(name),
        organiser_seed=organiser_seed,
        **fields,
    )
    tournament.preset = preset
    tournament.options = options
    return _settings_save(tournament)


#: What a draft's edit may change: every setting creation takes (`seed` is the
#: organiser's seed; the rest are the model's fields of the same name).
EDITABLE_SETTINGS = (
    "name", "slug", "description", "format", "preset", "options", "seats_per_table",
    "duplicate_sets", "games_per_table", "move_time_ms", "time_bank_ms", "connect_deadline_s",
    "rated", "deal_format", "seed", "cycles", "advance_per_table", "ladder_tables_per_tick",
    "allow_same_owner", "verified_entry", "open_registration", "registration_opens_at",
    "registration_closes_at", "starts_at", "season_days", "season_regression",
)


def tournament_settings(tournament: Tournament) -> dict:
    """The draft's settings as creation takes them (what an edit starts from)."""
    values = {name: getattr(tournament, name) for name in EDITABLE_SETTINGS if name != "seed"}
    values["seed"] = tournament.organiser_seed
    return values


def _merged_settings(tournament: Tournament, changes: dict) -> dict:
    """The settings after `changes`: a number of games per table replaces duplicate sets
    and the other way round, as at creation only one of the two may be set."""
    merged = tournament_settings(tournament)
    merged.update(changes)
    if "duplicate_sets" in changes and "games_per_table" not in changes and changes["duplicate_sets"]:
        merged["games_per_table"] = None
    if "games_per_table" in changes and "duplicate_sets" not in changes and changes["games_per_table"]:
        merged["duplicate_sets"] = 0
    return merged


def tournament_update(*, tournament: Tournament, **changes) -> Tournament:
    """Change a draft's settings, any of EDITABLE_SETTINGS: checked as creation checks them
    (the same functions), all or nothing. Only a draft: once started its tables are
    planned from these settings. A change that the draft's entrants no longer fit (seat
    rotation with bots that are not house bots) is refused; the owner rule is Start's,
    as for a new draft."""
    unknown = sorted(set(changes) - set(EDITABLE_SETTINGS))
    if unknown:
        raise ValidationError({name: "Not a setting of a tournament." for name in unknown})
    with transaction.atomic():
        locked = Tournament.objects.select_for_update().get(pk=tournament.pk)
        if locked.status != Tournament.Status.DRAFT:
            raise ValidationError({"status": f"Only a draft can be edited; this one is {locked.status}."})
        merged = _merged_settings(locked, changes)
        errors = _settings_errors(merged["format"], merged)
        if merged.get("slug") != locked.slug and Tournament.objects.filter(slug=merged.get("slug")).exists():
            errors["slug"] = "A tournament with this slug exists."
        if (
            merged.get("deal_format") == Tournament.DealFormat.ROTATION
            and locked.entrants.filter(bot__house_bot="").exists()
        ):
            errors["deal_format"] = ROTATION_NEEDS_HOUSE_BOTS
        if errors:
            raise ValidationError(errors)
        if merged.get("games_per_table"):
            merged["duplicate_sets"] = 0
        locked.organiser_seed = merged.pop("seed") or ""
        merged["preset"] = merged.get("preset") or "south"
        merged["options"] = merged.get("options") or {}
        merged["deal_format"] = merged.get("deal_format") or Tournament.DealFormat.FIELD
        for name, value in merged.items():
            setattr(locked, name, value)
        return _settings_save(locked)


def _require_editable(tournament: Tournament) -> None:
    if tournament.status not in (Tournament.Status.DRAFT, Tournament.Status.SCHEDULED):
        raise ValidationError({"status": f"The tournament is {tournament.status}; entrants are fixed."})


def tournament_entrant_add(*, tournament: Tournament, bot: Bot) -> Entrant:
    if tournament.format != Tournament.Format.LADDER:
        _require_editable(tournament)
    elif tournament.status in (Tournament.Status.FINISHED, Tournament.Status.CANCELLED):
        raise ValidationError({"status": "The ladder is closed."})
    if bot.revoked_at is not None:
        raise ValidationError({"bot": "This bot is revoked."})
    if tournament.deal_format == Tournament.DealFormat.ROTATION and not bot.house_bot:
        raise ValidationError({"bot": ROTATION_NEEDS_HOUSE_BOTS})
    if tournament.verified_entry:
        bot_entry_check(bot=bot)
    if Entrant.objects.filter(tournament=tournament, bot=bot).exists():
        raise ValidationError({"bot": "This bot is already entered."})
    return Entrant.objects.create(tournament=tournament, bot=bot)


def tournament_entrant_remove(*, tournament: Tournament, bot: Bot) -> None:
    if tournament.format == Tournament.Format.LADDER:
        Entrant.objects.filter(tournament=tournament, bot=bot).update(
            status=Entrant.Status.WITHDRAWN
        )
        return
    _require_editable(tournament)
    Entrant.objects.filter(tournament=tournament, bot=bot).delete()


#: `tournament_start`'s default: at the time the draft was given (its `starts_at`), else now.
AS_DRAFTED = object()


def invitations_pending_problem(*, tournament: Tournament) -> str | None:
    """Why Start refuses while invitations are pending (None: none is): names the bots."""
    invited = list(tournament.entrants.filter(status=Entrant.Status.INVITED).select_related("bot__owner")[:11])
    if not invited:
        return None
    names = ", ".join(f"{e.bot.name} (of {e.bot.owner.username})" for e in invited[:10])
    more = ", …" if len(invited) > 10 else ""
    return (
        f"Waiting for the owners to accept their invitations: {names}{more}. An invited bot plays only "
        "once its owner accepts; remove it (Edit) to start without it."
    )


def tournament_start(*, tournament: Tournament, starts_at: datetime | None | object = AS_DRAFTED) -> Tournament:
    """Schedule the tournament; play begins now or at `starts_at` (Celery beat checks);
    by default at the draft's own `starts_at` (set in its settings), now if it has none.
    Refused while an invitation is pending (docs/organiser-guide.md, "Entrants")."""
    if starts_at is AS_DRAFTED:
        starts_at = tournament.starts_at
    assert starts_at is None or isinstance(starts_at, datetime)
    if tournament.status != Tournament.Status.DRAFT:
        raise ValidationError({"status": f"Only a draft can be started; this one is {tournament.status}."})
    # The field as it will be once every invitation is accepted: its size and owner rule are
    # said now, with the invitations still pending (a ladder's invited bots simply wait
    # outside it: its tick seats active entrants only).
    playing = (Entrant.Status.ACTIVE, Entrant.Status.INVITED)
    entrants_now = list(
        tournament.entrants.filter(status__in=playing).select_related("bot__owner").order_by("id")
    )
    minimum = 2 if tournament.format != Tournament.Format.ROUND_ROBIN else tournament.seats_per_table
    if tournament.format == Tournament.Format.LADDER:
        minimum = 0
    if len(entrants_now) < minimum:
        raise ValidationError({"entrants": f"At least {minimum} entrants are needed, there are {len(entrants_now)}."})
    if tournament.deal_format == Tournament.DealFormat.ROTATION and any(not e.bot.house_bot for e in entrants_now):
        raise ValidationError({"deal_format": ROTATION_NEEDS_HOUSE_BOTS})
    if tournament.verified_entry:
        # Checked again: an approval may have been revoked, or an address changed, since entry.
        refused = bots_unverified(bots=[e.bot for e in entrants_now])
        if refused:
            raise ValidationError({"entrants": [
                NOT_VERIFIED.format(bot=b.name, owner=b.owner.username) + " Remove it or have it verified."
                for b in refused
            ]})
    problems = [owner_rule_problem(
        format=tournament.format, seats_per_table=tournament.seats_per_table,
        allow_same_owner=tournament.allow_same_owner,
        bots=[e.bot for e in entrants_now],
    )]
    if tournament.format != Tournament.Format.LADDER:
        problems.append(invitations_pending_problem(tournament=tournament))
    if any(problems):
        raise ValidationError({"entrants": [p for p in problems if p]})
    with transaction.atomic():
        updated = Tournament.objects.filter(pk=tournament.pk, status=Tournament.Status.DRAFT).update(
            status=Tournament.Status.SCHEDULED, starts_at=starts_at
        )
        if not updated:
            raise ValidationError({"status": "The tournament was started concurrently."})
        if starts_at is None or starts_at <= timezone.now():
            # Started now: its first tables are created here, so the answer says "running"
            # with its start time (not "scheduled" with none); their play is enqueued after
            # commit. A later start is the beat tick's (tournament_schedule_task).
            enqueue_tables_on_commit(tournament_schedule(tournament_id=tournament.pk))
    tournament.refresh_from_db()
    return tournament


def tournament_cancel(*, tournament: Tournament, reason: str = "") -> Tournament:
    """Cancel: tables not yet played are cancelled; recorded games and ratings stay."""
    with transaction.atomic():
        locked = Tournament.objects.select_for_update().get(pk=tournament.pk)
        if locked.status in (Tournament.Status.FINISHED, Tournament.Status.CANCELLED):
            raise ValidationError({"status": f"The tournament is already {locked.status}."})
        Tournament.objects.filter(pk=tournament.pk).update(
            status=Tournament.Status.CANCELLED, finished_at=timezone.now(), status_reason=reason[:500]
        )
        tables_cancel(tournament_id=tournament.pk)
        # Every table is closed: no deal will be played any more, so every deal is
        # revealed, and then the games recorded before the cancel are all rated.
        deals_reveal_played(tournament=tournament)
        ratings_advance(tournament=locked)
    tournament.refresh_from_db()
    return tournament


def entrant_owners(*, tournament: Tournament, entrants: Sequence[Entrant]) -> list[int | None] | None:
    """Owner per entrant for the owner rule (None: a house bot); None when the tournament
    allows same-owner tables (docs/organiser-guide.md, "Fair play")."""
    if tournament.allow_same_owner:
        return None
    return [None if e.bot.house_bot else e.bot.owner_id for e in entrants]


OWNER_RULE_WAY_OUT = (
    "Ways out: add house bots (always connected, open to every organiser) or bots of other "
    "owners; or, to compare one owner's bots with each other (your v1 against your v2), allow "
    "one owner's bots at a table (allow_same_owner): the tournament is then labelled “one "
    "owner's bots may share a table” — a private comparison, best unrated."
)


def owner_rule_problem(
    *, format: str, seats_per_table: int, allow_same_owner: bool, bots: Sequence[Bot]
) -> str | None:
    """Why the owner rule cannot seat these bots (None when it can): what Start refuses,
    and what the organiser's form checks before a draft is saved, in one place. The message
    names the owners in conflict and the ways out. Ladders are checked at every tick
    instead (their entrants come and go; the page says why no table starts). Reads each
    bot's owner: pass bots with `owner` loaded."""
    if allow_same_owner:
        return None
    owners = [None if b.house_bot else b.owner_id for b in bots]
    if not owner_rule_applies(owners):
        return None
    try:
        if format == Tournament.Format.ROUND_ROBIN:
            check_owner_capacity(owner_classes(owners), seats_per_table)
        elif format == Tournament.Format.KNOCKOUT:
            knockout_tables(list(range(len(owners))), seats_per_table, owners)
        else:
            return None
    except ValueError as exc:
        return f"{exc}. {_owners_in_conflict(bots)} {OWNER_RULE_WAY_OUT}"
    return None


def _owners_in_conflict(bots: Sequence[Bot]) -> str:
    """“Bots of one owner never share a table, and alice enters 2 (a-v1, a-v2) …”."""
    by_owner: dict[int, list[Bot]] = {}
    for bot in bots:
        if not bot.house_bot:
            by_owner.setdefault(bot.owner_id, []).append(bot)
    several = sorted((b for b in by_owner.values() if len(b) > 1), key=lambda b: (-len(b), b[0].owner.username))
    parts = [
        f"{group[0].owner.username} enters {len(group)} ({', '.join(b.name for b in group[:6])}"
        f"{', …' if len(group) > 6 else ''})"
        for group in several[:4]
    ]
    houses = sum(1 for b in bots if b.house_bot)
    return (
        f"Bots of one owner never share a table, and here {', '.join(parts)}; "
        f"{len(by_owner)} owner{'s' if len(by_owner) != 1 else ''} in all"
        + (f", and {houses} house bot{'s' if houses != 1 else ''} (each counts as an owner of its own)." if houses else ".")
    )


def _deal_groups(tournament: Tournament, tables: list[list[Entrant]]) -> list[tuple[list[Entrant], int]]:
    """Each table with its deal group offset: in the field format the tables created
    together (a knockout round, a ladder tick: their players are disjoint) of one size
    share groups, at most one table of a group with bots that are not isolated
    (tournaments.isolation, tournaments.scheduling.deal_groups) and no owner twice in a
    group; otherwise every table its own group."""
    if tournament.deal_format != Tournament.DealFormat.FIELD:
        return [(t, i) for i, t in enumerate(tables)]
    everyone = [e for t in tables for e in t]
    isolated = {e.pk: bot_isolated(e.bot) for e in everyone}
    owners = entrant_owners(tournament=tournament, entrants=everyone)
    classes: dict[int, int] | None = None
    if owners is not None:
        # Even one owner's bots alone are kept out of one deal group (owners module).
        grouped = owner_classes(owners, single_owner_exempt=False)
        classes = dict(zip([e.pk for e in everyone], grouped, strict=True))
    out: list[tuple[int, int]] = []
    next_group = 0
    for size in sorted({len(t) for t in tables}, reverse=True):
        same = [i for i, t in enumerate(tables) if len(t) == size]
        split = arrange_deal_groups([[e.pk for e in tables[i]] for i in same], isolated=isolated, classes=classes)
        for i, g in zip(same, split, strict=True):
            out.append((i, next_group + g))
        next_group += max(split) + 1
    out.sort()
    return [(tables[i], g) for i, g in out]


def _table_create(
    tournament: Tournament, round_no: int, number: int, entrants: list[Entrant], *, deal_group: int
) -> Table:
    """A table and its seats, and the commitments to its group's deals (published before
    play; the secret seeds are drawn now). Call under the tournament's lock."""
    games_planned = tournament.games_per_table or tournament.duplicate_sets * len(entrants)
    table = Table.objects.create(
        tournament=tournament,
        round=round_no,
        number=number,
        deal_group=deal_group,
        games_planned=games_planned,
    )
    TableSeat.objects.bulk_create(
        TableSeat(table=table, seat=s, entrant=e) for s, e in enumerate(entrants)
    )
    deals_create(
        tournament=tournament, group=deal_group,
        count=deals_per_table(tournament=tournament, games_planned=games_planned),
    )
    return table


def _tables_create_bulk(
    tournament: Tournament, specs: list[tuple[int, int, list[Entrant], int]]
) -> list[Table]:
    """`_table_create` for many tables at once, (round, number, entrants, deal group) each:
    a round robin's whole schedule in four queries instead of four per table."""
    tables = Table.objects.bulk_create([
        Table(tournament=tournament, round=round_no, number=number, deal_group=deal_group,
              games_planned=tournament.games_per_table or tournament.duplicate_sets * len(entrants))
        for round_no, number, entrants, deal_group in specs
    ])
    TableSeat.objects.bulk_create([
        TableSeat(table=table, seat=s, entrant=e)
        for table, (_, _, entrants, _) in zip(tables, specs, strict=True) for s, e in enumerate(entrants)
    ])
    counts: dict[int, int] = {}
    for table in tables:
        per_table = deals_per_table(tournament=tournament, games_planned=table.games_planned)
        counts[table.deal_group] = max(counts.get(table.deal_group, 0), per_table)
    deals_create_groups(tournament=tournament, counts=counts)
    return tables


def tables_create(
    *, tournament: Tournament, round_no: int, tables: list[list[Entrant]], first_number: int = 1
) -> list[int]:
    """Create tables played together (a knockout round, a ladder tick), numbered from
    `first_number`, in deal groups after the tournament's groups so far (_deal_groups: the
    owner rule holds within each group); returns their ids. Call under the tournament's lock."""
    group = deal_group_next(tournament=tournament)
    return [
        _table_create(tournament, round_no, number, seated, deal_group=group + offset).pk
        for number, (seated, offset) in enumerate(_deal_groups(tournament, tables), start=first_number)
    ]


def tournament_schedule(*, tournament_id: int) -> list[int]:
    """Create the tournament's first tables (idempotent); returns the tables to play."""
    with transaction.atomic():
        tournament = Tournament.objects.select_for_update().get(pk=tournament_id)
        if tournament.status == Tournament.Status.RUNNING:
            return list(tournament.tables.filter(status=Table.Status.PENDING).values_list("id", flat=True))
        if tournament.status != Tournament.Status.SCHEDULED:
            return []
        # Disqualified before the start: listed, never seated (no invitation is pending: Start).
        entrants = list(tournament.entrants.filter(status=Entrant.Status.ACTIVE).select_related("bot").order_by("id"))
        ratings = ratings_by_bot(pool=tournament.pool, bot_ids=[e.bot_id for e in entrants])
        # Seed by rating (unrated bots start at 1500), then by entry order.
        entrants.sort(key=lambda e: (-ratings.get(e.bot_id, START_RATING), e.id))
        for rank, entrant in enumerate(entrants, start=1):
            entrant.seed_rank = rank
            entrant.rating_at_start = ratings.get(entrant.bot_id, START_RATING)
        Entrant.objects.bulk_update(entrants, ["seed_rank", "rating_at_start"])
        k = tournament.seats_per_table
        if tournament.format == Tournament.Format.ROUND_ROBIN:
            group = deal_group_next(tournament=tournament)
            schedule = round_robin_schedule(
                len(entrants), k, cycles=tournament.cycles,
                owners=entrant_owners(tournament=tournament, entrants=entrants),
                field=tournament.deal_format == Tournament.DealFormat.FIELD,
                isolated=[bot_isolated(e.bot) for e in entrants],
            )
            tournament.design = schedule.design[:64]
            # The scheduler numbers its deal groups from 1 (tables of one group play the
            # same deals); they follow the tournament's groups so far. Each table keeps its
            # round of the schedule; numbers run on over the rounds (plan order).
            _tables_create_bulk(tournament, [
                (table.round, number, [entrants[i] for i in table.seats], group + table.deal_group - 1)
                for number, table in enumerate(schedule.tables, start=1)
            ])
        elif tournament.format == Tournament.Format.KNOCKOUT:
            owners = entrant_owners(tournament=tournament, entrants=entrants)
            tables = knockout_tables(entrants, k, owners)
            tables_create(tournament=tournament, round_no=1, tables=tables)
            tournament.design = "knockout, serpentine seeding"
        else:
            tournament.design = "ladder"
        tournament.status = Tournament.Status.RUNNING
        tournament.started_at = timezone.now()
        tournament.save(update_fields=["status", "started_at", "design"])
        return list(tournament.tables.filter(status=Table.Status.PENDING).values_list("id", flat=True))


# --- playing tables --------------------------------------------------------------------


def tournament_finish(*, tournament_id: int) -> bool:
    """Mark the tournament finished; True only for the one call that did it."""
    updated = Tournament.objects.filter(pk=tournament_id, status=Tournament.Status.RUNNING).update(
        status=Tournament.Status.FINISHED, finished_at=timezone.now()
    )
    return bool(updated)
