"""The data of the tournament platform.

Uniqueness constraints carry the correctness arguments: a game is unique by (table, index),
so a retried or replayed table can never record a game twice; a rating change is unique by
(game, bot), so a game is never rated twice; a pool's rating sequence number is unique, so
rating updates have one total order that `recompute_ratings` can replay exactly. That order
is canonical within a tournament (its plan order, not the order games happened to finish:
tournaments.rating_order), so the same games always give the same ratings. A deal is unique
by (tournament, group, index), so every table of a deal group plays the same deals.
"""

from __future__ import annotations

import secrets
import zlib

from django.conf import settings
from django.core.validators import MaxValueValidator, MinValueValidator, RegexValidator
from django.db import models
from django.db.models import Q

from bots_sdk.rules import ReplayError, replay_read

DEFAULT_K_FACTOR = 12.0
START_RATING = 1500.0

name_validator = RegexValidator(
    r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$",
    "Use 1-63 letters, digits, '_', '.' or '-', starting with a letter or digit.",
)
seats_validators = [MinValueValidator(2), MaxValueValidator(4)]


class ApiToken(models.Model):
    """A personal API token; only its SHA-256 is stored (the token is shown once)."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens"
    )
    name = models.CharField(max_length=100, blank=True)
    key_hash = models.CharField(max_length=64, unique=True)
    prefix = models.CharField(max_length=16)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"{self.user} {self.prefix}…"


class Hosting(models.TextChoices):
    REMOTE = "remote", "remote (the author runs it)"
    HOSTED = "hosted", "hosted (the platform runs it)"


class Gate(models.TextChoices):
    """What a new ready version of a hosted bot does before it plays (docs/hosting.md)."""

    OFF = "off", "promoted as soon as it is ready"
    MANUAL = "manual", "plays its predecessor first; the owner promotes it"
    AUTO = "auto", "plays its predecessor first; promoted unless it did worse"


#: A rating is provisional while its bot has fewer rated games than this in its pool, and
#: again for this many rated games after a new hosted version was promoted (docs/hosting.md).
PROVISIONAL_GAMES = 20


class Bot(models.Model):
    """A bot owned by a user. House bots run inside the referee and have no token."""

    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="bots"
    )
    name = models.CharField(max_length=63, unique=True, validators=[name_validator])
    description = models.TextField(blank=True, max_length=2000)
    house_bot = models.CharField(
        max_length=63, blank=True, help_text="Name of a referee built-in bot (house bots only)."
    )
    token_hash = models.CharField(max_length=64, null=True, blank=True, unique=True)
    token_prefix = models.CharField(max_length=16, blank=True)
    token_created_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    # Remote: the author's process connects with the bot's token. Hosted: the platform runs
    # `active_submission` sandboxed (docs/hosting.md), and the bot's own token no longer
    # connects (tournaments.token_store): only the sessions' tokens do.
    hosting = models.CharField(max_length=8, choices=Hosting.choices, default=Hosting.REMOTE)
    active_submission = models.ForeignKey(
        "BotSubmission", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    # Why the platform stopped hosting it (a crash loop: tournaments.services.hosting); ""
    # while it runs. A new ready version, or the owner switching it on again, clears it.
    hosting_stopped = models.CharField(max_length=300, blank=True)
    # Its owner's consent to casual tables started by other people (the play page): off by
    # default; the owner's own tables and house bots need none.
    casual_games = models.BooleanField(default=False)
    # Whether a new ready version first plays a duplicate set against its predecessor.
    gate = models.CharField(max_length=8, choices=Gate.choices, default=Gate.OFF)
    # When a referee of the pool last reported it connected (its heartbeat, written at
    # most once a minute: tournaments.play.pool.referee_heartbeat). Its owner's "My bots".
    last_seen_at = models.DateTimeField(null=True, blank=True)
    # Its owner lets every organiser enter it without asking (tournaments.services.entries):
    # their invitations are accepted at once. The demo's planners are so.
    accepts_invitations = models.BooleanField(default=False)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None


class AccountVerification(models.Model):
    """Whether an account is approved for verified-entry tournaments, and how.

    Approved: staff approved it (`approved_at`), or its owner confirmed the address the
    account has now (`email_confirmed` equal to the user's e-mail, case-insensitively: a
    changed address needs a new confirmation). Read through
    tournaments.services.verification, the one place that rule is written."""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="verification")
    approved_at = models.DateTimeField(null=True, blank=True)
    approved_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    # Stored lower-case; compared with the user's address lower-cased.
    email_confirmed = models.EmailField(blank=True, default="")
    email_confirmed_at = models.DateTimeField(null=True, blank=True)
    # Drawn anew at every confirmation and every change of address: a confirmation link is
    # valid only for the nonce it was made with, so it works once and dies with the address.
    email_nonce = models.CharField(max_length=32, blank=True, default="")

    class Meta:
        constraints = [
            # One address confirms one account: a second account cannot reuse it.
            models.UniqueConstraint(
                fields=["email_confirmed"], condition=~Q(email_confirmed=""), name="verification_email_unique"
            )
        ]

    def __str__(self) -> str:
        return f"verification of {self.user_id}"


class BotVersion(models.Model):
    """A version string a bot reported when it connected (bots do not learn between games)."""

    bot = models.ForeignKey(Bot, on_delete=models.CASCADE, related_name="versions")
    version = models.CharField(max_length=64)
    first_seen_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["bot_id", "first_seen_at"]
        constraints = [
            models.UniqueConstraint(fields=["bot", "version"], name="bot_version_unique")
        ]

    def __str__(self) -> str:
        return f"{self.bot_id}@{self.version}"


class GateStatus(models.TextChoices):
    QUEUED = "queued"
    PLAYING = "playing"
    DONE = "done"
    FAILED = "failed"


class GateVerdict(models.TextChoices):
    """The SPRT's verdict (bots_sdk.stats.sprt, as `tienlen-bot arena --sprt`), both ways."""

    BETTER = "better"            # H1 accepted for new - old
    WORSE = "worse"              # H1 accepted for old - new
    NO_DIFFERENCE = "no_difference"  # H0 accepted both ways: within the test's delta
    UNDECIDED = "undecided"      # the games ran out before either bound


