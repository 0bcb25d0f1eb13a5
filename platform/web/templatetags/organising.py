"""`{% if user|organises %}`: whether the menu offers Organise — the same rule as the
organiser pages and the API (`tournaments.services.accounts.user_is_organiser`), so a site
that lets everyone organise (TIENLEN_ANYONE_ORGANISES) shows it to everyone signed in."""

from __future__ import annotations

from django import template

from tournaments.services.accounts import user_is_organiser

register = template.Library()


@register.filter(name="organises")
def organises(user) -> bool:
    return user_is_organiser(user=user)
