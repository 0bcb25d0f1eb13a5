"""`manage.py create_api_token USER [--name NAME]`: a personal API token for a script, made
on the server (no web session, no password over the network). Prints the token once; only
its hash is stored. The token acts as USER: an organiser's token runs tournaments."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from tournaments.services.accounts import api_token_create, user_is_organiser


class Command(BaseCommand):
    help = "Create a personal API token for USER and print it (shown once)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username", help="The user the token acts as.")
        parser.add_argument("--name", default="", help="What the token is for (shown in the list).")

    def handle(self, *args: object, **options: object) -> None:
        username = str(options["username"])
        user = get_user_model().objects.filter(username=username).first()
        if user is None:
            raise CommandError(
                f"no user named {username!r}: create one with `manage.py createsuperuser` "
                "or on the site's sign-up page"
            )
        if not user.is_active:
            raise CommandError(f"user {username!r} is inactive: its tokens would not work")
        token, key = api_token_create(user=user, name=str(options["name"]))
        role = "organiser" if user_is_organiser(user=user) else "not an organiser"
        self.stderr.write(f"API token {token.prefix}… for {username} ({role}); shown once:")
        self.stdout.write(key)
