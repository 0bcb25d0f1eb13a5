"""API shapes: input serializers validate requests, output serializers shape responses."""

from __future__ import annotations

import math

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers
from rest_framework.reverse import reverse

from bots_sdk.fairplay import COMMIT_SCHEME, DEAL_ALGORITHM
from bots_sdk.rules import PRESETS
from referee_service.house import house_bot_names
from tournaments import sealing
from tournaments.models import (
    ApiToken,
    Bot,
    Deal,
    Game,
    GameSeat,
    Rating,
    RatingChange,
    RatingPool,
    Table,
    TableSeat,
    Tournament,
    name_validator,
)
from tournaments.selectors.tournaments import (
    ACTIVITY_STATES,
    Activity,
    tournament_progress,
)

ACTIVITY_HELP = (
    "What the tournament is doing now: `running` only for what runs. A ladder whose last "
    "tick started no table is `waiting`, one no scheduler tick has looked at for two ticks "
    "is `not_ticking`; a scheduled start is `scheduled` until its time, `starting`, then "
    "`running`, or `not_started` when its time passed long ago and nothing started it."
)

# --- input -----------------------------------------------------------------------------


def _url(serializer: serializers.Serializer, name: str, *args: object) -> str:
    """An absolute URL when the view passed its request, else the path."""
    return reverse(name, args=args, request=serializer.context.get("request"))



class ApiTokenInput(serializers.Serializer):
    name = serializers.CharField(max_length=100, required=False, allow_blank=True, default="")


class BotCreateInput(serializers.Serializer):
    name = serializers.CharField(max_length=63, validators=[name_validator])
    description = serializers.CharField(max_length=2000, required=False, allow_blank=True, default="")
    house_bot = serializers.ChoiceField(
        choices=["", *sorted(house_bot_names())], required=False, default="",
        help_text="Staff only: one of the SDK's example bots, played by the referee itself.",
    )


class BotUpdateInput(serializers.Serializer):
    description = serializers.CharField(max_length=2000, allow_blank=True, required=False)
    accepts_invitations = serializers.BooleanField(
        required=False,
        help_text="Every organiser may enter this bot without asking: invitations are accepted at once.")


class TournamentCreateInput(serializers.Serializer):
    name = serializers.CharField(max_length=120)
    slug = serializers.SlugField(max_length=80, required=False)
    description = serializers.CharField(max_length=5000, required=False, allow_blank=True, default="")
    format = serializers.ChoiceField(choices=Tournament.Format.choices)
    preset = serializers.ChoiceField(choices=list(PRESETS), default="south")
    options = serializers.DictField(required=False, default=dict)
    seats_per_table = serializers.IntegerField(min_value=2, max_value=4, default=4)
    duplicate_sets = serializers.IntegerField(min_value=0, max_value=100, required=False)
    games_per_table = serializers.IntegerField(min_value=1, max_value=1000, required=False)
    move_time_ms = serializers.IntegerField(min_value=10, max_value=600_000, default=1000)
    time_bank_ms = serializers.IntegerField(min_value=0, max_value=3_600_000, default=10000)
    connect_deadline_s = serializers.IntegerField(min_value=0, max_value=86_400, default=300)
    rated = serializers.BooleanField(default=True)
    deal_format = serializers.ChoiceField(
        choices=Tournament.DealFormat.choices, default=Tournament.DealFormat.FIELD,
        help_text="field (the default: each deal played at several tables by different bots, "
        "each bot once; scores compared seat by seat), independent (every deal played once) "
        "or rotation (one deal in every seat at one table: house bots only, never for ladders).",
    )
    seed = serializers.CharField(
        max_length=64, required=False, write_only=True, allow_blank=True,
        help_text="Optional and never shown again: deals are derived from it, so you can "
        "reproduce them, and the tournament is labelled 'reproducible: deals known to the "
        "organiser'. Leave it out for secret deals.",
    )
    cycles = serializers.IntegerField(min_value=1, max_value=50, default=1)
    advance_per_table = serializers.IntegerField(min_value=1, max_value=3, default=2)
    ladder_tables_per_tick = serializers.IntegerField(min_value=1, max_value=100, default=1)
    allow_same_owner = serializers.BooleanField(default=False)
    verified_entry = serializers.BooleanField(
        default=False,
        help_text="Admit only bots whose owner's account is verified (approved by staff, or its "
        "e-mail address confirmed); house bots are exempt. Checked at entry and again at the start.",
    )
    open_registration = serializers.BooleanField(
        required=False,
        help_text="Bot owners enter their own bots themselves (POST .../join/) within the registration "
        "window; otherwise entry is by the organiser, whose entering of another user's bot is an "
        "invitation its owner accepts. Default: open for ladders, closed for the other formats.",
    )
    registration_opens_at = serializers.DateTimeField(
        required=False, allow_null=True, help_text="Open registration: joins accepted from then (empty: at once).")
    registration_closes_at = serializers.DateTimeField(
        required=False, allow_null=True,
        help_text="Open registration: joins refused from then (empty: until a round robin or knockout "
        "starts; a ladder stays open while it runs).")
    starts_at = serializers.DateTimeField(
        required=False, allow_null=True,
        help_text="A scheduled start: Start (.../start/ without starts_at) then schedules play at this time.")

    def validate(self, attrs):
        if self.partial:
            # A draft's edit (PATCH): the service checks the fields with the draft's others.
            return attrs
        if attrs.get("games_per_table") and attrs.get("duplicate_sets"):
            raise serializers.ValidationError(
                {"games_per_table": "Set either games_per_table or duplicate_sets, not both."}
            )
        if not attrs.get("games_per_table") and attrs.get("duplicate_sets", 1) == 0:
            raise serializers.ValidationError({"duplicate_sets": "Play at least one duplicate set."})
        if (
            attrs["format"] == Tournament.Format.KNOCKOUT
            and attrs["advance_per_table"] >= attrs["seats_per_table"]
        ):
            raise serializers.ValidationError(
                {"advance_per_table": "Fewer players than seats per table must advance."}
            )
        return attrs


