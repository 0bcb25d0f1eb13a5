"""The owner's side of a hosted bot on the site: upload a version (a zip, or one bot
file), switch the bot between remote and hosted. What the bot page shows of versions and
sessions comes from tournaments.selectors.versions (owner only)."""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect
from django.views.decorators.http import require_POST

from tournaments.hosting import archive
from tournaments.models import Bot, BotSubmission
from tournaments.services.hosting import (
    bot_gate_set,
    bot_hosting_set,
    bot_storage_clear,
    submission_create,
    submission_promote,
)


class SubmissionForm(forms.Form):
    code = forms.FileField(help_text="a zip of your bot's folder, or the bot file itself (bot.py / bot.js)")
    runtime = forms.ChoiceField(choices=BotSubmission.Runtime.choices, initial=BotSubmission.Runtime.PYTHON)


def _single_file_zip(name: str, data: bytes) -> bytes:
    import io
    import zipfile

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr(name, data)
    return buffer.getvalue()


def _errors(exc: ValidationError) -> str:
    return " ".join(exc.messages)


@login_required
@require_POST
def bot_submit(request: HttpRequest, name: str) -> HttpResponse:
    bot = get_object_or_404(Bot, name=name, owner=request.user)
    form = SubmissionForm(request.POST, request.FILES)
    if not form.is_valid():
        messages.error(request, "Choose a file to upload: " + " ".join(str(e) for e in form.errors.values()))
        return redirect("web:bot_detail", name=bot.name)
    upload = form.cleaned_data["code"]
    data = upload.read(archive.MAX_ARCHIVE_BYTES + 1)
    if upload.name in archive.ENTRY.values():
        data = _single_file_zip(upload.name, data)
    try:
        submission = submission_create(bot=bot, user=request.user, data=data, runtime=form.cleaned_data["runtime"])
    except ValidationError as exc:
        messages.error(request, f"Not accepted: {_errors(exc)}")
    else:
        messages.success(request, f"{submission.version} uploaded; it is being validated.")
    return redirect("web:bot_detail", name=bot.name)


@login_required
@require_POST
def bot_hosting(request: HttpRequest, name: str) -> HttpResponse:
    bot = get_object_or_404(Bot, name=name, owner=request.user)
    try:
        bot_hosting_set(bot=bot, user=request.user, hosting=request.POST.get("hosting", ""))
    except (ValidationError, PermissionDenied) as exc:
        messages.error(request, _errors(exc) if isinstance(exc, ValidationError) else str(exc))
    else:
        messages.success(request, f"{bot.name} is now {bot.get_hosting_display()}.")
    return redirect("web:bot_detail", name=bot.name)


def _owner_action(request: HttpRequest, name: str, action, done: str) -> HttpResponse:
    bot = get_object_or_404(Bot, name=name, owner=request.user)  # anyone else: 404
    try:
        action(bot)
    except (ValidationError, PermissionDenied) as exc:
        messages.error(request, _errors(exc) if isinstance(exc, ValidationError) else str(exc))
    else:
        messages.success(request, done)
    return redirect("web:bot_detail", name=bot.name)


@login_required
@require_POST
def bot_gate(request: HttpRequest, name: str) -> HttpResponse:
    gate = request.POST.get("gate", "")
    return _owner_action(request, name, lambda bot: bot_gate_set(bot=bot, user=request.user, gate=gate),
                         "Saved: what a new ready version does first.")


@login_required
@require_POST
def bot_promote(request: HttpRequest, name: str, seq: int) -> HttpResponse:
    return _owner_action(request, name, lambda bot: submission_promote(bot=bot, user=request.user, seq=seq),
                         f"s{seq} is now the active version: later tables play it; its ratings are provisional again.")


@login_required
@require_POST
def bot_storage_clear_view(request: HttpRequest, name: str) -> HttpResponse:
    return _owner_action(request, name, lambda bot: bot_storage_clear(bot=bot, user=request.user),
                         "Its storage is empty: the next session starts with none.")
