"""Every write of the tournaments app.

Services validate, write in one transaction, and enqueue follow-up work only after commit,
so a rolled-back write never starts a task. Bad input raises Django's ValidationError with
field errors (the API turns it into a 400). Recording is idempotent: a game is unique by
(table, index), and the game, its replay and its rating updates commit together.
"""

from __future__ import annotations

import random
import secrets
import zlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone
from django.utils.text import slugify

from bots_sdk.rules import PRESETS, Options
from referee_service.house import house_bot_names
from tournaments.bulk import insert_rows
from tournaments.deals import (
    deal_group_next,
    deals_create,
    deals_per_table,
    deals_reveal,
    deals_reveal_recording,
    games_per_deal,
    house_seed,
    table_deal_seeds,
)
from tournaments.jobs import Job, enqueue_on_commit
from tournaments.models import (
    START_RATING,
    ApiToken,
    Bot,
    BotVersion,
    Deal,
    Entrant,
    Game,
    GameSeat,
    Rating,
    RatingChange,
    RatingPool,
    Replay,
    Table,
    TableSeat,
    Tournament,
)
from tournaments.rating_order import DueGame, ratings_advance, ratings_apply, ratings_take_due
from tournaments.ratings.elo import elo_deltas
from tournaments.referee import GameResult, TablePlan, participant_key
from tournaments.scheduling.knockout import (
    SeatResult,
    knockout_advance_count,
    knockout_rank_table,
    knockout_tables,
)
from tournaments.scheduling.ladder import Candidate, ladder_pick_tables
from tournaments.scheduling.owners import (
    check_owner_capacity,
    owner_classes,
    owner_rule_applies,
    split_deal_groups,
)
from tournaments.scheduling.round_robin import round_robin_schedule
from tournaments.table_lifecycle import (
    CLOSED,
    Event,
    next_status,
    table_close,
    table_progress,
    table_start,
    tables_cancel,
)
from tournaments.tokens import (
    API_TOKEN_PREFIX,
    BOT_TOKEN_PREFIX,
    token_display_prefix,
    token_generate,
    token_hash,
)

# --- users, tokens, bots ---------------------------------------------------------------


def user_is_organiser(*, user) -> bool:
    return bool(
        user
        and user.is_authenticated
        and (user.is_staff or user.has_perm("tournaments.organise_tournaments"))
    )


def user_can_manage_tournament(*, user, tournament: Tournament) -> bool:
    """Who may change a tournament (entrants, start, cancel): an organiser, on their own
    tournament; staff on any. The API, the organiser pages and the page's buttons ask this."""
    return user_is_organiser(user=user) and (user.is_staff or tournament.organiser_id == user.pk)


def api_token_create(*, user, name: str = "") -> tuple[ApiToken, str]:
    """A new API token; the clear token is returned once and never stored."""
    key = token_generate(prefix=API_TOKEN_PREFIX)
    token = ApiToken.objects.create(
        user=user, name=name[:100], key_hash=token_hash(key), prefix=token_display_prefix(key)
    )
    return token, key


def api_token_revoke(*, token: ApiToken) -> None:
    if token.revoked_at is None:
        token.revoked_at = timezone.now()
        token.save(update_fields=["revoked_at"])


def bot_create(
    *, owner, name: str, description: str = "", house_bot: str = ""
) -> tuple[Bot, str | None]:
    """Register a bot; returns the bot and its token (None for house bots), shown once."""
    if house_bot and house_bot not in house_bot_names():
        known = ", ".join(sorted(house_bot_names()))
        raise ValidationError({"house_bot": f"Unknown house bot; choose from {known}."})
    if house_bot and not owner.is_staff:
        raise ValidationError({"house_bot": "Only staff can register house bots."})
    if Bot.objects.filter(name__iexact=name).exists():
        raise ValidationError({"name": "A bot with this name already exists."})
    bot = Bot(owner=owner, name=name, description=description, house_bot=house_bot)
    token = None
    if not house_bot:
        token = token_generate(prefix=BOT_TOKEN_PREFIX)
        bot.token_hash = token_hash(token)
        bot.token_prefix = token_display_prefix(token)
        bot.token_created_at = timezone.now()
    bot.full_clean()
    bot.save()
    return bot, token


def bot_token_rotate(*, bot: Bot) -> str:
    """Replace the bot's token (the old one stops working at once); also un-revokes."""
    if bot.house_bot:
        raise ValidationError({"house_bot": "House bots have no token."})
    token = token_generate(prefix=BOT_TOKEN_PREFIX)
    bot.token_hash = token_hash(token)
    bot.token_prefix = token_display_prefix(token)
    bot.token_created_at = timezone.now()
    bot.revoked_at = None
    bot.save(update_fields=["token_hash", "token_prefix", "token_created_at", "revoked_at"])
    return token


def bot_revoke(*, bot: Bot) -> None:
    """Revoke the bot's token: it can no longer connect (its games stay)."""
    bot.token_hash = None
    bot.revoked_at = timezone.now()
    bot.save(update_fields=["token_hash", "revoked_at"])


def bot_update(*, bot: Bot, description: str | None = None) -> Bot:
    if description is not None:
        bot.description = description
        bot.full_clean()
        bot.save(update_fields=["description"])
    return bot


def bot_version_touch(*, bot_id: int, version: str) -> BotVersion | None:
    """Note the version a bot reported; re-seeing an old version makes it current again."""
    if not version:
        return None
    obj, created = BotVersion.objects.get_or_create(bot_id=bot_id, version=version[:64])
    if not created:
        latest = BotVersion.objects.filter(bot_id=bot_id).order_by("-first_seen_at", "-id").first()
        if latest is not None and latest.pk != obj.pk:
            obj.first_seen_at = timezone.now()
            obj.save(update_fields=["first_seen_at"])
    return obj


