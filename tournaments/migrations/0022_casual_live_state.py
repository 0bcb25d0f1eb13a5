from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('tournaments', '0021_casual_touched_at'),
    ]

    operations = [
        migrations.AddField(
            model_name='casualtable',
            name='live_state',
            field=models.JSONField(blank=True, default=dict),
        ),
    ]
