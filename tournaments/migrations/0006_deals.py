"""Deals as rows (docs/fair-play.md): the schema, with the new columns still nullable.

0007 fills them from the existing tables and games; 0008 makes them required and drops the
derived table and game seeds. Three steps because PostgreSQL refuses to ALTER a table that
has pending trigger events from rows updated in the same transaction.
"""

import django.db.models.deletion
from django.db import migrations, models

import tournaments.models


class Migration(migrations.Migration):

    dependencies = [
        ('tournaments', '0005_table_games_rated'),
    ]

    operations = [
        migrations.CreateModel(
            name='Deal',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('group', models.PositiveIntegerField()),
                ('index', models.PositiveIntegerField()),
                ('seed', models.CharField(max_length=64)),
                ('commitment', models.CharField(max_length=64)),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('revealed_at', models.DateTimeField(blank=True, null=True)),
                ('tournament', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='deals', to='tournaments.tournament')),
            ],
            options={
                'ordering': ['tournament_id', 'group', 'index'],
                'constraints': [models.UniqueConstraint(fields=('tournament', 'group', 'index'), name='deal_tournament_group_index_unique')],
            },
        ),
        migrations.RenameField(
            model_name='tournament',
            old_name='seed',
            new_name='organiser_seed',
        ),
        migrations.AlterField(
            model_name='tournament',
            name='organiser_seed',
            field=models.CharField(blank=True, default='', max_length=64),
        ),
        migrations.AddField(
            model_name='tournament',
            name='salt',
            field=models.CharField(default=tournaments.models.new_salt, max_length=64),
        ),
        migrations.AddField(
            model_name='tournament',
            name='deal_format',
            field=models.CharField(choices=[('independent', 'Independent deals: every deal is played once'), ('rotation', 'Seat rotation of one deal (trusted entrants only: deals repeat to the same bots)')], default='independent', max_length=16),
        ),
        migrations.AddField(
            model_name='table',
            name='deal_group',
            field=models.PositiveIntegerField(null=True),
        ),
        migrations.AddField(
            model_name='game',
            name='deal',
            field=models.ForeignKey(db_index=False, null=True, on_delete=django.db.models.deletion.CASCADE, related_name='games', to='tournaments.deal'),
        ),
    ]