def bot_versions_note(*, connected: dict[str, str], bot_ids: Iterable[int]) -> None:
    """Record the versions the referee reports for these bots (before a table starts)."""
    for bot_id in bot_ids:
        version = connected.get(str(bot_id))
        if version:
            bot_version_touch(bot_id=bot_id, version=version)


# --- rating pools ----------------------------------------------------------------------


def rating_pool_get(*, preset: str, seats: int) -> RatingPool:
    pool, _ = RatingPool.objects.get_or_create(
        preset=preset, seats=seats, defaults={"k_factor": settings.TIENLEN_DEFAULT_K_FACTOR}
    )
    return pool


# --- tournaments -----------------------------------------------------------------------


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


def tournament_create(*, organiser, name: str, format: str, **fields) -> Tournament:
    """Create a tournament in draft; every field is validated before anything is saved.

    `seed` (optional) makes the run reproducible: every deal is then derived from it, so
    the organiser knows every deal, and every page and API response of the tournament says
    so. Without it every deal seed is a fresh secret (docs/fair-play.md)."""
    if not user_is_organiser(user=organiser):
        raise PermissionError("Only organisers can create tournaments.")
    errors: dict[str, str] = {}
    options = fields.get("options") or {}
    preset = fields.get("preset") or "south"
    _validate_rules(preset, options, errors)
    _validate_deal_format(format, fields, errors)
    seats = fields.get("seats_per_table", 4)
    if fields.get("games_per_table") and fields.get("duplicate_sets"):
        errors["games_per_table"] = "Set either games_per_table or duplicate_sets, not both."
    if format == Tournament.Format.KNOCKOUT and fields.get("advance_per_table", 2) >= seats:
        errors["advance_per_table"] = "Fewer players than seats per table must advance."
    organiser_seed = fields.pop("seed", None) or ""
    if not isinstance(organiser_seed, str) or len(organiser_seed) > 64:
        errors["seed"] = "A tournament seed is a string of at most 64 characters."
    if errors:
        raise ValidationError(errors)
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
    tournament.full_clean()
    if tournament.duplicate_sets == 0 and not tournament.games_per_table:
        raise ValidationError({"duplicate_sets": "Play at least one duplicate set or one game."})
    if tournament.rated:
        tournament.pool = rating_pool_get(preset=tournament.preset, seats=tournament.seats_per_table)
    tournament.save()
    return tournament


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
    if Entrant.objects.filter(tournament=tournament, bot=bot).exists():
        raise ValidationError({"bot": "This bot is already entered."})
    return Entrant.objects.create(tournament=tournament, bot=bot)


def ladder_join(*, tournament: Tournament, bot: Bot, user) -> Entrant:
    """A bot owner enters their own bot in an open ladder (organisers fill other formats)."""
    if bot.owner_id != user.pk:
        raise PermissionError("Only the bot's owner can enter it.")
    if tournament.format != Tournament.Format.LADDER:
        raise ValidationError({"tournament": "Only ladders are open to bot owners; ask the organiser."})
    existing = Entrant.objects.filter(tournament=tournament, bot=bot).first()
    if existing is not None and existing.status == Entrant.Status.WITHDRAWN:
        existing.status = Entrant.Status.ACTIVE
        existing.save(update_fields=["status"])
        return existing
    return tournament_entrant_add(tournament=tournament, bot=bot)


def ladder_leave(*, tournament: Tournament, bot: Bot, user) -> None:
    if bot.owner_id != user.pk:
        raise PermissionError("Only the bot's owner can withdraw it.")
    if tournament.format != Tournament.Format.LADDER:
        raise ValidationError({"tournament": "Only ladders can be left; ask the organiser."})
    tournament_entrant_remove(tournament=tournament, bot=bot)


def tournament_entrant_remove(*, tournament: Tournament, bot: Bot) -> None:
    if tournament.format == Tournament.Format.LADDER:
        Entrant.objects.filter(tournament=tournament, bot=bot).update(
            status=Entrant.Status.WITHDRAWN
        )
        return
    _require_editable(tournament)
    Entrant.objects.filter(tournament=tournament, bot=bot).delete()


def tournament_start(*, tournament: Tournament, starts_at: datetime | None = None) -> Tournament:
    """Schedule the tournament; play begins now or at `starts_at` (Celery beat checks)."""
    if tournament.status != Tournament.Status.DRAFT:
        raise ValidationError({"status": f"Only a draft can be started; this one is {tournament.status}."})
    entrants = tournament.entrants.count()
    minimum = 2 if tournament.format != Tournament.Format.ROUND_ROBIN else tournament.seats_per_table
    if tournament.format == Tournament.Format.LADDER:
        minimum = 0
    if entrants < minimum:
        raise ValidationError({"entrants": f"At least {minimum} entrants are needed, there are {entrants}."})
    if (
        tournament.deal_format == Tournament.DealFormat.ROTATION
        and tournament.entrants.filter(bot__house_bot="").exists()
    ):
        raise ValidationError({"deal_format": ROTATION_NEEDS_HOUSE_BOTS})
    problem = _owner_rule_problem(tournament, list(tournament.entrants.select_related("bot")))
    if problem:
        raise ValidationError({"entrants": problem})
    with transaction.atomic():
        updated = Tournament.objects.filter(pk=tournament.pk, status=Tournament.Status.DRAFT).update(
            status=Tournament.Status.SCHEDULED, starts_at=starts_at
        )
        if not updated:
            raise ValidationError({"status": "The tournament was started concurrently."})
        if starts_at is None or starts_at <= timezone.now():
            enqueue_on_commit(Job.SCHEDULE_TOURNAMENT, tournament.pk)
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
        _deals_reveal(tournament)
        ratings_advance(tournament=locked)
    tournament.refresh_from_db()
    return tournament


