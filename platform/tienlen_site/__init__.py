"""The Django project of the Tiến Lên platform (settings, URLs, Celery app).

Lives inside the `platform/` source root under its own name so that the standard
library's `platform` module is never shadowed.
"""

# Celery's Django integration: load the app when Django starts so @shared_task binds to it.
from .celery import app as celery_app

__all__ = ("celery_app",)
