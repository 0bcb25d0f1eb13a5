from django.conf import settings
from django.db import migrations, models
import django.db.models.deletion


def ladders_open(apps, schema_editor):
    # Ladders were always open to every bot owner: they stay so.
    apps.get_model("tournaments", "Tournament").objects.filter(format="ladder").update(open_registration=True)


class Migration(migrations.Migration):
    dependencies = [
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
        ("tournaments", "0017_gate_provisional_storage"),
    ]

    operations = [
        migrations.AddField(
            model_name="bot",
            name="last_seen_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="bot",
            name="accepts_invitations",
            field=models.BooleanField(default=False),
        ),
        migrations.AddField(
            model_name="tournament",
            name="open_registration",
            field=models.BooleanField(default=False),
        ),
        migrations.AddField(
            model_name="tournament",
            name="registration_opens_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="tournament",
            name="registration_closes_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AlterField(
            model_name="entrant",
            name="status",
            field=models.CharField(
                choices=[("active", "Active"), ("eliminated", "Eliminated"), ("withdrawn", "Withdrawn"),
                         ("invited", "Invited"), ("disqualified", "Disqualified")],
                default="active", max_length=16,
            ),
        ),
        migrations.AddField(
            model_name="entrant",
            name="status_reason",
            field=models.CharField(blank=True, max_length=300),
        ),
        migrations.AddField(
            model_name="entrant",
            name="invited_by",
            field=models.ForeignKey(
                blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL,
                related_name="+", to=settings.AUTH_USER_MODEL,
            ),
        ),
        migrations.RunPython(ladders_open, migrations.RunPython.noop),
    ]