def _bot_ratings(pool: RatingPool | None, bot_ids: Iterable[int]) -> dict[int, float]:
    if pool is None:
        return {}
    return dict(Rating.objects.filter(pool=pool, bot_id__in=list(bot_ids)).values_list("bot_id", "rating"))


def _entrant_owners(tournament: Tournament, entrants: Sequence[Entrant]) -> list[int | None] | None:
    """Owner per entrant for the owner rule (None: a house bot); None when the tournament
    allows same-owner tables (docs/organiser-guide.md, "Fair play")."""
    if tournament.allow_same_owner:
        return None
    return [None if e.bot.house_bot else e.bot.owner_id for e in entrants]


def _owner_rule_problem(tournament: Tournament, entrants: Sequence[Entrant]) -> str | None:
    """Why the owner rule cannot be kept with these entrants (None when it can)."""
    owners = _entrant_owners(tournament, entrants)
    if owners is None or not owner_rule_applies(owners):
        return None
    classes = owner_classes(owners)
    k = tournament.seats_per_table
    try:
        if tournament.format == Tournament.Format.ROUND_ROBIN:
            check_owner_capacity(classes, k)
        elif tournament.format == Tournament.Format.KNOCKOUT:
            knockout_tables(list(range(len(owners))), k, owners)
    except ValueError as exc:
        return str(exc)
    return None


def _deal_groups(tournament: Tournament, tables: list[list[Entrant]]) -> list[tuple[list[Entrant], int]]:
    """Each table with its deal group offset: in the field format the tables created
    together (a knockout round, a ladder tick: their players are disjoint) of one size share
    a group, split so no owner is twice in a group; otherwise every table its own group."""
    if tournament.deal_format != Tournament.DealFormat.FIELD:
        return [(t, i) for i, t in enumerate(tables)]
    owners = _entrant_owners(tournament, [e for t in tables for e in t])
    classes: dict[int, int] = {}
    if owners is not None:
        # Even one owner's bots alone are kept out of one deal group (owners module).
        grouped = owner_classes(owners, single_owner_exempt=False)
        classes = dict(zip([e.pk for t in tables for e in t], grouped, strict=True))
    out: list[tuple[list[Entrant], int]] = []
    next_group = 0
    for size in sorted({len(t) for t in tables}, reverse=True):
        same = [i for i, t in enumerate(tables) if len(t) == size]
        split = split_deal_groups(
            [[e.pk for e in tables[i]] for i in same], classes or _SelfClasses()
        )
        for i, g in zip(same, split, strict=True):
            out.append((i, next_group + g))
        next_group += max(split) + 1
    out.sort()
    return [(tables[i], g) for i, g in out]


class _SelfClasses(dict):
    """Every entrant its own owner class (no owner rule)."""

    def __missing__(self, key: int) -> int:
        return key


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


def tournament_schedule(*, tournament_id: int) -> list[int]:
    """Create the tournament's first tables (idempotent); returns the tables to play."""
    with transaction.atomic():
        tournament = Tournament.objects.select_for_update().get(pk=tournament_id)
        if tournament.status == Tournament.Status.RUNNING:
            return list(tournament.tables.filter(status=Table.Status.PENDING).values_list("id", flat=True))
        if tournament.status != Tournament.Status.SCHEDULED:
            return []
        entrants = list(tournament.entrants.select_related("bot").order_by("id"))
        ratings = _bot_ratings(tournament.pool, [e.bot_id for e in entrants])
        # Seed by rating (unrated bots start at 1500), then by entry order.
        entrants.sort(key=lambda e: (-ratings.get(e.bot_id, START_RATING), e.id))
        for rank, entrant in enumerate(entrants, start=1):
            entrant.seed_rank = rank
            entrant.rating_at_start = ratings.get(entrant.bot_id, START_RATING)
        Entrant.objects.bulk_update(entrants, ["seed_rank", "rating_at_start"])
        k = tournament.seats_per_table
        group = deal_group_next(tournament=tournament)
        if tournament.format == Tournament.Format.ROUND_ROBIN:
            schedule = round_robin_schedule(
                len(entrants), k, cycles=tournament.cycles,
                owners=_entrant_owners(tournament, entrants),
                field=tournament.deal_format == Tournament.DealFormat.FIELD,
            )
            tournament.design = schedule.design[:64]
            # The scheduler numbers its deal groups from 1 (tables of one group play the
            # same deals); they follow the tournament's groups so far.
            for number, table in enumerate(schedule.tables, start=1):
                _table_create(tournament, 1, number, [entrants[i] for i in table.seats],
                              deal_group=group + table.deal_group - 1)
        elif tournament.format == Tournament.Format.KNOCKOUT:
            owners = _entrant_owners(tournament, entrants)
            tables = knockout_tables(entrants, k, owners)
            for number, (seated, offset) in enumerate(_deal_groups(tournament, tables), start=1):
                _table_create(tournament, 1, number, seated, deal_group=group + offset)
            tournament.design = "knockout, serpentine seeding"
        else:
            tournament.design = "ladder"
        tournament.status = Tournament.Status.RUNNING
        tournament.started_at = timezone.now()
        tournament.save(update_fields=["status", "started_at", "design"])
        return list(tournament.tables.filter(status=Table.Status.PENDING).values_list("id", flat=True))


# --- playing tables --------------------------------------------------------------------


