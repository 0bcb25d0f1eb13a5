"""Existing tournaments get deals: a fresh salt each, a deal group per table, and Deal rows.

Before deals were rows, every seed was derived from the tournament seed and published, so
existing tournaments are moved as follows (nothing recorded is lost):
- the old tournament seed is dropped (it was public, not an organiser's secret);
- every recorded game's seed becomes its deal's seed, revealed at once (it was public);
- every deal still to play at a table that is not closed gets a fresh secret seed, so a
  running tournament finishes on deals nobody could compute;
- tables that played each deal in every seat rotation (duplicate sets) keep that format.
"""

import hashlib
import secrets

from django.db import migrations
from django.utils import timezone

CLOSED = ("done", "failed", "cancelled")


def commitment(salt: str, seed: str) -> str:
    # tienlen-deal-commit-v1, frozen here: docs/fair-play.md
    return hashlib.sha256(("tienlen-deal-commit-v1\n" + salt + "\n" + seed).encode("utf-8")).hexdigest()


def forwards(apps, schema_editor):
    Tournament = apps.get_model("tournaments", "Tournament")
    Table = apps.get_model("tournaments", "Table")
    Game = apps.get_model("tournaments", "Game")
    Deal = apps.get_model("tournaments", "Deal")
    now = timezone.now()
    for tournament in Tournament.objects.order_by("pk").iterator():
        rotation = not tournament.games_per_table and tournament.duplicate_sets > 0
        tournament.salt = secrets.token_hex(16)
        tournament.organiser_seed = ""
        tournament.deal_format = "rotation" if rotation else "independent"
        tournament.save(update_fields=["salt", "organiser_seed", "deal_format"])
        tables = list(Table.objects.filter(tournament_id=tournament.pk).order_by("round", "number", "pk"))
        for group, table in enumerate(tables, start=1):
            table.deal_group = group
            table.save(update_fields=["deal_group"])
            per_deal = table.games_planned // tournament.duplicate_sets if rotation else 1
            per_deal = max(1, per_deal)
            deals = {}
            games = list(Game.objects.filter(table_id=table.pk).order_by("index"))
            for game in games:
                index = game.index // per_deal
                deal = deals.get(index)
                if deal is None:
                    deal = deals[index] = Deal.objects.create(
                        tournament_id=tournament.pk, group=group, index=index, seed=game.seed,
                        commitment=commitment(tournament.salt, game.seed), revealed_at=now,
                    )
                game.deal_id = deal.pk
            Game.objects.bulk_update(games, ["deal"], batch_size=1000)
            if table.status in CLOSED:
                continue
            for index in range(-(-table.games_planned // per_deal)):
                if index not in deals:
                    seed = secrets.token_hex(16)
                    Deal.objects.create(
                        tournament_id=tournament.pk, group=group, index=index, seed=seed,
                        commitment=commitment(tournament.salt, seed),
                    )


class Migration(migrations.Migration):

    dependencies = [
        ('tournaments', '0006_deals'),
    ]

    operations = [
        migrations.RunPython(forwards, migrations.RunPython.noop),
    ]
