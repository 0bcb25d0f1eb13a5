"""Settings for the processes the end-to-end tests start: the project's, plus a short
Redis visibility timeout so a killed worker's table is redelivered within the test instead
of after the default hour. A single run of a table here takes about 20 s: the timeout must
stay well above that, or a healthy worker's table would be delivered twice."""

from tienlen_site.settings import *  # noqa: F403
from tienlen_site.settings import CELERY_BROKER_URL

if CELERY_BROKER_URL.startswith(("redis://", "rediss://")):
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "visibility_timeout": 60,  # CELERY_VISIBILITY_TIMEOUT in production
        # restore at once (production scans rarely, which is fine for an hour-long timeout)
        "unacked_restore_interval": 1,
        "unacked_restore_throttle": 1,
    }