class EntrantInput(serializers.Serializer):
    bot = serializers.CharField(max_length=63, help_text="The bot's name.")


class StartInput(serializers.Serializer):
    starts_at = serializers.DateTimeField(
        required=False, allow_null=True,
        help_text="When play begins; null: now; left out: at the draft's starts_at, now if it has none.")


class ReasonInput(serializers.Serializer):
    reason = serializers.CharField(max_length=300, help_text="Shown on the tournament page.")


class CancelInput(serializers.Serializer):
    reason = serializers.CharField(max_length=500, required=False, allow_blank=True, default="")


# --- output ----------------------------------------------------------------------------


class ApiTokenOutput(serializers.ModelSerializer):
    class Meta:
        model = ApiToken
        fields = ["id", "name", "prefix", "created_at", "last_used_at", "revoked_at"]


class ApiTokenCreatedOutput(ApiTokenOutput):
    token = serializers.CharField(help_text="Shown once; only its hash is stored.")

    class Meta(ApiTokenOutput.Meta):
        fields = [*ApiTokenOutput.Meta.fields, "token"]


class BotOutput(serializers.ModelSerializer):
    owner = serializers.CharField(source="owner.username")
    active = serializers.BooleanField(source="is_active")

    class Meta:
        model = Bot
        fields = ["id", "name", "owner", "description", "house_bot", "active", "created_at"]


class BotOwnerOutput(BotOutput):
    """What the owner sees: never the token, only its first characters."""

    class Meta(BotOutput.Meta):
        fields = [*BotOutput.Meta.fields, "token_prefix", "token_created_at", "revoked_at",
                  "accepts_invitations", "last_seen_at"]


class BotTokenOutput(serializers.Serializer):
    bot = serializers.CharField()
    token = serializers.CharField(help_text="Shown once; only its hash is stored.")


class BotCreatedOutput(BotOwnerOutput):
    token = serializers.CharField(allow_null=True, help_text="Shown once; null for house bots.")

    class Meta(BotOwnerOutput.Meta):
        fields = [*BotOwnerOutput.Meta.fields, "token"]


class PoolOutput(serializers.ModelSerializer):
    slug = serializers.CharField()

    class Meta:
        model = RatingPool
        fields = ["id", "slug", "preset", "seats", "k_factor", "games_rated"]


class ProgressOutput(serializers.Serializer):
    """The document `tournaments.selectors.tournaments.Progress.as_dict` builds (the site's live bar reads
    the same one)."""

    status = serializers.CharField()
    tables_total = serializers.IntegerField(help_text="Including a running knockout's rounds not created yet.")
    tables_done = serializers.IntegerField(help_text="Done, failed or cancelled.")
    tables_running = serializers.IntegerField()
    tables_failed = serializers.IntegerField()
    games_done = serializers.IntegerField()
    games_planned = serializers.IntegerField(help_text="A closed table counts the games it recorded.")
    fraction = serializers.FloatField(help_text="games_done / games_planned, at most 1.")
    percent = serializers.FloatField()
    activity = serializers.ChoiceField(choices=ACTIVITY_STATES, help_text=ACTIVITY_HELP)
    activity_label = serializers.CharField(help_text="The activity in words, as the site's badge shows it.")
    reason = serializers.CharField(help_text="Why it is in that activity (empty when nothing needs saying).")