class BotSubmission(models.Model):
    """An immutable submitted version of a hosted bot's code (docs/hosting.md): the zip as
    uploaded (checked by tournaments.hosting.archive, at most 1 MiB), its content hash, who
    sent it and when, the runtime and the SDK version it declares, and how its validation
    went. Only a READY submission ever plays; it announces itself as `s<seq>`."""

    class Status(models.TextChoices):
        QUEUED = "queued"
        VALIDATING = "validating"
        READY = "ready"
        FAILED = "failed"

    class Runtime(models.TextChoices):
        PYTHON = "python3.11", "Python 3.11 with the SDK"
        NODE = "node20", "Node.js 20"

    bot = models.ForeignKey(Bot, on_delete=models.CASCADE, related_name="submissions")
    seq = models.PositiveIntegerField()
    runtime = models.CharField(max_length=16, choices=Runtime.choices)
    entry = models.CharField(max_length=200)
    sdk_version = models.CharField(max_length=32, blank=True)
    sha256 = models.CharField(max_length=64)
    size = models.PositiveIntegerField()
    unpacked_size = models.PositiveIntegerField()
    files = models.PositiveIntegerField()
    archive = models.BinaryField()
    uploaded_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    uploaded_at = models.DateTimeField(auto_now_add=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED)
    validation_log = models.TextField(blank=True)
    detail = models.CharField(max_length=500, blank=True)
    validated_at = models.DateTimeField(null=True, blank=True)
    # When it became the bot's active version (None: never, or not yet).
    promoted_at = models.DateTimeField(null=True, blank=True)
    # The gate (docs/hosting.md): a duplicate set against `gate_against` (the version active
    # when it became ready), played by a runner, unrated, seen by the owner only.
    gate_status = models.CharField(max_length=16, choices=GateStatus.choices, blank=True)
    gate_against = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    gate_games = models.PositiveIntegerField(default=0)
    gate_sets = models.PositiveIntegerField(default=0)
    # Points per game of this version minus its predecessor's, paired per duplicate set.
    gate_score = models.FloatField(null=True, blank=True)
    gate_half_width = models.FloatField(null=True, blank=True)
    gate_verdict = models.CharField(max_length=16, choices=GateVerdict.choices, blank=True)
    gate_detail = models.CharField(max_length=500, blank=True)
    gate_log = models.TextField(blank=True)
    gate_finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["bot_id", "seq"]
        constraints = [models.UniqueConstraint(fields=["bot", "seq"], name="bot_submission_seq_unique")]

    def __str__(self) -> str:
        return f"{self.bot_id} s{self.seq}"

    @property
    def version(self) -> str:
        """What the bot announces in Hello when this code plays (BotVersion, GameSeat)."""
        return f"s{self.seq}"


