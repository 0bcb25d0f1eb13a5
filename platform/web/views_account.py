"""Sign-up, sign-in and bot registration (the token is shown exactly once)."""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import login
from django.contrib.auth.decorators import login_required
from django.contrib.auth.views import LoginView, LogoutView
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST
from django_ratelimit.decorators import ratelimit

from tournaments.models import ApiToken, Bot
from tournaments.services import accounts, verification
from web.forms import ApiTokenForm, BotEditForm, BotRegisterForm, EmailChangeForm, SignUpForm


def referee_address() -> str:
    return getattr(settings, "REFEREE_PUBLIC_ADDRESS", "") or "127.0.0.1:50051"


def run_command() -> str:
    """The command to run a bot, asking for its token: a token typed into the command line
    stays in the shell's history (and in `ps` for everyone on the machine)."""
    return f"read -rs TIENLEN_TOKEN && export TIENLEN_TOKEN && tienlen-bot run my_bot/bot.py --server {referee_address()}"


def _signup_rate(group: str, request: HttpRequest) -> str:
    return settings.TIENLEN_SIGNUP_RATE  # read per request, so tests and operators can change it


@ratelimit(key="ip", rate=_signup_rate, method="POST", block=False)
def signup(request: HttpRequest) -> HttpResponse:
    """Sign-up with Django's password checks, and at most TIENLEN_SIGNUP_RATE new accounts
    per client address: one address making accounts in bulk is asked to wait (429)."""
    if request.user.is_authenticated:
        return redirect("web:my_bots")
    form = SignUpForm(request.POST or None)
    if request.method == "POST" and getattr(request, "limited", False):
        form.is_valid()  # keep the typed name and show field errors too
        form.add_error(
            None,
            "Too many accounts were created from your address recently; please try again later.",
        )
        return render(request, "web/signup.html", {"form": form}, status=429)
    if request.method == "POST" and form.is_valid():
        user = form.save()
        login(request, user, backend="django.contrib.auth.backends.ModelBackend")
        welcome = f"Welcome, {user.username}! Register your first bot below."
        if user.email:
            _send_confirmation(request, user)
            welcome += f" We sent a confirmation link to {user.email}."
        messages.success(request, welcome)
        return redirect("web:bot_register")
    return render(request, "web/signup.html", {"form": form})


def _send_confirmation(request: HttpRequest, user) -> None:
    uidb64, token = verification.email_confirmation_token(user=user)
    link = request.build_absolute_uri(reverse("web:email_confirm", args=[uidb64, token]))
    verification.email_confirmation_send(user=user, link=link)


def email_confirm(request: HttpRequest, uidb64: str, token: str) -> HttpResponse:
    """The link of a confirmation e-mail. Opening it (GET) confirms nothing — mail scanners
    and link previews open links too — it shows a button; the POST uses the link once."""
    user = verification.email_confirmation_user(uidb64=uidb64, token=token)
    if user is None:
        return _confirm_page(request, None, status=400)
    if request.method == "POST":
        try:
            confirmed = verification.email_confirm(uidb64=uidb64, token=token)
        except ValidationError as exc:
            messages.error(request, "; ".join(exc.messages))
            return _confirm_page(request, None, status=409)
        if confirmed is None:
            return _confirm_page(request, None, status=400)
        messages.success(request, f"{confirmed.email} is confirmed: {confirmed.username}'s bots may enter tournaments with verified entry.")
        return redirect("web:account" if request.user.is_authenticated and request.user.pk == confirmed.pk else "web:login")
    return _confirm_page(request, user, status=200)


def _confirm_page(request: HttpRequest, user, *, status: int) -> HttpResponse:
    response = render(request, "web/email_confirm.html", {"confirm_user": user}, status=status)
    response["Cache-Control"] = "no-store"
    response["Referrer-Policy"] = "no-referrer"  # the token is in the address
    return response


def _email_rate(group: str, request: HttpRequest) -> str:
    return settings.TIENLEN_EMAIL_RATE


@login_required
@ratelimit(key="user", rate=_email_rate, method="POST", block=False)
def account(request: HttpRequest) -> HttpResponse:
    """The account's e-mail address and whether it is verified: change the address (it is
    then unconfirmed: a link goes to the new one) or have the link sent again."""
    user = request.user
    form = EmailChangeForm(request.POST or None, initial={"email": user.email})
    if request.method == "POST":
        if getattr(request, "limited", False):
            messages.error(request, "Too many confirmation e-mails were asked for recently; please try again later.")
            return _account_page(request, form, status=429)
        if request.POST.get("action") == "resend":
            if user.email and verification.user_verification(user=user) != "email":
                _send_confirmation(request, user)
                messages.success(request, f"We sent a new confirmation link to {user.email}.")
            return redirect("web:account")
        if form.is_valid():
            try:
                changed = verification.user_email_change(user=user, email=form.cleaned_data["email"])
            except ValidationError as exc:
                _form_errors(form, exc)
            else:
                if changed and user.email:
                    _send_confirmation(request, user)
                    messages.success(request, f"Address changed: open the link we sent to {user.email} to confirm it.")
                elif changed:
                    messages.success(request, "Address removed.")
                return redirect("web:account")
    return _account_page(request, form, status=200)


