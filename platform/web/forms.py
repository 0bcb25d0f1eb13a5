"""Forms of the site: validation gives a clear message per field and never loses input."""

from __future__ import annotations

from django import forms
from django.contrib.auth.forms import UserCreationForm

from bots_sdk.rules import PRESETS
from tournaments.models import Bot, Tournament, name_validator
from tournaments.services import verification
from tournaments.services.accounts import HOUSE_BOT_DESCRIPTIONS, house_bot_kinds
from tournaments.services.tournaments import owner_rule_problem

# How the form names the engine's presets; the presets themselves are the engine's
# (bots_sdk.rules.PRESETS): a preset without a label here is offered by its name.
PRESET_LABELS = {
    "south": "Southern (miền Nam), default",
    "south_extended": "Southern with free four-pair chops",
    "hue": "Huế",
    "danang": "Đà Nẵng",
    "north": "Northern (miền Bắc)",
}
PRESET_CHOICES = [
    (name, f"{name} — {PRESET_LABELS[name]}" if name in PRESET_LABELS else name) for name in PRESETS
]


class SignUpForm(UserCreationForm):
    email = forms.EmailField(
        required=False,
        help_text="Optional. We send it a confirmation link: a confirmed address lets your bots enter "
        "tournaments that admit only verified accounts. Only used to reach you about your bots.",
    )

    class Meta(UserCreationForm.Meta):
        fields = ("username", "email")

    def clean_email(self) -> str:
        email = self.cleaned_data.get("email") or ""
        if verification.email_taken(email=email):
            raise forms.ValidationError(verification.ADDRESS_TAKEN)
        return email


class EmailChangeForm(forms.Form):
    email = forms.EmailField(
        required=False, label="E-mail address",
        help_text="A new address is unconfirmed until you open the link we send to it.",
    )


class BotRegisterForm(forms.Form):
    name = forms.CharField(max_length=63, validators=[name_validator], help_text="Shown on leaderboards; letters, digits, '_', '.', '-'.")
    description = forms.CharField(widget=forms.Textarea(attrs={"rows": 3}), required=False, max_length=2000)

    def clean_name(self) -> str:
        name = self.cleaned_data["name"]
        if Bot.objects.filter(name__iexact=name).exists():
            raise forms.ValidationError("A bot with this name already exists; pick another name.")
        return name


class ApiTokenForm(forms.Form):
    name = forms.CharField(
        max_length=100, required=False,
        help_text="What it is for (\u201cCI\u201d, \u201claptop script\u201d): shown in the list so you know which to revoke.",
    )


class BotEditForm(forms.Form):
    description = forms.CharField(widget=forms.Textarea(attrs={"rows": 4}), required=False, max_length=2000)
    accepts_invitations = forms.BooleanField(
        required=False, label="Any organiser may enter this bot without asking",
        help_text="Off (the default): an organiser's entry of it is an invitation you accept or decline "
        "on My bots. On: it is accepted at once.",
    )


class BotChoiceField(forms.ModelMultipleChoiceField):
    """Bots listed with their owner: the owner rule is about owners, so the organiser sees them."""

    def label_from_instance(self, obj: Bot) -> str:
        return f"{obj.name} ({obj.owner.username})"


def house_bot_choices() -> list[tuple[str, str]]:
    return [(kind, HOUSE_BOT_DESCRIPTIONS.get(kind, kind)) for kind in house_bot_kinds()]


#: Which formats a field of the tournament form applies to (the others: every format). The
#: form's script (tournament-form.js) shows only the current format's; without a script
#: every field shows, its label saying which format it is for; the service ignores none.
FORMAT_FIELDS = {
    "cycles": ("round_robin",),
    "advance_per_table": ("knockout",),
    "ladder_tables_per_tick": ("ladder",),
}
FORMAT_NAMES = {"round_robin": "round robin", "knockout": "knockout", "ladder": "ladder"}

#: The form's sections, in order (tournament_new.html draws one fieldset each).
SECTIONS = (
    ("About", ("name", "slug", "description", "format")),
    ("Rules and games", ("preset", "options", "seats_per_table", "deal_format", "games_per_table",
                         "duplicate_sets", "move_time_ms", "time_bank_ms")),
    ("Round robin", ("cycles",)),
    ("Knockout", ("advance_per_table",)),
    ("Ladder", ("ladder_tables_per_tick",)),
    ("Entrants", ("entrants", "house_bots", "allow_same_owner", "verified_entry")),
    ("Registration", ("open_registration", "registration_opens_at", "registration_closes_at")),
    ("Start and fairness", ("starts_at", "connect_deadline_s", "rated", "seed")),
)