class HostedSession(models.Model):
    """One run of a hosted bot's code for one table, on a runner (a Celery task of the
    `runner` queue): its per-session token (hashed; the referee accepts it only while the
    session runs), and once it ended, why, whose fault, and its bounded log. The log is
    the bot's private data: its owner's only (tournaments.sealing.bot_private_visible)."""

    class Status(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        ENDED = "ended"

    bot = models.ForeignKey(Bot, on_delete=models.CASCADE, related_name="hosted_sessions")
    submission = models.ForeignKey(BotSubmission, on_delete=models.PROTECT, related_name="sessions")
    table = models.ForeignKey("Table", null=True, on_delete=models.SET_NULL, related_name="hosted_sessions")
    # Or the casual table it plays (a person against bots: the play page), table then null.
    casual_table = models.ForeignKey("CasualTable", null=True, blank=True, on_delete=models.SET_NULL,
                                     related_name="hosted_sessions")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED)
    token_hash = models.CharField(max_length=64, null=True, blank=True, unique=True)
    runner = models.CharField(max_length=64, blank=True)
    # The runner renews it while the bot runs; once expired (the runner died), any worker's
    # reaper queues the session again for another runner (services.hosting).
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    starts = models.PositiveIntegerField(default=0)
    reason = models.CharField(max_length=32, blank=True)
    fault = models.CharField(max_length=16, blank=True)
    detail = models.CharField(max_length=500, blank=True)
    exit_code = models.IntegerField(null=True, blank=True)
    log = models.TextField(blank=True)
    log_bytes = models.PositiveBigIntegerField(default=0)
    log_truncated = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    ended_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["bot", "table"], name="hosted_session_bot_table")]

    def __str__(self) -> str:
        return f"session {self.pk} of {self.bot_id}"


