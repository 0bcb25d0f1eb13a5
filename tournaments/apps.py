from django.apps import AppConfig


class TournamentsConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "tournaments"
    verbose_name = "Tournaments"

    def ready(self) -> None:
        # The tasks provide the jobs the services enqueue (tournaments.jobs): loaded in
        # every process, so no write's follow-up waits for an import that never happens.
        from tournaments import tasks  # noqa: F401