class TournamentOutput(serializers.ModelSerializer):
    organiser = serializers.CharField(source="organiser.username")
    pool = serializers.CharField(source="pool.slug", allow_null=True, default=None)
    entrant_count = serializers.IntegerField(required=False)
    tables_total = serializers.IntegerField(required=False)
    tables_done = serializers.IntegerField(required=False)
    winner = serializers.CharField(
        allow_null=True, default=None, read_only=True,
        help_text="A finished knockout's winner (bot name); null otherwise.",
    )
    status_reason = serializers.SerializerMethodField(
        help_text="Why the tournament is in its status: a cancel's reason; for a running ladder, "
        "why its last tick started no table (empty once one starts), or that no tick looks at it "
        "(nobody runs Celery beat); for a scheduled start, when it starts or that its time passed "
        "and nothing started it. The same text as the activity's reason in the progress.",
    )
    activity = serializers.SerializerMethodField(help_text=ACTIVITY_HELP)
    reproducible = serializers.BooleanField(
        read_only=True,
        help_text="The organiser chose a seed: the deals are reproducible and known to the organiser.",
    )
    fair_play_notices = serializers.ListField(
        child=serializers.CharField(), read_only=True,
        help_text="What a competitor must know about this tournament's deals, e.g. "
        "'reproducible: deals known to the organiser' (also in the Tienlen-Fair-Play header).",
    )
    salt = serializers.CharField(read_only=True, help_text="Public salt of the deal commitments.")
    commitment_scheme = serializers.SerializerMethodField()
    deals = serializers.SerializerMethodField(help_text="The deal commitments (and revealed seeds).")

    class Meta:
        model = Tournament
        fields = [
            "id", "slug", "name", "description", "organiser", "format", "status", "preset",
            "options", "seats_per_table", "duplicate_sets", "games_per_table", "move_time_ms",
            "time_bank_ms", "connect_deadline_s", "rated", "pool", "cycles",
            "advance_per_table", "ladder_tables_per_tick", "allow_same_owner", "verified_entry",
            "open_registration", "registration_opens_at", "registration_closes_at", "design",
            "starts_at", "created_at", "started_at", "finished_at", "status_reason", "activity",
            "entrant_count", "tables_total", "tables_done", "winner",
            "deal_format", "reproducible", "fair_play_notices", "salt", "commitment_scheme", "deals",
        ]

    def get_commitment_scheme(self, obj: Tournament) -> str:
        return COMMIT_SCHEME

    def _activity(self, obj: Tournament) -> Activity:
        # A row of tournament_list carries its table counts (no query); a bare row costs one.
        return tournament_progress(tournament=obj).activity

    def get_status_reason(self, obj: Tournament) -> str:
        return self._activity(obj).reason

    @extend_schema_field(serializers.ChoiceField(choices=ACTIVITY_STATES))
    def get_activity(self, obj: Tournament) -> str:
        return self._activity(obj).state

    def get_deals(self, obj: Tournament) -> str:
        return _url(self, "api:deals", obj.slug)


class DealOutput(serializers.ModelSerializer):
    """A deal as the public sees it: the commitment always, the seed once revealed."""

    seed = serializers.SerializerMethodField(
        help_text="Null until the deal has been played at every table of its group.",
    )

    class Meta:
        model = Deal
        fields = ["group", "index", "commitment", "seed", "revealed_at"]

    @extend_schema_field(serializers.CharField(allow_null=True))
    def get_seed(self, obj: Deal) -> str | None:
        return sealing.deal_seed(obj)


class EntrantOutput(serializers.Serializer):
    id = serializers.IntegerField()
    bot = serializers.CharField(source="bot.name")
    seed_rank = serializers.IntegerField(allow_null=True)
    rating_at_start = serializers.FloatField(allow_null=True)
    status = serializers.CharField(
        help_text="active, invited (waiting for its owner to accept), eliminated, withdrawn or disqualified.")
    status_reason = serializers.CharField(help_text="Why it was disqualified or withdrawn.")