class BotStorage(models.Model):
    """A hosted bot's own storage, kept between its sessions (docs/hosting.md): the files
    its sessions left in `$TIENLEN_STORAGE`, as a gzipped tar, bounded by
    tournaments.hosting.storage. Private: its owner's only (bot_private_visible), and no
    other bot ever gets it mounted."""

    bot = models.OneToOneField(Bot, on_delete=models.CASCADE, related_name="storage")
    data = models.BinaryField()
    size = models.PositiveBigIntegerField(default=0)  # the files' bytes, unpacked
    files = models.PositiveIntegerField(default=0)
    updated_at = models.DateTimeField(auto_now=True)
    # The session that wrote it last (two sessions at once: the later end wins).
    session = models.ForeignKey(HostedSession, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")

    def __str__(self) -> str:
        return f"storage of {self.bot_id}"


class RatingPool(models.Model):
    """Ratings are only comparable within one preset and one table size."""

    preset = models.CharField(max_length=32)
    seats = models.PositiveSmallIntegerField(validators=seats_validators)
    k_factor = models.FloatField(default=DEFAULT_K_FACTOR, validators=[MinValueValidator(0.0)])
    # Incremented under this row's lock: the total order of rating updates in the pool.
    games_rated = models.PositiveBigIntegerField(default=0)

    class Meta:
        ordering = ["preset", "seats"]
        constraints = [
            models.UniqueConstraint(fields=["preset", "seats"], name="pool_preset_seats_unique")
        ]

    def __str__(self) -> str:
        return self.slug  # one name everywhere: pages, API, URLs and commands

    @property
    def slug(self) -> str:
        return f"{self.preset}-{self.seats}"


class Rating(models.Model):
    pool = models.ForeignKey(RatingPool, on_delete=models.CASCADE, related_name="ratings")
    bot = models.ForeignKey(Bot, on_delete=models.CASCADE, related_name="ratings")
    rating = models.FloatField(default=START_RATING)
    games = models.PositiveIntegerField(default=0)
    # Provisional until `games` reaches this (a new hosted version was promoted: the rating
    # is kept, but it is provisional again for PROVISIONAL_GAMES rated games).
    provisional_until = models.PositiveIntegerField(default=0)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["pool_id", "-rating"]
        constraints = [
            models.UniqueConstraint(fields=["pool", "bot"], name="rating_pool_bot_unique")
        ]

    def __str__(self) -> str:
        return f"{self.bot_id} {self.rating:.1f} in {self.pool_id}"

    @property
    def provisional(self) -> bool:
        """Too few rated games to trust it: fewer than PROVISIONAL_GAMES in all, or since its
        bot's newest hosted version was promoted."""
        return self.games < max(PROVISIONAL_GAMES, self.provisional_until)


def new_salt() -> str:
    """The public per-tournament salt of the deal commitments (docs/fair-play.md)."""
    return secrets.token_hex(16)


REPRODUCIBLE_NOTICE = "reproducible: deals known to the organiser"
ROTATION_NOTICE = "trusted entrants only: deals repeat to the same bots"
SAME_OWNER_NOTICE = "one owner's bots may share a table"


class Tournament(models.Model):
    class DealFormat(models.TextChoices):
        """How a table's games get their deals (docs/fair-play.md). The
        default, field, was chosen by measurement (benchmarks/README.md, deal formats)."""

        FIELD = "field", "Field duplicates: each deal at several tables, each bot once"
        INDEPENDENT = "independent", "Independent deals: every deal is played once"
        ROTATION = "rotation", f"Seat rotation of one deal ({ROTATION_NOTICE})"

    class Format(models.TextChoices):
        ROUND_ROBIN = "round_robin", "Round robin"
        KNOCKOUT = "knockout", "Knockout bracket"
        LADDER = "ladder", "Rated ladder"

    class Status(models.TextChoices):
        DRAFT = "draft", "Draft"
        SCHEDULED = "scheduled", "Scheduled"
        RUNNING = "running", "Running"
        FINISHED = "finished", "Finished"
        CANCELLED = "cancelled", "Cancelled"

    name = models.CharField(max_length=120)
    slug = models.SlugField(max_length=80, unique=True)
    description = models.TextField(blank=True, max_length=5000)
    organiser = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="organised_tournaments"
    )
    format = models.CharField(max_length=16, choices=Format.choices)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.DRAFT)
    preset = models.CharField(max_length=32, default="south")
    options = models.JSONField(default=dict, blank=True)
    seats_per_table = models.PositiveSmallIntegerField(default=4, validators=seats_validators)
    # Each deal is played in every seat rotation (a duplicate set) unless games_per_table is set.
    duplicate_sets = models.PositiveSmallIntegerField(default=1)
    games_per_table = models.PositiveSmallIntegerField(null=True, blank=True)
    move_time_ms = models.PositiveIntegerField(default=1000)
    time_bank_ms = models.PositiveIntegerField(default=10000)
    connect_deadline_s = models.PositiveIntegerField(default=300)
    rated = models.BooleanField(default=True)
    pool = models.ForeignKey(
        RatingPool, null=True, blank=True, on_delete=models.PROTECT, related_name="tournaments"
    )
    # Optional organiser-chosen seed: deal seeds are then HMAC-SHA256(organiser_seed, deal
    # key), reproducible by the organiser, and every page and API response says so. Empty:
    # every deal seed is drawn with `secrets`. Never published.
    organiser_seed = models.CharField(max_length=64, blank=True, default="")
    # Public; commitments are sha256("tienlen-deal-commit-v1\n" + salt + "\n" + seed).
    salt = models.CharField(max_length=64, default=new_salt)
    deal_format = models.CharField(
        max_length=16, choices=DealFormat.choices, default=DealFormat.FIELD
    )
    # Round robin: how many times the whole design is repeated.
    cycles = models.PositiveSmallIntegerField(default=1)
    # Knockout: how many players of each table advance.
    advance_per_table = models.PositiveSmallIntegerField(default=2)
    # Ladder: tables started per scheduler tick; whether one owner's bots may share a table.
    ladder_tables_per_tick = models.PositiveSmallIntegerField(default=1)
    allow_same_owner = models.BooleanField(default=False)
    # Ladder seasons (tournaments.services.seasons): a season lasts `season_days`; at its end
    # its standings are frozen (a Season row) and the next begins, each bot's pool rating
    # moved `season_regression` of the way back to START_RATING (0: carried over as it is).
    # None: one endless season, as before seasons existed.
    season_days = models.PositiveSmallIntegerField(
        null=True, blank=True, validators=[MinValueValidator(1), MaxValueValidator(366)]
    )
    season_regression = models.FloatField(
        default=0.0, validators=[MinValueValidator(0.0), MaxValueValidator(1.0)]
    )
    # Verified entry (tournaments.services.verification): only bots whose owner's account is
    # approved (by staff, or a confirmed e-mail) may enter; house bots are exempt.
    verified_entry = models.BooleanField(default=False)
    # Open registration (tournaments.services.entries): bot owners enter their own bots
    # themselves, between the two times when set (a round robin or knockout until it
    # starts; a ladder also while it runs). Ladders are open unless created otherwise.
    open_registration = models.BooleanField(default=False)
    registration_opens_at = models.DateTimeField(null=True, blank=True)
    registration_closes_at = models.DateTimeField(null=True, blank=True)
    design = models.CharField(max_length=64, blank=True)
    starts_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    status_reason = models.CharField(max_length=500, blank=True)
    # Ladders: when a scheduler tick last looked at it (services.ladder.ladder_tick). A running
    # ladder not looked at for a while is not running: nothing ticks it (selectors).
    ticked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        permissions = [("organise_tournaments", "Can create and run tournaments")]

    def __str__(self) -> str:
        return self.name

    @property
    def games_per_table_planned(self) -> int:
        if self.games_per_table:
            return self.games_per_table
        return self.duplicate_sets * self.seats_per_table

    @property
    def reproducible(self) -> bool:
        """The organiser chose the seed: the organiser can compute every deal."""
        return bool(self.organiser_seed)

    @property
    def fair_play_notices(self) -> list[str]:
        """What every page and API response of this tournament must say about its deals."""
        notices = []
        if self.reproducible:
            notices.append(REPRODUCIBLE_NOTICE)
        if self.deal_format == self.DealFormat.ROTATION:
            notices.append(ROTATION_NOTICE)
        if self.allow_same_owner:
            notices.append(SAME_OWNER_NOTICE)
        return notices


