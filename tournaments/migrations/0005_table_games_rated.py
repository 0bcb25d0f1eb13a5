"""Table.games_rated: how many of a table's games are rated (rating in plan order).

Every game recorded before this migration was rated as it was recorded, so a table's
rated games are counted from the games that carry a rating sequence number.
"""

from django.db import migrations, models
from django.db.models import Count, OuterRef, Q, Subquery
from django.db.models.functions import Coalesce


def count_rated_games(apps, schema_editor):
    Table = apps.get_model("tournaments", "Table")
    Game = apps.get_model("tournaments", "Game")
    rated = (
        Game.objects.filter(table_id=OuterRef("pk"), rating_seq__isnull=False)
        .order_by()
        .values("table_id")
        .annotate(n=Count("id"))
        .values("n")
    )
    Table.objects.filter(Q(games_recorded__gt=0)).update(games_rated=Coalesce(Subquery(rated), 0))


class Migration(migrations.Migration):

    dependencies = [
        ("tournaments", "0004_table_waiting_progress"),
    ]

    operations = [
        migrations.AddField(
            model_name="table",
            name="games_rated",
            field=models.PositiveIntegerField(default=0),
        ),
        migrations.RunPython(count_rated_games, migrations.RunPython.noop),
    ]
