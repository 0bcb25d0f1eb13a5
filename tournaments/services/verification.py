"""Verified entry: which accounts are approved, staff approval, and e-mail confirmation.

A tournament or ladder with `verified_entry` admits only bots whose owner's account is
approved (house bots are exempt: the referee runs them). The rule, written once here:

* a **staff** account is approved (the operator knows its people);
* an account **approved by staff** (the admin's action, or `POST /api/v1/accounts/<username>/approval/`);
* an account whose owner **confirmed its current e-mail address** through the link sent at
  sign-up (or when the address changes). A changed address is unconfirmed until its own
  link is used.

An e-mail confirmation proves an address, not a person: whoever has many addresses can
confirm many accounts, so staff approval is the strong form (docs/fair-play.md, "Collusion
at one table"). The confirmation token is Django's password-reset token machinery
(`PasswordResetTokenGenerator`: a salted HMAC of the state below with the site's
SECRET_KEY, a timestamp, constant-time comparison) with our own salt, state and lifetime:
it is bound to the user (its id) and the address, works once (the nonce it was made with
is replaced when it is used, and when the address changes) and expires after
`TIENLEN_EMAIL_CONFIRM_TIMEOUT_S` (default 3 days).
"""

from __future__ import annotations

import secrets
from collections.abc import Iterable

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.tokens import PasswordResetTokenGenerator
from django.core.exceptions import ValidationError
from django.core.mail import send_mail
from django.core.validators import validate_email
from django.db import IntegrityError, transaction
from django.utils import timezone
from django.utils.crypto import constant_time_compare
from django.utils.encoding import force_bytes, force_str
from django.utils.http import base36_to_int, urlsafe_base64_decode, urlsafe_base64_encode

from tournaments.models import AccountVerification, Bot

DEFAULT_CONFIRM_TIMEOUT_S = 3 * 24 * 3600


def _how(user, record: AccountVerification | None) -> str:
    """The rule itself, on a user and its verification record (None: it has none)."""
    if user.is_staff:
        return "staff"
    if record is None:
        return ""
    if record.approved_at is not None:
        return "approved"
    if record.email_confirmed and record.email_confirmed == (user.email or "").lower():
        return "email"
    return ""


def user_verification(*, user) -> str:
    """How the account is approved: "staff", "approved", "email", or "" (it is not)."""
    if user is None or not user.is_authenticated:
        return ""
    return _how(user, AccountVerification.objects.filter(user_id=user.pk).first())


def user_verification_loaded(user) -> str:
    """`user_verification` for a user fetched with select_related("verification") (lists:
    no query per row)."""
    try:
        record = user.verification
    except AccountVerification.DoesNotExist:
        record = None
    return _how(user, record)


def user_verified(*, user) -> bool:
    return bool(user_verification(user=user))


NOT_VERIFIED = (
    "{bot}: this tournament admits only verified accounts, and the account of its owner "
    "{owner} is not verified (confirm its e-mail address from the link sent to it, or ask "
    "staff to approve it)."
)


def bots_unverified(*, bots: Iterable[Bot]) -> list[Bot]:
    """The bots among `bots` that a verified-entry tournament refuses (one query): not a
    house bot, and the owner not approved."""
    ids = [b.pk for b in bots if not b.house_bot]
    if not ids:
        return []
    found = Bot.objects.filter(pk__in=ids).select_related("owner__verification").order_by("name")
    return [b for b in found if not user_verification_loaded(b.owner)]


def bot_entry_check(*, bot: Bot) -> None:
    """ValidationError on `bot` unless it may enter a verified-entry tournament."""
    if bots_unverified(bots=[bot]):
        raise ValidationError({"bot": NOT_VERIFIED.format(bot=bot.name, owner=bot.owner.username)})


# --- staff approval ----------------------------------------------------------------------


def account_approve(*, user, by) -> AccountVerification:
    """Staff approve an account for verified entry."""
    if not (by is not None and by.is_authenticated and by.is_staff):
        raise PermissionError("Only staff can approve accounts.")
    record, _ = AccountVerification.objects.get_or_create(user=user)
    record.approved_at = timezone.now()
    record.approved_by = by
    record.save(update_fields=["approved_at", "approved_by"])
    return record


def account_approval_revoke(*, user, by) -> AccountVerification:
    """Staff withdraw an account's verification: the approval and the e-mail confirmation
    (an address can be confirmed again; deactivate the user to keep a person out)."""
    if not (by is not None and by.is_authenticated and by.is_staff):
        raise PermissionError("Only staff can revoke an approval.")
    record, _ = AccountVerification.objects.get_or_create(user=user)
    record.approved_at = None
    record.approved_by = None
    record.email_confirmed = ""
    record.email_confirmed_at = None
    record.email_nonce = secrets.token_hex(16)
    record.save()
    return record


# --- e-mail confirmation -----------------------------------------------------------------