class InvitationOutput(serializers.Serializer):
    tournament = serializers.CharField(source="tournament.slug")
    tournament_name = serializers.CharField(source="tournament.name")
    format = serializers.CharField(source="tournament.format")
    tournament_status = serializers.CharField(source="tournament.status")
    organiser = serializers.CharField(source="tournament.organiser.username")
    bot = serializers.CharField(source="bot.name")
    invited_at = serializers.DateTimeField(source="joined_at")


class StandingOutput(serializers.Serializer):
    rank = serializers.IntegerField()
    bot_id = serializers.IntegerField()
    bot_name = serializers.CharField()
    status = serializers.CharField()
    seed_rank = serializers.IntegerField(allow_null=True)
    games = serializers.IntegerField()
    points = serializers.IntegerField()
    points_mean = serializers.FloatField()
    points_ci = serializers.FloatField(help_text="Half-width of the 95% confidence interval.")
    points_low = serializers.SerializerMethodField(
        help_text="points_mean - points_ci: the interval the tournament page draws (null with one game)."
    )
    points_high = serializers.SerializerMethodField(help_text="points_mean + points_ci (null with one game).")
    place_mean = serializers.FloatField()
    place_ci = serializers.FloatField()
    firsts = serializers.IntegerField()
    forfeits = serializers.IntegerField()
    strength = serializers.FloatField(
        allow_null=True, help_text="Plackett-Luce, Elo scale, relative to the field's mean (1500)."
    )
    strength_low = serializers.FloatField(allow_null=True, help_text="95% interval of the strength.")
    strength_high = serializers.FloatField(allow_null=True)
    rating = serializers.FloatField(allow_null=True)
    round_reached = serializers.IntegerField(
        allow_null=True, help_text="Knockouts: the last round the bot played (they rank by it first)."
    )

    @extend_schema_field(serializers.FloatField(allow_null=True))
    def get_points_low(self, row) -> float | None:
        return row.points_mean - row.points_ci if math.isfinite(row.points_ci) else None

    @extend_schema_field(serializers.FloatField(allow_null=True))
    def get_points_high(self, row) -> float | None:
        return row.points_mean + row.points_ci if math.isfinite(row.points_ci) else None

    def to_representation(self, instance):
        data = super().to_representation(instance)
        for key in ("points_ci", "place_ci"):
            if data[key] == float("inf"):
                data[key] = None
        return data


class LuckAdjustedRowOutput(serializers.Serializer):
    rank = serializers.IntegerField()
    bot_id = serializers.IntegerField()
    bot_name = serializers.CharField()
    games = serializers.IntegerField()
    points_mean = serializers.FloatField()
    points_ci = serializers.FloatField(allow_null=True, help_text="Half-width of the 95% interval.")
    adjusted_mean = serializers.FloatField(help_text="Luck-adjusted points per game.")
    adjusted_ci = serializers.FloatField(allow_null=True, help_text="Half-width of the 95% interval.")
    compared = serializers.IntegerField(help_text="Games compared with other results of the same cards.")

    def to_representation(self, instance):
        data = super().to_representation(instance)
        for key in ("points_ci", "adjusted_ci"):
            if data[key] is not None and not math.isfinite(data[key]):
                data[key] = None
        return data


class LuckAdjustedOutput(serializers.Serializer):
    method = serializers.CharField()
    games_scored = serializers.IntegerField()
    games_withheld = serializers.IntegerField(
        help_text="Games on deals not yet played at every table of their group: counted once revealed."
    )
    deals_with_baseline = serializers.IntegerField()
    rows = LuckAdjustedRowOutput(many=True)


class TableSeatOutput(serializers.ModelSerializer):
    """A seat and, once its table's result is public, how it ended there."""

    bot = serializers.CharField(source="entrant.bot.name")
    points = serializers.IntegerField(allow_null=True, help_text="Null until the table's result is public.")
    place = serializers.IntegerField(allow_null=True, help_text="Null until the table's result is public.")
    advanced = serializers.BooleanField(
        allow_null=True, help_text="Knockouts: went through. Null until the table's result is public."
    )
    forfeited = serializers.BooleanField(allow_null=True, help_text="Null until the table's result is public.")

    class Meta:
        model = TableSeat
        fields = ["seat", "bot", "points", "place", "advanced", "forfeited"]

    def to_representation(self, instance):
        # The seats are prefetched with their table, which `table_list` annotates.
        public = bool(getattr(instance.table, "results_public", False))
        return {**super().to_representation(instance), **sealing.table_seat_result(instance, public=public)}