REGISTRATION_CHOICES = [
    ("", "The format's default: ladders open, round robins and knockouts by invitation"),
    ("open", "Open: bot owners join with their own bots"),
    ("closed", "By invitation: you enter the bots (other owners accept)"),
]


class EntrantsWidget(forms.CheckboxSelectMultiple):
    """A checkbox per bot, under a filter box (tournament-form.js): searchable, no Ctrl-click."""

    template_name = "web/widgets/entrants.html"


class TournamentForm(forms.Form):
    name = forms.CharField(max_length=120)
    slug = forms.SlugField(
        max_length=80, required=False,
        help_text="The tournament's address, /tournaments/<slug>/. Leave empty to make one from the name.",
    )
    description = forms.CharField(widget=forms.Textarea(attrs={"rows": 3}), required=False, max_length=5000)
    format = forms.ChoiceField(choices=Tournament.Format.choices)
    preset = forms.ChoiceField(choices=PRESET_CHOICES, initial="south")
    options = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 2, "placeholder": '{"count_stuck_on_instant_win": true}'}),
        help_text="Rule option overrides as JSON (optional).",
    )
    seats_per_table = forms.TypedChoiceField(choices=[(4, "4"), (3, "3"), (2, "2")], coerce=int, initial=4)
    deal_format = forms.ChoiceField(
        choices=Tournament.DealFormat.choices, initial=Tournament.DealFormat.FIELD,
        help_text="Field duplicates (the default) play each deal at several tables, each bot once. "
        "Seat rotation repeats each deal to the same bots: house bots only, never for ladders.",
    )
    games_per_table = forms.IntegerField(
        min_value=1, max_value=1000, required=False,
        help_text="Leave empty to play duplicate sets × seats games per table; when set, duplicate sets are not used.",
    )
    duplicate_sets = forms.IntegerField(
        min_value=1, max_value=100, initial=1, required=False,
        help_text="Used when games per table is empty (then 1 if left empty too). With seat rotation, "
        "each set is one deal played in every seat.",
    )
    # The format's own fields are optional: empty, the format's default (1, 2, 1).
    cycles = forms.IntegerField(min_value=1, max_value=50, initial=1, required=False,
                                help_text="Times the schedule is repeated.")
    advance_per_table = forms.IntegerField(min_value=1, max_value=3, initial=2, required=False,
                                           help_text="Players advancing from each table (fewer than its seats).")
    ladder_tables_per_tick = forms.IntegerField(
        min_value=1, max_value=100, initial=1, label="Tables per tick", required=False,
        help_text="Tables the ladder starts at each scheduler tick (about every 30 s), among the bots connected then.",
    )
    move_time_ms = forms.IntegerField(min_value=10, max_value=600_000, initial=1000, label="Time per move (ms)")
    time_bank_ms = forms.IntegerField(min_value=0, max_value=3_600_000, initial=10000, label="Time bank (ms)")
    connect_deadline_s = forms.IntegerField(
        min_value=0, max_value=86_400, initial=300, label="Connect deadline (s)", required=False,
        help_text="How long a table waits for an absent bot before it forfeits.",
    )
    rated = forms.BooleanField(required=False, initial=True)
    verified_entry = forms.BooleanField(
        required=False, initial=False, label="Verified entry",
        help_text="Admit only bots of verified accounts (approved by staff, or with a confirmed e-mail "
        "address); house bots are exempt. Keeps out throw-away accounts that could collude at a table.",
    )
    entrants = BotChoiceField(
        queryset=Bot.objects.filter(revoked_at__isnull=True, house_bot="").select_related("owner").order_by("name"),
        required=False, widget=EntrantsWidget,
        help_text="Bots of every owner (the owner in brackets); type in the box to filter. Your own bots "
        "enter at once; another owner's bot is <b>invited</b>: it plays once its owner accepts, and "
        "Start waits until every invitation is answered.",
    )
    house_bots = forms.MultipleChoiceField(
        choices=house_bot_choices, required=False, widget=forms.CheckboxSelectMultiple,
        help_text="Played by the referee itself: always connected, open to every organiser. Each "
        "counts as an owner of its own, so they fill the seats the owner rule leaves empty.",
    )
    allow_same_owner = forms.BooleanField(
        required=False, label="Allow one owner's bots at a table",
        help_text="To compare your own bots with each other (your v1 against your v2) next to "
        "other owners' bots. Bots of one owner could help each other at a table, so the "
        "tournament is labelled “one owner's bots may share a table”: a private comparison, "
        "best unrated. Not needed when every bot but the house bots is yours.",
    )
    open_registration = forms.ChoiceField(
        choices=REGISTRATION_CHOICES, required=False, label="Registration",
        help_text="Open: bot owners enter their own bots from the tournament page (Join) or the API, "
        "one bot per owner unless one owner's bots may share a table.",
    )
    registration_opens_at = forms.DateTimeField(
        required=False, label="Registration opens (UTC)", widget=forms.DateTimeInput(attrs={"type": "datetime-local"}),
        help_text="Open registration only. Empty: at once.",
    )
    registration_closes_at = forms.DateTimeField(
        required=False, label="Registration closes (UTC)", widget=forms.DateTimeInput(attrs={"type": "datetime-local"}),
        help_text="Open registration only. Empty: when a round robin or knockout starts; a ladder stays open while it runs.",
    )
    starts_at = forms.DateTimeField(
        required=False, label="Scheduled start (UTC)", widget=forms.DateTimeInput(attrs={"type": "datetime-local"}),
        help_text="Empty: play begins when you press Start. Set: Start schedules play for this time.",
    )
    seed = forms.CharField(
        max_length=64, required=False,
        help_text="Leave empty for secret deals. A seed makes the deals reproducible — and known to you: "
        "the tournament is then labelled “reproducible: deals known to the organiser”.",
    )

    def __init__(self, *args, user=None, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.user = user
        for name, formats in FORMAT_FIELDS.items():
            field = self.fields[name]
            field.formats = " ".join(formats)  # type: ignore[attr-defined]
            field.label = f"{field.label or name.replace('_', ' ').capitalize()} ({', '.join(FORMAT_NAMES[f] for f in formats)})"

    def sections(self) -> list[tuple[str, str, list]]:
        """(title, the formats it is for or "", its bound fields), for the template."""
        out = []
        for title, names in SECTIONS:
            formats = {getattr(self.fields[n], "formats", "") for n in names}
            out.append((title, formats.pop() if len(formats) == 1 else "", [self[n] for n in names]))
        return out

    @classmethod
    def initial_for(cls, tournament: Tournament, bots: list[Bot]) -> dict:
        """The form prefilled with a draft's settings and entrants (to edit it). The seed is
        not shown again: left empty, the draft keeps it."""
        import json

        initial = {name: getattr(tournament, name) for name in cls.base_fields if hasattr(tournament, name)}
        initial["options"] = json.dumps(tournament.options) if tournament.options else ""
        initial["duplicate_sets"] = tournament.duplicate_sets or 1  # 0 when games per table are set
        initial["seed"] = ""
        initial["open_registration"] = "open" if tournament.open_registration else "closed"
        initial["entrants"] = [b.pk for b in bots if not b.house_bot]
        initial["house_bots"] = [b.house_bot for b in bots if b.house_bot]
        return initial

    def clean_options(self) -> dict:
        import json

        text = (self.cleaned_data.get("options") or "").strip()
        if not text:
            return {}
        try:
            value = json.loads(text)
        except ValueError as exc:
            raise forms.ValidationError(f"Not valid JSON: {exc}") from exc
        if not isinstance(value, dict):
            raise forms.ValidationError("Options must be a JSON object of option names to values.")
        return value

    def clean(self) -> dict:
        # The rule options are checked by tournament_create (its errors land on the field).
        data = super().clean()
        entrants = list(data.get("entrants") or [])
        # Stand-ins for the house bots (created, if they must be, only when the draft is saved).
        house = [Bot(name=f"house-{kind}", house_bot=kind) for kind in data.get("house_bots") or []]
        seats = data.get("seats_per_table")
        field_size = len(entrants) + len(house)
        registration = data.get("open_registration")
        data["open_registration"] = None if not registration else registration == "open"
        is_open = data["open_registration"] or (registration == "" and data.get("format") == Tournament.Format.LADDER)
        if (field_size and seats and data.get("format") != Tournament.Format.LADDER and field_size < seats
                and not is_open):
            self.add_error("entrants", f"Pick at least {seats} entrants (house bots count) for tables of {seats}.")
        elif field_size and seats and data.get("format"):
            # The owner rule, as Start will check it: said now, before the draft is saved.
            problem = owner_rule_problem(
                format=data["format"], seats_per_table=seats,
                allow_same_owner=bool(data.get("allow_same_owner")), bots=entrants + house,
            )
            if problem:
                self.add_error("entrants", problem)
        return data


class TournamentEditForm(TournamentForm):
    """The creation form for a draft's edit: the same fields and checks, the seed kept
    unless a new one is given (it is never shown again)."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.fields["seed"].help_text = (
            "Leave empty to keep the deals as they are (secret, or from the seed you set). A new seed "
            "replaces it: the deals are then reproducible — and known to you. To make a reproducible "
            "draft's deals secret again, PATCH its seed to \u201c\u201d through the API."
        )