class EmailConfirmationTokens(PasswordResetTokenGenerator):
    """Django's token generator with this purpose's salt, state and lifetime."""

    key_salt = "tournaments.services.verification.EmailConfirmationTokens"

    def _make_hash_value(self, user, timestamp: int) -> str:
        record = AccountVerification.objects.filter(user_id=user.pk).first()
        nonce = record.email_nonce if record is not None else ""
        return f"{user.pk}\n{(user.email or '').lower()}\n{nonce}\n{timestamp}"

    def check_token(self, user, token) -> bool:
        """The parent's check with this purpose's lifetime (the parent reads
        PASSWORD_RESET_TIMEOUT, which is the password reset's business)."""
        if not (user and token and isinstance(token, str)):
            return False
        try:
            ts = base36_to_int(token.split("-")[0])
        except ValueError:
            return False
        if not any(
            constant_time_compare(self._make_token_with_timestamp(user, ts, secret), token)
            for secret in [self.secret, *self.secret_fallbacks]
        ):
            return False
        age = self._num_seconds(self._now()) - ts
        return 0 <= age <= confirm_timeout_s()


tokens = EmailConfirmationTokens()


def confirm_timeout_s() -> int:
    return int(getattr(settings, "TIENLEN_EMAIL_CONFIRM_TIMEOUT_S", DEFAULT_CONFIRM_TIMEOUT_S))


def email_confirmation_token(*, user) -> tuple[str, str]:
    """(uidb64, token) for the confirmation link of the user's current address."""
    return urlsafe_base64_encode(force_bytes(user.pk)), tokens.make_token(user)


def email_confirmation_user(*, uidb64: str, token: str):
    """The user a confirmation link is for, if the link is valid now; else None."""
    try:
        pk = int(force_str(urlsafe_base64_decode(uidb64)))
    except (ValueError, TypeError, OverflowError):
        return None
    user = get_user_model().objects.filter(pk=pk, is_active=True).first()
    if user is None or not user.email or not tokens.check_token(user, token):
        return None
    return user


ADDRESS_TAKEN = "This address already confirms another account: one address confirms one account."


def email_confirm(*, uidb64: str, token: str):
    """Use a confirmation link: the address it was sent to is confirmed, the link is spent.
    Returns the user, or None when the link is invalid, expired, used, or for an address
    the account no longer has; ValidationError when the address confirms another account
    (the database's unique constraint holds it under a race too)."""
    with transaction.atomic():
        user = email_confirmation_user(uidb64=uidb64, token=token)
        if user is None:
            return None
        record, _ = AccountVerification.objects.select_for_update().get_or_create(user=user)
        # Checked again under the row's lock: two uses of one link at once confirm once.
        if not tokens.check_token(user, token):
            return None
        address = user.email.lower()
        if AccountVerification.objects.filter(email_confirmed=address).exclude(user=user).exists():
            raise ValidationError({"email": ADDRESS_TAKEN})
        record.email_confirmed = address
        record.email_confirmed_at = timezone.now()
        record.email_nonce = secrets.token_hex(16)
        try:
            with transaction.atomic():
                record.save(update_fields=["email_confirmed", "email_confirmed_at", "email_nonce"])
        except IntegrityError:
            raise ValidationError({"email": ADDRESS_TAKEN}) from None
    return user


def email_confirmation_send(*, user, link: str) -> None:
    """Send the confirmation link to the user's address, once the transaction commits
    (Django's e-mail framework: EMAIL_BACKEND, docs/deployment.md)."""
    if not user.email:
        return
    hours = confirm_timeout_s() // 3600
    subject = "Confirm your e-mail address for the Tiến Lên platform"
    body = (
        f"Hello {user.username},\n\n"
        f"Open this link to confirm {user.email} for your account {user.username}:\n\n"
        f"{link}\n\n"
        f"A confirmed address lets your bots enter tournaments that admit only verified "
        f"accounts. The link works once and expires in {hours} hours. If you did not ask "
        f"for it, ignore this message.\n"
    )
    address = user.email
    # robust: a mail server that refuses is logged, and the sign-up or change stays done.
    transaction.on_commit(lambda: send_mail(subject, body, None, [address]), robust=True)


def email_taken(*, email: str, user=None) -> bool:
    """The address already confirms an account (another than `user`)."""
    taken = AccountVerification.objects.filter(email_confirmed=(email or "").strip().lower())
    if user is not None:
        taken = taken.exclude(user_id=user.pk)
    return bool(email) and taken.exists()


def user_email_change(*, user, email: str) -> bool:
    """Set the user's address; a new address is unconfirmed (and the old links die).
    Returns True when the address changed."""
    email = (email or "").strip()
    if email:
        validate_email(email)
        if email_taken(email=email, user=user):
            raise ValidationError({"email": ADDRESS_TAKEN})
    if email.lower() == (user.email or "").lower():
        return False
    with transaction.atomic():
        user.email = email
        user.save(update_fields=["email"])
        record, _ = AccountVerification.objects.select_for_update().get_or_create(user=user)
        record.email_confirmed = ""
        record.email_confirmed_at = None
        record.email_nonce = secrets.token_hex(16)
        record.save(update_fields=["email_confirmed", "email_confirmed_at", "email_nonce"])
    return True
