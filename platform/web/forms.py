"""Forms of the site: validation gives a clear message per field and never loses input."""

from __future__ import annotations

from django import forms
from django.contrib.auth.forms import UserCreationForm

from bots_sdk.rules import PRESETS
from tournaments.models import Bot, Tournament, name_validator
from tournaments.services import verification

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


class TournamentForm(forms.Form):
    name = forms.CharField(max_length=120)
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
    games_per_table = forms.IntegerField(min_value=1, max_value=1000, required=False, help_text="Leave empty to play duplicate sets × seats games per table.")
    duplicate_sets = forms.IntegerField(min_value=1, max_value=100, initial=1, help_text="With seat rotation, each set is one deal played in every seat.")
    cycles = forms.IntegerField(min_value=1, max_value=50, initial=1, help_text="Round robin: times the schedule is repeated.")
    advance_per_table = forms.IntegerField(min_value=1, max_value=3, initial=2, help_text="Knockout: players advancing from each table.")
    move_time_ms = forms.IntegerField(min_value=10, max_value=60000, initial=1000, label="Time per move (ms)")
    time_bank_ms = forms.IntegerField(min_value=0, max_value=600000, initial=10000, label="Time bank (ms)")
    rated = forms.BooleanField(required=False, initial=True)
    verified_entry = forms.BooleanField(
        required=False, initial=False, label="Verified entry",
        help_text="Admit only bots of verified accounts (approved by staff, or with a confirmed e-mail "
        "address); house bots are exempt. Keeps out throw-away accounts that could collude at a table.",
    )
    entrants = forms.ModelMultipleChoiceField(
        queryset=Bot.objects.filter(revoked_at__isnull=True).order_by("name"),
        required=False,
        help_text="Hold Ctrl/Cmd to select several.",
    )
    seed = forms.CharField(
        max_length=64, required=False,
        help_text="Leave empty for secret deals. A seed makes the deals reproducible — and known to you: "
        "the tournament is then labelled “reproducible: deals known to the organiser”.",
    )

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
        entrants = data.get("entrants")
        seats = data.get("seats_per_table")
        if entrants and seats and data.get("format") != Tournament.Format.LADDER and len(entrants) < seats:
            self.add_error("entrants", f"Pick at least {seats} entrants for tables of {seats}.")
        return data
