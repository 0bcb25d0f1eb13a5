"""Deals are required from now on; the derived table and game seeds are gone (0006, 0007)."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('tournaments', '0007_deals_from_existing_games'),
    ]

    operations = [
        migrations.RemoveField(
            model_name='table',
            name='seed',
        ),
        migrations.RemoveField(
            model_name='game',
            name='seed',
        ),
        migrations.AlterField(
            model_name='table',
            name='deal_group',
            field=models.PositiveIntegerField(),
        ),
        migrations.AlterField(
            model_name='game',
            name='deal',
            field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='games', to='tournaments.deal'),
        ),
        migrations.AddIndex(
            model_name='table',
            index=models.Index(fields=['tournament', 'deal_group'], name='tournaments_tournam_d6e232_idx'),
        ),
    ]
