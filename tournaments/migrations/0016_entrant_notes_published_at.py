from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("tournaments", "0015_bot_versions"),
    ]

    operations = [
        migrations.AddField(
            model_name="entrant",
            name="notes_published_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
    ]