def _account_page(request: HttpRequest, form, *, status: int) -> HttpResponse:
    return render(
        request, "web/account.html",
        {"form": form, "verified_by": verification.user_verification(user=request.user)},
        status=status,
    )


class SignInView(LoginView):
    template_name = "web/login.html"
    redirect_authenticated_user = True


class SignOutView(LogoutView):
    pass


@login_required
def my_bots(request: HttpRequest) -> HttpResponse:
    from tournaments.selectors.entries import bot_invitations, my_bots_status

    verified = verification.user_verified(user=request.user)
    response = render(request, "web/my_bots.html", {
        "rows": my_bots_status(owner=request.user), "verified": verified,
        "invitations": list(bot_invitations(owner=request.user)),
    })
    response["Cache-Control"] = "private, no-store"
    return response


@login_required
def bot_register(request: HttpRequest) -> HttpResponse:
    form = BotRegisterForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            bot, token = accounts.bot_create(
                owner=request.user, name=form.cleaned_data["name"], description=form.cleaned_data["description"]
            )
        except ValidationError as exc:
            _form_errors(form, exc)
        else:
            return _token_page(request, bot, token or "", created=True)
    return render(request, "web/bot_register.html", {"form": form})


@login_required
@require_POST
def bot_token_rotate(request: HttpRequest, name: str) -> HttpResponse:
    bot = get_object_or_404(Bot, name=name, owner=request.user)
    try:
        token = accounts.bot_token_rotate(bot=bot)
    except ValidationError as exc:
        messages.error(request, "; ".join(exc.messages))
        return redirect("web:my_bots")
    return _token_page(request, bot, token, created=False)


@login_required
def bot_edit(request: HttpRequest, name: str) -> HttpResponse:
    bot = get_object_or_404(Bot, name=name, owner=request.user)
    form = BotEditForm(request.POST or None, initial={"description": bot.description,
                                                      "accepts_invitations": bot.accepts_invitations})
    if request.method == "POST" and form.is_valid():
        try:
            accounts.bot_update(bot=bot, description=form.cleaned_data["description"],
                                accepts_invitations=form.cleaned_data["accepts_invitations"])
        except ValidationError as exc:
            _form_errors(form, exc)
        else:
            messages.success(request, f"{bot.name} updated.")
            return redirect("web:bot_detail", name=bot.name)
    return render(request, "web/bot_edit.html", {"bot": bot, "form": form})


@login_required
@require_POST
def bot_retire(request: HttpRequest, name: str) -> HttpResponse:
    """Revoke the token: the bot can no longer connect; its games and ratings stay."""
    bot = get_object_or_404(Bot, name=name, owner=request.user)
    accounts.bot_revoke(bot=bot)
    messages.success(request, f"{bot.name} is retired: its token no longer works. A new token brings it back.")
    return redirect("web:my_bots")


def _form_errors(form, exc: ValidationError) -> None:
    """Put a service's validation errors on the matching fields (or the whole form)."""
    if hasattr(exc, "error_dict"):
        for field, errors in exc.message_dict.items():
            form.add_error(field if field in form.fields else None, errors)
    else:
        form.add_error(None, exc.messages)


def _token_page(request: HttpRequest, bot: Bot, token: str, *, created: bool) -> HttpResponse:
    response = render(
        request,
        "web/bot_token.html",
        {
            "bot": bot,
            "token": token,
            "command": run_command(),
            "created": created,
            "server": referee_address(),
            "sdk_install": settings.TIENLEN_SDK_INSTALL,
            "sdk_install_note": settings.TIENLEN_SDK_INSTALL_NOTE,
        },
    )
    response["Cache-Control"] = "no-store"  # the token must not sit in any cache
    return response


# --- personal API tokens (for scripts and the JSON API) ----------------------------------


@login_required
def api_tokens(request: HttpRequest) -> HttpResponse:
    """List, create and revoke your API tokens. A new token is shown once, on the answer to
    the POST that made it (never cached); afterwards only its prefix is known."""
    form = ApiTokenForm(request.POST or None)
    created = None
    if request.method == "POST" and form.is_valid():
        token, key = accounts.api_token_create(user=request.user, name=form.cleaned_data["name"])
        created = {"token": token, "key": key}
        form = ApiTokenForm()
    tokens = ApiToken.objects.filter(user=request.user).order_by("revoked_at", "-created_at")
    response = render(
        request,
        "web/api_tokens.html",
        {
            "form": form,
            "tokens": tokens,
            "created": created,
            "is_organiser": accounts.user_is_organiser(user=request.user),
            "api_root": request.build_absolute_uri("/api/v1/"),
        },
    )
    if created:
        response["Cache-Control"] = "no-store"  # the token must not sit in any cache
    return response


@login_required
@require_POST
def api_token_revoke(request: HttpRequest, token_id: int) -> HttpResponse:
    token = get_object_or_404(ApiToken, pk=token_id, user=request.user)  # only your own
    accounts.api_token_revoke(token=token)
    messages.success(request, f"Token {token.prefix}\u2026{' (' + token.name + ')' if token.name else ''} revoked: it no longer works.")
    return redirect("web:api_tokens")