def table_plan(*, table_id: int) -> TablePlan | None:
    """Mark a table running and say where to resume; None when there is nothing to play."""
    with transaction.atomic():
        table = Table.objects.select_for_update().select_related("tournament").get(pk=table_id)
        tournament = table.tournament
        if tournament.status != Tournament.Status.RUNNING:
            return None
        now = timezone.now()
        if not table_start(table=table, now=now):
            return None
        seats = list(table.seats.select_related("entrant__bot").order_by("seat"))
        last = table.games.order_by("-index").select_related("replay").first()
        first = 0 if last is None else last.index + 1
        deal_seeds = table_deal_seeds(tournament=tournament, table=table, first_game_index=first)
    rotation = games_per_deal(tournament=tournament, games_planned=table.games_planned) > 1
    # Field duplicates: every game a starting game, so every table of the group plays deal
    # i the same way (nothing carries over from the table's previous game).
    field_format = tournament.deal_format == Tournament.DealFormat.FIELD
    resume_leader = resume_starting = None
    if last is not None and not rotation and not field_format:
        result = _replay_dict(last.replay).get("result", {})
        resume_leader = result.get("next_leader")
        resume_starting = bool(result.get("next_starting", False))
    waited = (now - table.waiting_since).total_seconds()
    remaining_s = tournament.connect_deadline_s - waited
    return TablePlan(
        table_id=table.pk,
        referee_table_id=f"t{tournament.pk}-r{table.round}-n{table.number}",
        participants=[_participant(s) for s in seats],
        preset=tournament.preset,
        options=tournament.options or {},
        # Rotation: duplicate sets (one deal in every seat); otherwise independent games.
        games=0 if rotation else table.games_planned,
        duplicate_sets=tournament.duplicate_sets if rotation else 0,
        move_time_ms=tournament.move_time_ms,
        time_bank_ms=tournament.time_bank_ms,
        house_seed=house_seed(tournament=tournament, table=table),
        first_game_index=first,
        resume_leader=resume_leader,
        resume_starting=resume_starting,
        connect_deadline_ms=int(max(1.0, min(remaining_s, 60.0)) * 1000),
        deadline_passed=remaining_s <= 0,
        games_planned=table.games_planned,
        attempts=table.attempts,
        deal_seeds=deal_seeds,
        starting_games=field_format,
    )


def _participant(seat: TableSeat) -> str:
    """The referee participant for a seat: a seat that forfeited the table is played for
    the rest of it by the stand-in house bot (the table goes on for the others)."""
    if seat.forfeited:
        return f"house:{getattr(settings, 'TIENLEN_STAND_IN_HOUSE_BOT', 'random')}"
    return participant_key(bot_id=seat.entrant.bot_id, house_bot=seat.entrant.bot.house_bot)


def table_seats_forfeit(*, table_id: int, absent: Iterable[str]) -> int:
    """Forfeit the seats of bots absent past the connect deadline (participant keys);
    returns how many seats still play for themselves."""
    absent = set(absent)
    seats = list(TableSeat.objects.filter(table_id=table_id).select_related("entrant__bot"))
    gone = [
        s.pk for s in seats
        if participant_key(bot_id=s.entrant.bot_id, house_bot=s.entrant.bot.house_bot) in absent
    ]
    TableSeat.objects.filter(pk__in=gone).update(forfeited=True)
    return sum(1 for s in seats if not s.forfeited and s.pk not in gone)


def _replay_dict(replay: Replay | None) -> dict:
    import json

    if replay is None:
        return {}
    return json.loads(replay.decoded_text())


def table_game_record(*, table_id: int, result: GameResult) -> Game | None:
    """Record one finished game exactly once; None when it was already recorded."""
    games = table_games_record(table_id=table_id, results=[result])
    return games[0] if games else None


def table_games_record(*, table_id: int, results: Sequence[GameResult]) -> list[Game]:
    """Record finished games (seats, replay, rating updates) in one transaction.

    Games already recorded (a retried task, a table replayed from its seeds) are skipped,
    so this is idempotent; the new games are returned. A batch costs about the queries of
    one game, which is how recording keeps up with the referee.
    """
    if not results:
        return []
    try:
        with transaction.atomic():
            games, error = _record_batch(table_id, results)
    except IntegrityError:
        # A concurrent attempt recorded some of these first: go one by one.
        games, error = [], None
        for result in results:
            try:
                with transaction.atomic():
                    one, error = _record_batch(table_id, [result])
                games += one
            except IntegrityError:
                if not Game.objects.filter(table_id=table_id, index=result.game_index).exists():
                    raise
            if error:
                break
    if error:
        # The good games before it are committed; the caller learns what was wrong.
        raise error
    return games


def _pool_ids(tournament: Tournament, sizes: set[int]) -> dict[int, int]:
    """The rating pool of each game size (a knockout's short tables rate in smaller pools)."""
    ids = {}
    for size in sizes:
        if size == tournament.seats_per_table and tournament.pool_id is not None:
            ids[size] = tournament.pool_id
        else:
            ids[size] = rating_pool_get(preset=tournament.preset, seats=size).pk
    return ids


def _timing_summary(timing: dict, players: int) -> tuple[dict, list[int], int]:
    """Per-seat totals of the referee's per-move timing (the full log goes with the replay)."""
    per_seat = [{"moves": 0, "thinking_ms": 0.0, "max_ms": 0.0, "fallbacks": 0} for _ in range(players)]
    elapsed = 0.0
    moves = timing.get("moves") or []
    for move in moves:
        ms = float(move.get("elapsed_ms") or 0.0)
        elapsed += ms
        seat = move.get("seat")
        if isinstance(seat, int) and 0 <= seat < players:
            row = per_seat[seat]
            row["moves"] += 1
            row["thinking_ms"] += float(move.get("thinking_ms") or ms)
            row["max_ms"] = max(row["max_ms"], ms)
            row["fallbacks"] += bool(move.get("fallback"))
    for row in per_seat:
        row["thinking_ms"] = round(row["thinking_ms"], 1)
        row["max_ms"] = round(row["max_ms"], 1)
    summary = {"moves": len(moves), "elapsed_ms": round(elapsed, 1), "per_seat": per_seat}
    return summary, [row["fallbacks"] for row in per_seat], int(elapsed)


