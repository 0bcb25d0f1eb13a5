"""`manage.py recompute_ratings`: rebuild every Elo rating from the stored games.

Games are replayed in the order they were rated (each pool's rating_seq), from 1500, with
the pool's K, so the result equals the stored ratings exactly unless K was changed.
"""

from django.core.management.base import BaseCommand, CommandError

from tournaments.models import RatingPool
from tournaments.services.ratings import ratings_recompute


class Command(BaseCommand):
    help = "Rebuild every rating (and the rating history) from the stored games."

    def add_arguments(self, parser):
        parser.add_argument("--pool", action="append", default=[], metavar="PRESET-SEATS",
                            help="Only this pool, e.g. south-4 (repeatable).")
        parser.add_argument("--check", action="store_true",
                            help="Only report the largest difference; change nothing.")

    def handle(self, *args, pool, check, **options):
        pools = list(RatingPool.objects.order_by("preset", "seats"))
        if pool:
            wanted = set(pool)
            unknown = wanted - {p.slug for p in pools}
            if unknown:
                raise CommandError(f"Unknown pool(s): {', '.join(sorted(unknown))} "
                                   f"(known: {', '.join(p.slug for p in pools) or 'none'})")
            pools = [p for p in pools if p.slug in wanted]
        for p in pools:
            report = ratings_recompute(pool=p, write=not check)
            verb = "would change" if check else "changed"
            self.stdout.write(
                f"{report.pool}: {report.games} games, {report.bots} bots, "
                f"{verb} {report.changed_ratings} ratings, max difference {report.max_difference:g}"
            )
