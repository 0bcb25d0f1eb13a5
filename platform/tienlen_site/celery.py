"""The Celery app (`celery -A tienlen_site worker`, with `platform/` on PYTHONPATH).

Tasks are acknowledged late and rejected back to the queue when a worker dies, so a table
is always finished by some worker; recording is idempotent, which makes that safe.
"""

import os
import sys
from pathlib import Path

_platform_dir = str(Path(__file__).resolve().parent.parent)
_root_dir = str(Path(__file__).resolve().parent.parent.parent)
for _path in (_root_dir, _platform_dir):
    if _path not in sys.path:
        sys.path.insert(0, _path)
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tienlen_site.settings")

from celery import Celery  # noqa: E402

app = Celery("tienlen_site")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