class Season(models.Model):
    """One season of a ladder (tournaments.services.seasons): open while `ended_at` is None.

    At its end the tick freezes its standings into `standings` (the rows the standings
    selector gave at that instant, so through tournaments.sealing: revealed games only) and
    never touches them again; the next season's rating rule is applied once, as the pool's
    rating-sequence step `rating_seq`, to the bots in `regressed` ({bot id: [before, after]}),
    which `ratings_recompute` replays at the same place in the sequence."""

    tournament = models.ForeignKey(Tournament, on_delete=models.CASCADE, related_name="seasons")
    number = models.PositiveSmallIntegerField()
    started_at = models.DateTimeField()
    ends_at = models.DateTimeField()
    ended_at = models.DateTimeField(null=True, blank=True)
    standings = models.JSONField(default=list, blank=True)
    # The rating rule applied when this season ended (before the next one began).
    regression = models.FloatField(default=0.0)
    pool = models.ForeignKey(RatingPool, null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    rating_seq = models.PositiveBigIntegerField(null=True, blank=True)
    regressed = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["tournament_id", "number"]
        constraints = [
            models.UniqueConstraint(fields=["tournament", "number"], name="season_tournament_number_unique"),
            models.UniqueConstraint(
                fields=["tournament"], condition=Q(ended_at__isnull=True), name="season_one_open"
            ),
        ]

    def __str__(self) -> str:
        return f"season {self.number} of {self.tournament_id}"


class Entrant(models.Model):
    class Status(models.TextChoices):
        ACTIVE = "active", "Active"
        ELIMINATED = "eliminated", "Eliminated"
        WITHDRAWN = "withdrawn", "Withdrawn"
        # Entered by an organiser who does not own it: waits for its owner to accept
        # (tournaments.services.entries); it plays nothing until then.
        INVITED = "invited", "Invited"
        DISQUALIFIED = "disqualified", "Disqualified"

    #: Taken out of the tournament: its owner withdrew it, or the organiser disqualified it.
    OUT = (Status.WITHDRAWN, Status.DISQUALIFIED)

    tournament = models.ForeignKey(Tournament, on_delete=models.CASCADE, related_name="entrants")
    bot = models.ForeignKey(Bot, on_delete=models.PROTECT, related_name="entries")
    seed_rank = models.PositiveIntegerField(null=True, blank=True)
    rating_at_start = models.FloatField(null=True, blank=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.ACTIVE)
    joined_at = models.DateTimeField(auto_now_add=True)
    # When the bot's owner made its move notes in this tournament public (only once it
    # has finished: services.notes); until then they are the owner's only (sealing).
    notes_published_at = models.DateTimeField(null=True, blank=True)
    # Why it was disqualified (the organiser's words, public) or withdrawn; who invited it.
    status_reason = models.CharField(max_length=300, blank=True)
    invited_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        ordering = ["tournament_id", "seed_rank", "id"]
        constraints = [
            models.UniqueConstraint(fields=["tournament", "bot"], name="entrant_unique")
        ]

    def __str__(self) -> str:
        return f"{self.bot_id} in {self.tournament_id}"


class Table(models.Model):
    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        RUNNING = "running", "Running"
        WAITING = "waiting", "Waiting for bots"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"
        CANCELLED = "cancelled", "Cancelled"

    tournament = models.ForeignKey(Tournament, on_delete=models.CASCADE, related_name="tables")
    round = models.PositiveIntegerField(default=1)
    number = models.PositiveIntegerField()
    # Game i plays deal (deal_group, i), or (deal_group, i // seats) in the rotation
    # format; tables sharing a group play the same deals seat for seat.
    deal_group = models.PositiveIntegerField()
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    games_planned = models.PositiveIntegerField()
    games_recorded = models.PositiveIntegerField(default=0)
    # How many of the table's games are rated: always its first games by index. Games are
    # rated in the tournament's plan order (round, table, game index), each as soon as
    # every game planned before it is recorded or will never be (its table closed).
    games_rated = models.PositiveIntegerField(default=0)
    attempts = models.PositiveIntegerField(default=0)
    last_error = models.CharField(max_length=1000, blank=True)
    # When the current run of connect attempts began waiting for absent bots (the connect
    # deadline counts from here); cleared once the referee accepts the table.
    waiting_since = models.DateTimeField(null=True, blank=True)
    # The bots (names) the latest attempt found not connected to its referee: what the table
    # waits for while `waiting_since` is set (the referee has not started it yet).
    waiting_for = models.JSONField(default=list, blank=True)
    # Last sign of life from the worker playing the table (an attempt began, games were
    # recorded, a retry was noted): the beat tick re-enqueues tables silent for too long.
    progress_at = models.DateTimeField(null=True, blank=True)
    # The table's lease (tournaments.play.lifecycle): the attempt playing it now
    # (`lease_owner`, empty when no attempt holds it) and, on the database's clock, when the
    # lease ends unless its holder renews it; on a free lease, when a retry that was due
    # counts as lost. Past it, any worker's reaper claims the table and re-enqueues it.
    lease_owner = models.CharField(max_length=64, blank=True, default="")
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    # The referee its latest attempt was routed to (tournaments.play.routing): its pool id, or
    # the REFEREE_TARGET address outside a pool; it moves when the table fails over.
    referee = models.CharField(max_length=255, blank=True, default="")
    # A ladder with seasons: the season (Season.number) the table was seated in; its games
    # count in that season's standings only.
    season = models.PositiveSmallIntegerField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["tournament_id", "round", "number"]
        constraints = [
            models.UniqueConstraint(
                fields=["tournament", "round", "number"], name="table_round_number_unique"
            )
        ]
        indexes = [
            models.Index(fields=["tournament", "status"]),
            models.Index(fields=["tournament", "deal_group"]),
            # The reapers' query (every few seconds, from every worker): the few open tables.
            models.Index(
                fields=["lease_expires_at"], name="table_active_lease_idx",
                condition=models.Q(status__in=["running", "waiting"]),
            ),
        ]

    def __str__(self) -> str:
        return f"{self.tournament_id} r{self.round} t{self.number}"

    @property
    def awaited(self) -> list[str]:
        """The bots the open table waits for now: those its latest attempt found not
        connected, until the referee starts the table (games arrive: `waiting_since` clears)."""
        if self.status not in (self.Status.RUNNING, self.Status.WAITING) or self.waiting_since is None:
            return []
        return [str(name) for name in self.waiting_for or []]


class Deal(models.Model):
    """One deal: a secret seed drawn when the deal is created, and its public commitment.

    The seed stays secret until `revealed_at`: once every table of the group has played
    the deal or is closed (docs/fair-play.md). Nothing public reads `seed` before that
    (readers ask tournaments.sealing: `deal_revealed`, `deal_seed`); `__str__` never shows it.
    """

    tournament = models.ForeignKey(Tournament, on_delete=models.CASCADE, related_name="deals")
    group = models.PositiveIntegerField()
    index = models.PositiveIntegerField()
    seed = models.CharField(max_length=64)
    commitment = models.CharField(max_length=64)
    created_at = models.DateTimeField(auto_now_add=True)
    revealed_at = models.DateTimeField(null=True, blank=True)
    # Expected points per seat of the house-bot baseline (tournaments.scoring.baseline),
    # computed off the recording path once the deal is revealed; never shown before.
    baseline = models.JSONField(null=True, blank=True)

    class Meta:
        ordering = ["tournament_id", "group", "index"]
        constraints = [
            models.UniqueConstraint(
                fields=["tournament", "group", "index"], name="deal_tournament_group_index_unique"
            )
        ]

    def __str__(self) -> str:
        return f"deal {self.group}/{self.index} of {self.tournament_id}"


class TableSeat(models.Model):
    """The starting seat of an entrant at a table, and the table's outcome for it."""

    table = models.ForeignKey(Table, on_delete=models.CASCADE, related_name="seats")
    seat = models.PositiveSmallIntegerField()
    entrant = models.ForeignKey(Entrant, on_delete=models.CASCADE, related_name="table_seats")
    points = models.IntegerField(default=0)
    place = models.PositiveSmallIntegerField(null=True, blank=True)
    advanced = models.BooleanField(null=True, blank=True)
    forfeited = models.BooleanField(default=False)

    class Meta:
        ordering = ["table_id", "seat"]
        constraints = [
            models.UniqueConstraint(fields=["table", "seat"], name="table_seat_unique"),
            models.UniqueConstraint(fields=["table", "entrant"], name="table_entrant_unique"),
        ]


class Game(models.Model):
    table = models.ForeignKey(Table, on_delete=models.CASCADE, related_name="games", db_index=False)
    index = models.PositiveIntegerField()
    # No index of its own (recording stays cheap): games are read by table, not by deal.
    deal = models.ForeignKey(Deal, on_delete=models.CASCADE, related_name="games", db_index=False)
    players = models.PositiveSmallIntegerField(validators=seats_validators)
    finishing_order = models.JSONField(default=list)
    points = models.JSONField(default=list)
    strikes = models.JSONField(default=list)
    forfeits = models.JSONField(default=list)
    # Per-seat totals of the timing log: moves, thinking ms, slowest move, fallbacks.
    timing = models.JSONField(default=dict)
    duration_ms = models.PositiveIntegerField(default=0)
    recorded_at = models.DateTimeField(auto_now_add=True)
    pool = models.ForeignKey(
        RatingPool, null=True, blank=True, on_delete=models.PROTECT, related_name="games"
    )
    rating_seq = models.PositiveBigIntegerField(null=True, blank=True)

    class Meta:
        ordering = ["table_id", "index"]
        constraints = [
            models.UniqueConstraint(fields=["table", "index"], name="game_table_index_unique"),
            models.UniqueConstraint(
                fields=["pool", "rating_seq"],
                name="game_pool_seq_unique",
                condition=Q(rating_seq__isnull=False),
            ),
        ]

    def __str__(self) -> str:
        return f"game {self.table_id}#{self.index}"


class GameSeat(models.Model):
    # Foreign keys covered by a composite index below carry no index of their own: fewer
    # indexes to update is what keeps recording cheap.
    game = models.ForeignKey(Game, on_delete=models.CASCADE, related_name="seats", db_index=False)
    seat = models.PositiveSmallIntegerField()
    bot = models.ForeignKey(Bot, on_delete=models.PROTECT, related_name="game_seats", db_index=False)
    entrant = models.ForeignKey(
        Entrant, null=True, blank=True, on_delete=models.SET_NULL, related_name="game_seats"
    )
    version = models.ForeignKey(
        BotVersion, null=True, blank=True, on_delete=models.SET_NULL, related_name="game_seats"
    )
    place = models.PositiveSmallIntegerField()
    points = models.IntegerField()
    strikes = models.PositiveSmallIntegerField(default=0)
    forfeited = models.BooleanField(default=False)

    class Meta:
        ordering = ["game_id", "seat"]
        constraints = [
            models.UniqueConstraint(fields=["game", "seat"], name="game_seat_unique"),
            models.UniqueConstraint(fields=["game", "bot"], name="game_bot_unique"),
        ]
        indexes = [models.Index(fields=["bot", "game"])]


def _stored_replay(game_id: int | None) -> str:
    return "The stored replay" if game_id is None else f"The stored replay of game {game_id}"


class Replay(models.Model):
    """The engine's replay JSON, zlib-compressed (about 4x smaller than the JSON text)."""

    ENCODING = "zlib+json"

    game = models.OneToOneField(Game, on_delete=models.CASCADE, primary_key=True)
    schema = models.CharField(max_length=40)
    encoding = models.CharField(max_length=16, default=ENCODING)
    data = models.BinaryField()
    raw_size = models.PositiveIntegerField()
    # The referee's per-move timing log (tienlen.timing/1), zlib-compressed JSON.
    timing = models.BinaryField(null=True, blank=True)

    def decoded_text(self) -> str:
        """The replay JSON exactly as the referee sent it; ReplayError if the stored bytes
        are damaged (not zlib, not UTF-8)."""
        return self.text_of(self.data, game_id=self.game_id)

    def read(self) -> dict:
        """The replay, read by the engine's one reader (bots_sdk.rules.replay_read: parsed,
        its shape checked); ReplayError naming the game if it cannot be read."""
        return self.read_data(self.data, game_id=self.game_id)

    @staticmethod
    def text_of(data: bytes | memoryview, *, game_id: int | None = None) -> str:
        try:
            return zlib.decompress(bytes(data)).decode("utf-8")
        except (zlib.error, UnicodeDecodeError) as exc:
            raise ReplayError(f"{_stored_replay(game_id)} is damaged: {exc}") from None

    @staticmethod
    def read_data(data: bytes | memoryview, *, game_id: int | None = None) -> dict:
        """Read a stored replay's `data` column (for queries that fetch only the column)."""
        text = Replay.text_of(data, game_id=game_id)
        try:
            return replay_read(text)
        except ReplayError as exc:
            raise ReplayError(f"{_stored_replay(game_id)} cannot be read: {exc}") from None

    def decoded_timing(self) -> str | None:
        return zlib.decompress(bytes(self.timing)).decode("utf-8") if self.timing else None


class RatingChange(models.Model):
    """One bot's rating change from one game: the rating history."""

    pool = models.ForeignKey(RatingPool, on_delete=models.CASCADE, related_name="changes", db_index=False)
    bot = models.ForeignKey(Bot, on_delete=models.CASCADE, related_name="rating_changes")
    game = models.ForeignKey(Game, on_delete=models.CASCADE, related_name="rating_changes", db_index=False)
    seq = models.PositiveBigIntegerField()
    rating_before = models.FloatField()
    rating_after = models.FloatField()

    class Meta:
        ordering = ["pool_id", "seq", "bot_id"]
        constraints = [
            models.UniqueConstraint(fields=["game", "bot"], name="rating_change_unique")
        ]
        indexes = [models.Index(fields=["pool", "bot", "seq"])]

    @property
    def delta(self) -> float:
        return self.rating_after - self.rating_before


class Referee(models.Model):
    """A referee of the pool as it last reported itself (referee_service.pool): workers
    route tables to the live ones, bots learn their addresses from it. Written only by the
    referees' heartbeats; live = a heartbeat within TIENLEN_REFEREE_TIMEOUT_S, measured on
    the database's clock (never the referee's, which may differ)."""

    referee_id = models.CharField(max_length=64, unique=True)
    address = models.CharField(max_length=255)
    capacity = models.PositiveIntegerField()
    active_tables = models.PositiveIntegerField(default=0)
    # {bot id: {"free": tables it could start there now, "active": tables it plays
    # there, "version": the version it reported}}
    bots = models.JSONField(default=dict)
    draining = models.BooleanField(default=False)
    started_at = models.DateTimeField()
    last_heartbeat = models.DateTimeField()

    class Meta:
        ordering = ["referee_id"]

    def __str__(self) -> str:
        return f"referee {self.referee_id} at {self.address}"


class CasualTable(models.Model):
    """A person playing one seat against bots (the play page, docs/web.md "Play").

    Out of competition: its deals are drawn by the referee with `secrets` for this table
    alone (never a tournament deal group's), its games are never rated, and they count only
    in each bot's "people vs bots" record. While it plays, the seat gateway
    (tournaments/play/casual.py) keeps the public state (`public_state`: what any watcher
    may see) apart from the person's own (`seat_state`: their hand and legal plays, shown
    to them only, through tournaments/sealing.py)."""

    class Status(models.TextChoices):
        PENDING = "pending"
        RUNNING = "running"
        DONE = "done"
        FAILED = "failed"

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE,
                              related_name="casual_tables")
    preset = models.CharField(max_length=32)
    players = models.PositiveSmallIntegerField(validators=seats_validators)
    games = models.PositiveSmallIntegerField(default=1)
    # The person's own clock (chosen on the play page); the bots' seats play on the table's
    # bot clock (bot_*), as at a tournament table.
    move_time_ms = models.PositiveIntegerField()
    time_bank_ms = models.PositiveIntegerField()
    bot_move_time_ms = models.PositiveIntegerField(default=1000)
    bot_time_bank_ms = models.PositiveIntegerField(default=10000)
    status = models.CharField(max_length=8, choices=Status.choices, default=Status.PENDING)
    detail = models.CharField(max_length=300, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    left_at = models.DateTimeField(null=True, blank=True)
    # When the gateway last wrote the table (its start, a move asked, a game recorded): a
    # running table silent for longer than its clocks allow lost its worker
    # (services.casual.casual_tables_abandon).
    touched_at = models.DateTimeField(null=True, blank=True)
    totals = models.JSONField(default=list, blank=True)  # per seat index (CasualSeat.index)
    # Written by the seat gateway only; bumped `version` tells the streams something changed.
    public_state = models.JSONField(default=dict, blank=True)
    seat_state = models.JSONField(default=dict, blank=True)
    # The current game's public moves one by one, as the referee streams them (LiveMove),
    # in the form sealing.casual_public_move gives: anyone may watch them.
    live_state = models.JSONField(default=dict, blank=True)
    answer = models.JSONField(null=True, blank=True)
    version = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["status", "-created_at"], name="casual_status_created_idx")]

    @property
    def is_open(self) -> bool:
        return self.status in (self.Status.PENDING, self.Status.RUNNING)


class CasualSeat(models.Model):
    """One participant of a casual table: the person (`bot` null) or a bot."""

    table = models.ForeignKey(CasualTable, on_delete=models.CASCADE, related_name="seats")
    index = models.PositiveSmallIntegerField()
    bot = models.ForeignKey(Bot, null=True, blank=True, on_delete=models.PROTECT,
                            related_name="casual_seats")
    name = models.CharField(max_length=150)

    class Meta:
        ordering = ["table", "index"]
        constraints = [models.UniqueConstraint(fields=["table", "index"], name="casual_seat_unique")]


class CasualGame(models.Model):
    """One finished game of a casual table, with the referee's replay as it came."""

    table = models.ForeignKey(CasualTable, on_delete=models.CASCADE, related_name="casual_games")
    index = models.PositiveIntegerField()
    seat_participants = models.JSONField(default=list)  # seat -> CasualSeat.index
    points = models.JSONField(default=list)  # per seat of this game
    replay_text = models.TextField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["table", "index"]
        constraints = [models.UniqueConstraint(fields=["table", "index"], name="casual_game_unique")]