class TableOutput(serializers.ModelSerializer):
    seats = TableSeatOutput(many=True)
    last_error = serializers.CharField(
        read_only=True, help_text="Why the table failed, stopped or is retried; empty while the "
        "table has a game whose deal is not revealed yet.",
    )
    results_public = serializers.BooleanField(
        read_only=True,
        help_text="The seats' points, places, advanced and forfeited are shown: the table is "
        "closed and every game it recorded is revealed (its deals were played at every table "
        "of its deal group). Until then they are null (docs/fair-play.md).",
    )

    class Meta:
        model = Table
        fields = [
            "id", "round", "number", "deal_group", "status", "games_planned", "games_recorded",
            "attempts", "last_error", "started_at", "finished_at", "results_public", "seats",
        ]

    def to_representation(self, instance):
        data = super().to_representation(instance)
        if not sealing.table_error_public(instance):
            data["last_error"] = ""
        return data


class GameSeatOutput(serializers.ModelSerializer):
    bot = serializers.CharField(source="bot.name")
    version = serializers.CharField(source="version.version", allow_null=True, default=None)

    class Meta:
        model = GameSeat
        fields = ["seat", "bot", "version", "place", "points", "strikes", "forfeited"]


class GameDealOutput(serializers.Serializer):
    """Everything needed to check a game's deal (docs/fair-play.md)."""

    group = serializers.IntegerField()
    index = serializers.IntegerField()
    algorithm = serializers.CharField(help_text="The portable deal, docs/rules.md §10.")
    commitment_scheme = serializers.CharField()
    salt = serializers.CharField()
    commitment = serializers.CharField(help_text="Published before the deal was played.")
    seed = serializers.CharField(allow_null=True, help_text="Null while the deal is withheld.")
    revealed_at = serializers.DateTimeField(allow_null=True)
    withheld = serializers.CharField(allow_null=True, help_text="Why the seed and replay are not public yet.")
    proof_url = serializers.CharField(help_text="Commitment, salt, seed, result and replay in one document.")
    verify = serializers.CharField(help_text="The one-line check: run it once the deal is revealed.")


class GameOutput(serializers.ModelSerializer):
    tournament = serializers.CharField(source="table.tournament.slug")
    round = serializers.IntegerField(source="table.round")
    table = serializers.IntegerField(source="table.number")
    seats = GameSeatOutput(many=True)
    deal = serializers.SerializerMethodField()

    class Meta:
        model = Game
        fields = [
            "id", "tournament", "round", "table", "index", "players",
            "finishing_order", "points", "duration_ms", "recorded_at", "seats", "deal",
        ]

    @extend_schema_field(GameDealOutput)
    def get_deal(self, obj: Game) -> dict:
        deal, tournament = obj.deal, obj.table.tournament
        proof = _url(self, "api:game-proof", obj.pk)
        return GameDealOutput({
            "group": deal.group, "index": deal.index, "algorithm": DEAL_ALGORITHM,
            "commitment_scheme": COMMIT_SCHEME, "salt": tournament.salt,
            "commitment": deal.commitment, "seed": sealing.deal_seed(deal), "revealed_at": deal.revealed_at,
            "withheld": None if sealing.deal_revealed(deal) else sealing.DEAL_WITHHELD,
            "proof_url": proof, "verify": f"tienlen-bot verify-replay {proof}",
        }).data


class RatingOutput(serializers.ModelSerializer):
    bot = serializers.CharField(source="bot.name")
    owner = serializers.CharField(source="bot.owner.username")
    # Too few rated games to trust it (Rating.provisional; docs/hosting.md for a new version)
    provisional = serializers.BooleanField(read_only=True)

    class Meta:
        model = Rating
        fields = ["bot", "owner", "rating", "games", "provisional", "updated_at"]


class BotRatingOutput(serializers.ModelSerializer):
    pool = serializers.CharField(source="pool.slug")
    provisional = serializers.BooleanField(read_only=True)

    class Meta:
        model = Rating
        fields = ["pool", "rating", "games", "provisional", "updated_at"]


class RatingChangeOutput(serializers.ModelSerializer):
    class Meta:
        model = RatingChange
        fields = ["seq", "game", "rating_before", "rating_after"]


class HeadToHeadOutput(serializers.Serializer):
    games = serializers.IntegerField()
    a_above = serializers.IntegerField()
    b_above = serializers.IntegerField()
    shared_place = serializers.IntegerField()
    a_points = serializers.IntegerField()
    b_points = serializers.IntegerField()
    a_score = serializers.FloatField()