def _record_batch(table_id: int, results: Sequence[GameResult]) -> tuple[list[Game], ValueError | None]:
    """Record the results up to the first malformed one; return it as the error."""
    # The tournament's row lock makes one writer at a time decide which games are due for
    # rating (tournaments.rating_order); recording already queued behind the pool lock.
    table = Table.objects.select_related("tournament").select_for_update(of=("tournament",)).get(pk=table_id)
    tournament = table.tournament
    seats = list(TableSeat.objects.filter(table_id=table_id).select_related("entrant").order_by("seat"))
    per_deal = games_per_deal(tournament=tournament, games_planned=table.games_planned)
    rows = list(Deal.objects.filter(
        tournament_id=tournament.pk, group=table.deal_group, index__in={r.game_index // per_deal for r in results},
    ).values_list("pk", "index", "seed", "revealed_at"))
    deals = {index: (pk, seed) for pk, index, seed, _ in rows}
    revealed = {index for _, index, _, revealed_at in rows if revealed_at is not None}
    unique: dict[int, GameResult] = {}
    error = None
    for result in results:
        error = _record_problem(result, len(seats)) or _deal_problem(result, deals.get(result.game_index // per_deal))
        if error:
            break  # record the good games before it, then report it
        unique.setdefault(result.game_index, result)
    if not unique:
        return [], error
    existing = set(
        Game.objects.filter(table_id=table_id, index__in=list(unique)).values_list("index", flat=True)
    )
    new = [unique[i] for i in sorted(unique) if i not in existing]
    if not new:
        return [], error
    # The version each bot reported when it last connected (the referee's ListBots).
    versions = dict(
        BotVersion.objects.filter(bot_id__in=[s.entrant.bot_id for s in seats])
        .order_by("bot_id", "first_seen_at", "id")
        .values_list("bot_id", "id")
    )
    pool_ids = _pool_ids(tournament, {r.players for r in new}) if tournament.rated else {}
    games, game_seats, replays, placed = [], [], [], []
    for result in new:
        summary, fallbacks, duration = _timing_summary(result.timing, result.players)
        pool_id = pool_ids.get(result.players)
        game = Game(
            table_id=table_id, index=result.game_index, deal_id=deals[result.game_index // per_deal][0],
            players=result.players,
            finishing_order=result.finishing_order, points=result.points, strikes=result.strikes,
            forfeits=result.forfeited, timing=summary, duration_ms=duration, pool_id=pool_id,
        )
        games.append(game)
        entrants = [seats[p].entrant for p in result.seat_participants]
        places = result.places()
        if pool_id is not None:
            placed.append(DueGame(table_id, result.game_index, pool_id, [e.bot_id for e in entrants], places,
                                  revealed=False, game=game))
        for s, entrant in enumerate(entrants):
            game_seats.append((
                game, s, entrant.bot_id, entrant.pk, versions.get(entrant.bot_id), places[s],
                result.points[s], fallbacks[s],
                result.seat_participants[s] in result.forfeited or seats[result.seat_participants[s]].forfeited,
            ))
        # The JSON as the referee sent it: compressed, never re-encoded.
        raw = result.replay_text.encode("utf-8")
        timing_raw = result.timing_text.encode("utf-8")
        replays.append(Replay(
            game=game, schema=result.schema[:40], data=zlib.compress(raw, 6),
            raw_size=len(raw), timing=zlib.compress(timing_raw, 6) if timing_raw else None,
        ))
    # Reveal the deals this batch finishes everywhere, then take the games due for rating
    # now (revealed, in plan order), numbered before they are saved.
    revealed |= _deals_reveal_recording(tournament, table, len(new))
    for due in placed:
        due.revealed = due.index // per_deal in revealed
    rating = ratings_take_due(tournament=tournament, new=placed, new_table_id=table_id)
    Game.objects.bulk_create(games)
    for replay in replays:
        replay.game_id = replay.game.pk
    # Seats and rating changes are plain rows: a pipelined prepared INSERT costs a fraction
    # of building model instances (recording must stay far cheaper than playing).
    insert_rows(
        GameSeat,
        ["game_id", "seat", "bot_id", "entrant_id", "version_id", "place", "points", "strikes", "forfeited"],
        [(g.pk, *rest) for g, *rest in game_seats],
    )
    Replay.objects.bulk_create(replays)
    table_fields = {"games_recorded": F("games_recorded") + len(new), **table_progress(table=table, now=timezone.now())}
    if table_id in rating.table_rated:
        table_fields["games_rated"] = rating.table_rated[table_id]
    Table.objects.filter(pk=table_id).update(**table_fields)
    # A seat the referee forfeited mid-table (strikes, a long disconnect) forfeits the
    # table: recorded as soon as a game shows it, so a later resume cannot lose it.
    forfeited = {p for r in new for p in r.forfeited if 0 <= p < len(seats)}
    if forfeited:
        TableSeat.objects.filter(table_id=table_id, seat__in=sorted(forfeited), forfeited=False).update(forfeited=True)
    ratings_apply(rating, skip_table=table_id)
    return games, error


def _deals_reveal(tournament: Tournament, groups: list[int] | None = None) -> int:
    """Reveal the deals played everywhere; their luck baselines are computed after commit
    by their own task, off the recording path (about 5 ms of simulation per deal)."""
    revealed = deals_reveal(tournament=tournament, groups=groups)
    if revealed:
        _baselines_after_commit(tournament)
    return revealed


def _deals_reveal_recording(tournament: Tournament, table: Table, new_games: int) -> set[int]:
    """The recording path's reveal, before its games are saved: the indices revealed now."""
    revealed = deals_reveal_recording(
        tournament=tournament, group=table.deal_group, table_id=table.pk, new_games=new_games
    )
    if revealed:
        _baselines_after_commit(tournament)
    return revealed


def _baselines_after_commit(tournament: Tournament) -> None:
    enqueue_on_commit(Job.COMPUTE_BASELINES, tournament.pk)


def deal_baselines_compute(*, tournament_id: int, limit: int = 500) -> int:
    """Compute the house-bot baseline of up to `limit` revealed deals that have games and no
    baseline yet; returns how many were computed. Idempotent (a row is only written while
    its baseline is empty), so duplicated tasks are harmless."""
    from tournaments.scoring.baseline import deal_baseline

    tournament = Tournament.objects.get(pk=tournament_id)
    pending = Game.objects.filter(
        table__tournament_id=tournament_id, deal__revealed_at__isnull=False, deal__baseline__isnull=True
    ).values_list("deal_id", "deal__seed", "players")
    todo = list({deal_id: (deal_id, seed, players) for deal_id, seed, players in pending}.values())[:limit]
    for deal_id, seed, players in todo:
        baseline = deal_baseline(seed, players, preset=tournament.preset, options=tournament.options or None)
        Deal.objects.filter(pk=deal_id, baseline__isnull=True).update(baseline=[round(b, 4) for b in baseline])
    return len(todo)


def _deal_problem(result: GameResult, deal: tuple[int, str] | None) -> ValueError | None:
    """The game must have been dealt from the deal committed for it (the messages are
    public table errors: they never show a seed)."""
    if deal is None:
        return ValueError(f"game {result.game_index}: no deal was committed for it")
    for reported in (result.seed, result.replay.get("seed")):
        if reported and reported != deal[1]:
            return ValueError(f"game {result.game_index}: it was not dealt from the deal committed for it")
    return None


def _record_problem(result: GameResult, seats: int) -> ValueError | None:
    problem = result.problem(seats)
    return ValueError(f"game {result.game_index}: {problem}") if problem else None


@dataclass
class NextSteps:
    tables_to_play: list[int] = field(default_factory=list)
    tournament_finished: bool = False


def _table_outcome(table: Table) -> list[SeatResult]:
    seats = list(table.seats.select_related("entrant"))
    stats = {s.entrant_id: [0, 0, 0, 0] for s in seats}  # points, firsts, place sum, games
    for entrant_id, points, place in GameSeat.objects.filter(game__table=table).values_list("entrant_id", "points", "place"):
        row = stats.get(entrant_id)
        if row is not None:
            row[0] += points
            row[1] += place == 1
            row[2] += place
            row[3] += 1
    return [
        SeatResult(
            entrant=s.entrant_id,
            seed_rank=s.entrant.seed_rank or 10**6,
            points=stats[s.entrant_id][0],
            firsts=stats[s.entrant_id][1],
            place_sum=stats[s.entrant_id][2],
            games=stats[s.entrant_id][3],
            forfeited=s.forfeited,
        )
        for s in seats
    ]


def table_complete(
    *,
    table_id: int,
    status: str = Table.Status.DONE,
    error: str = "",
    absent: Iterable[str] = (),
    forfeited: Iterable[int] = (),
) -> NextSteps:
    """Close a table and, under the tournament's lock, decide what follows: the next
    knockout round or the end of the tournament (exactly once).

    A seat forfeits the table if it was `absent` (participant keys) past the connect
    deadline, if the referee forfeited it mid-table (`forfeited` participant indices from
    the table result, or any recorded game showing it), or if an earlier attempt did.
    """
    steps = NextSteps()
    with transaction.atomic():
        table = Table.objects.select_related("tournament").get(pk=table_id)
        tournament = Tournament.objects.select_for_update().get(pk=table.tournament_id)
        table.refresh_from_db()
        if status not in (Table.Status.DONE, Table.Status.FAILED):
            raise ValueError(f"a table completes as done or failed, not {status!r}")
        event = Event.FINISH if status == Table.Status.DONE else Event.FAIL
        if next_status(table.status, event, table_id=table.pk) is None:
            return steps  # closed already: a duplicated task
        absent = set(absent)
        forfeited = set(forfeited)
        in_games = set(
            GameSeat.objects.filter(game__table=table, forfeited=True).values_list("entrant_id", flat=True)
        )
        seats = list(table.seats.select_related("entrant__bot"))
        for seat in seats:
            key = participant_key(bot_id=seat.entrant.bot_id, house_bot=seat.entrant.bot.house_bot)
            seat.forfeited = (
                seat.forfeited
                or seat.seat in forfeited
                or seat.entrant_id in in_games
                or key in absent
                or str(seat.entrant.bot_id) in absent
                or seat.entrant.bot.name in absent
            )
        TableSeat.objects.bulk_update(seats, ["forfeited"])
        if not error and any(s.forfeited for s in seats):
            names = ", ".join(s.entrant.bot.name for s in seats if s.forfeited)
            error = f"forfeit: {names} forfeited the table"
        ranked = knockout_rank_table(_table_outcome(table))
        advance = knockout_advance_count(len(ranked), tournament.advance_per_table)
        if tournament.format == Tournament.Format.KNOCKOUT and _knockout_is_final(table):
            advance = 1  # the final has one winner; the others are out
        by_entrant = {s.entrant_id: s for s in seats}
        for place, result in enumerate(ranked, start=1):
            seat = by_entrant[result.entrant]
            seat.points = result.points
            seat.place = place
            if tournament.format == Tournament.Format.KNOCKOUT:
                seat.advanced = place <= advance and not result.forfeited
        TableSeat.objects.bulk_update(seats, ["points", "place", "advanced"])
        table_close(table=table, event=event, error=error, now=timezone.now())
        # A closed table plays no more games: the deals its group waited for it to play are
        # revealed, and the games planned after it may now be rated.
        _deals_reveal(tournament, [table.deal_group])
        ratings_advance(tournament=tournament)
        if tournament.status != Tournament.Status.RUNNING or tournament.format == Tournament.Format.LADDER:
            return steps
        current = tournament.tables.filter(round=table.round)
        if current.exclude(status__in=CLOSED).exists():
            return steps
        if tournament.format == Tournament.Format.KNOCKOUT:
            # Who did not go through this round is out (the final's losers too).
            _knockout_eliminate(tournament, table.round)
            if current.count() > 1:
                steps.tables_to_play = _knockout_next_round(tournament, table.round)
                if steps.tables_to_play:
                    return steps
        steps.tournament_finished = tournament_finish(tournament_id=tournament.pk)
    return steps


def _knockout_is_final(table: Table) -> bool:
    """A knockout round of one table is the final: nobody is left to meet in another."""
    return not Table.objects.filter(tournament_id=table.tournament_id, round=table.round).exclude(pk=table.pk).exists()


def _knockout_eliminate(tournament: Tournament, round_no: int) -> None:
    eliminated = Entrant.objects.filter(
        tournament=tournament, table_seats__table__tournament=tournament,
        table_seats__table__round=round_no, table_seats__advanced=False,
    )
    Entrant.objects.filter(pk__in=eliminated.values("pk")).update(status=Entrant.Status.ELIMINATED)


def _knockout_next_round(tournament: Tournament, round_no: int) -> list[int]:
    """The next round's tables among those who went through (none: fewer than 2 did)."""
    advancing = list(
        Entrant.objects.filter(table_seats__table__tournament=tournament, table_seats__table__round=round_no, table_seats__advanced=True)
        .order_by("seed_rank", "id")
    )
    if len(advancing) < 2:
        return []
    created = []
    owners = _entrant_owners(tournament, advancing)
    tables = knockout_tables(advancing, tournament.seats_per_table, owners, strict=False)
    group = deal_group_next(tournament=tournament)
    for number, (seated, offset) in enumerate(_deal_groups(tournament, tables), start=1):
        created.append(_table_create(tournament, round_no + 1, number, seated, deal_group=group + offset).pk)
    return created


def tournament_finish(*, tournament_id: int) -> bool:
    """Mark the tournament finished; True only for the one call that did it."""
    updated = Tournament.objects.filter(pk=tournament_id, status=Tournament.Status.RUNNING).update(
        status=Tournament.Status.FINISHED, finished_at=timezone.now()
    )
    return bool(updated)


# --- ladder ----------------------------------------------------------------------------


def ladder_tick(
    *, tournament: Tournament, connected: dict[str, str] | None, rng: random.Random | None = None
) -> list[int]:
    """Start new ladder tables among connected, idle entrants with close ratings.

    `connected` maps referee bot ids to reported versions (None: the referee is unknown,
    so only house bots can be scheduled). The anchor of each table is drawn among the bots
    that waited longest: those with the fewest seats at the ladder's last
    `LADDER_RECENT_ROTATIONS` rotations of tables (a rotation: enough tables to seat every
    active entrant once). A tick that starts no table says why in `status_reason` (shown on
    the ladder's page and in the API); a tick that starts one clears it.
    """
    rng = rng or random.Random()
    with transaction.atomic():
        tournament = Tournament.objects.select_for_update().get(pk=tournament.pk)
        if tournament.status != Tournament.Status.RUNNING or tournament.format != Tournament.Format.LADDER:
            return []
        seats = tournament.seats_per_table
        busy = set(
            TableSeat.objects.filter(table__tournament=tournament)
            .exclude(table__status__in=CLOSED)
            .values_list("entrant__bot_id", flat=True)
        )
        active = list(tournament.entrants.filter(status=Entrant.Status.ACTIVE).select_related("bot"))
        entrants = [
            e for e in active
            if e.bot_id not in busy and e.bot.revoked_at is None
            and (e.bot.house_bot or (connected is not None and str(e.bot_id) in connected))
        ]
        for e in entrants:
            if connected and str(e.bot_id) in connected:
                bot_version_touch(bot_id=e.bot_id, version=connected[str(e.bot_id)])
        ratings = _bot_ratings(tournament.pool, [e.bot_id for e in entrants])
        recent = _ladder_recent_seats(tournament, active_entrants=len(active))
        candidates = [
            Candidate(
                e.bot_id, e.bot.owner_id, ratings.get(e.bot_id, START_RATING), recent.get(e.bot_id, 0),
                house=bool(e.bot.house_bot),
            )
            for e in entrants
        ]
        # The owner rule's exemption is decided over all the ladder's entrants, not only
        # the free ones: one owner's bots alone have nobody to collude against.
        all_owners = [None if e.bot.house_bot else e.bot.owner_id for e in active]
        same_owner_ok = tournament.allow_same_owner or not owner_rule_applies(all_owners)
        picks = ladder_pick_tables(
            candidates,
            seats=seats,
            tables=tournament.ladder_tables_per_tick,
            rng=rng,
            allow_same_owner=same_owner_ok,
        )
        by_bot = {e.bot_id: e for e in entrants}
        last = tournament.tables.order_by("-number").values_list("number", flat=True).first() or 0
        group = deal_group_next(tournament=tournament)
        created = []
        tables = [[by_bot[b] for b in bot_ids] for bot_ids in picks]
        for number, (seated, offset) in enumerate(_deal_groups(tournament, tables), start=last + 1):
            created.append(_table_create(tournament, 1, number, seated, deal_group=group + offset).pk)
        reason = "" if picks else _ladder_idle_reason(
            seats=seats, active=active, candidates=candidates, busy=busy, connected=connected,
            same_owner_ok=same_owner_ok,
        )
        if reason != tournament.status_reason:
            Tournament.objects.filter(pk=tournament.pk).update(status_reason=reason[:500])
        return created


LADDER_RECENT_ROTATIONS = 2


def _ladder_recent_seats(tournament: Tournament, *, active_entrants: int) -> dict[int, int]:
    """Seats each bot took at the ladder's most recent tables (1 query): the last
    LADDER_RECENT_ROTATIONS x ceil(entrants / seats) tables, newest by number."""
    window = LADDER_RECENT_ROTATIONS * max(1, -(-active_entrants // tournament.seats_per_table))
    last_tables = Table.objects.filter(tournament_id=tournament.pk).order_by("-number").values("id")[:window]
    counts: dict[int, int] = {}
    for bot_id in TableSeat.objects.filter(table_id__in=last_tables).values_list("entrant__bot_id", flat=True):
        counts[bot_id] = counts.get(bot_id, 0) + 1
    return counts


def _ladder_idle_reason(
    *, seats: int, active: list[Entrant], candidates: list[Candidate], busy: set[int],
    connected: dict[str, str] | None, same_owner_ok: bool,
) -> str:
    """Why a ladder tick started no table, in words for its page and API."""
    if len(active) < seats:
        return f"No table: the ladder has {len(active)} active entrant(s); a table needs {seats}."
    if len(candidates) < seats:
        playing = sum(1 for e in active if e.bot_id in busy)
        absent = len(active) - playing - len(candidates)
        text = (
            f"Waiting for bots: {len(candidates)} of {len(active)} active entrants are connected and free "
            f"({playing} playing, {absent} not connected); a table needs {seats}."
        )
        if connected is None:
            text += " The referee's list of connected bots is unavailable, so only house bots can be seated."
        return text
    if not same_owner_ok:
        owners = {("house", c.bot_id) if c.house else ("owner", c.owner_id) for c in candidates}
        return (
            f"No table possible: bots of one owner never share a table (allow_same_owner is off), and the "
            f"{len(candidates)} connected free bots have {len(owners)} different owners; a table needs {seats}."
        )
    return "No table was started at the last tick."


# --- ratings ---------------------------------------------------------------------------


@dataclass(frozen=True)
class RecomputeReport:
    pool: str
    games: int
    bots: int
    changed_ratings: int
    max_difference: float


def ratings_recompute(*, pool: RatingPool, write: bool = True, progress: Callable[[int], None] | None = None) -> RecomputeReport:
    """Rebuild every rating of a pool from its games, in recorded order (rating_seq).

    With the pool's K unchanged this reproduces the stored ratings bit for bit; the report
    says how far the stored values were from the recomputed ones.
    """
    with transaction.atomic():
        pool = RatingPool.objects.select_for_update().get(pk=pool.pk)
        rows = (
            GameSeat.objects.filter(game__pool=pool, game__rating_seq__isnull=False)
            .order_by("game__rating_seq", "seat")
            .values_list("game__rating_seq", "game_id", "bot_id", "place")
            .iterator(chunk_size=20000)
        )
        current: dict[int, float] = {}
        games: dict[int, int] = {}
        history: dict[tuple[int, int], tuple[float, float]] = {}
        k = pool.k_factor
        count = 0

        def flush(game_id: int, bots: list[int], places: list[int]) -> None:
            before = [current.get(b, START_RATING) for b in bots]
            deltas = elo_deltas(before, places, k)
            for b, old, d in zip(bots, before, deltas, strict=True):
                current[b] = old + d
                games[b] = games.get(b, 0) + 1
                history[(game_id, b)] = (old, old + d)

        seq_prev = None
        game_prev = None
        bots: list[int] = []
        places: list[int] = []
        for seq, game_id, bot_id, place in rows:
            if seq != seq_prev and bots:
                flush(game_prev, bots, places)
                count += 1
                if progress and count % 10000 == 0:
                    progress(count)
                bots, places = [], []
            seq_prev, game_prev = seq, game_id
            bots.append(bot_id)
            places.append(place)
        if bots:
            flush(game_prev, bots, places)
            count += 1
        stored = {r.bot_id: r for r in Rating.objects.filter(pool=pool)}
        max_diff = 0.0
        changed = []
        for bot_id, value in current.items():
            row = stored.get(bot_id)
            old = row.rating if row else START_RATING
            max_diff = max(max_diff, abs(old - value))
            if row is None:
                row = Rating(pool=pool, bot_id=bot_id)
                stored[bot_id] = row
            if row.rating != value or row.games != games[bot_id] or row.pk is None:
                row.rating = value
                row.games = games[bot_id]
                changed.append(row)
        if write:
            Rating.objects.bulk_create([r for r in changed if r.pk is None])
            Rating.objects.bulk_update([r for r in changed if r.pk is not None], ["rating", "games"], batch_size=1000)
            stale = []
            for change in RatingChange.objects.filter(pool=pool).only("id", "game_id", "bot_id", "rating_before", "rating_after").iterator(chunk_size=20000):
                expected = history.get((change.game_id, change.bot_id))
                if expected and (change.rating_before, change.rating_after) != expected:
                    change.rating_before, change.rating_after = expected
                    stale.append(change)
            RatingChange.objects.bulk_update(stale, ["rating_before", "rating_after"], batch_size=1000)
    return RecomputeReport(str(pool), count, len(current), len(changed), max_diff)
