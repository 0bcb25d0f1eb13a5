"""The Django project of the Tiến Lên platform (settings, URLs, Celery app).

Lives inside the `platform/` source root under its own name so that the standard
library's `platform` module is never shadowed.
"""
