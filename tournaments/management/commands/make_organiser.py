"""`manage.py make_organiser USER [--revoke]`: give a user the permission to create and run
tournaments (`tournaments.organise_tournaments`), the same as ticking it in the admin.
Staff users (`createsuperuser`) are organisers already."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.core.management.base import BaseCommand, CommandError, CommandParser


class Command(BaseCommand):
    help = "Let USER create and run tournaments (or take it away with --revoke)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")
        parser.add_argument("--revoke", action="store_true", help="Take the permission away.")

    def handle(self, *args: object, **options: object) -> None:
        username = str(options["username"])
        user = get_user_model().objects.filter(username=username).first()
        if user is None:
            raise CommandError(f"no user named {username!r}")
        permission = Permission.objects.get(
            content_type__app_label="tournaments", codename="organise_tournaments"
        )
        if options["revoke"]:
            user.user_permissions.remove(permission)
            note = " (still an organiser: staff users always are)" if user.is_staff else ""
            self.stdout.write(f"{username} may no longer organise tournaments{note}.")
        else:
            user.user_permissions.add(permission)
            self.stdout.write(f"{username} may now create and run tournaments.")
