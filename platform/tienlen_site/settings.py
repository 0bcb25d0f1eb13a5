"""Settings for the Tiến Lên platform.

Everything that differs between a laptop quick start and a deployment comes from the
environment, with embedded defaults that need no server: SQLite in `var/` and a
filesystem Celery broker. `DATABASE_URL` and `CELERY_BROKER_URL` switch to PostgreSQL and
Redis/RabbitMQ without code changes.
"""

import contextlib
import os
from datetime import timedelta
from pathlib import Path

import dj_database_url
from csp.constants import NONE, SELF, UNSAFE_INLINE

BASE_DIR = Path(__file__).resolve().parent.parent.parent
VAR_DIR = Path(os.environ.get("TIENLEN_VAR_DIR", BASE_DIR / "var"))
VAR_DIR.mkdir(parents=True, exist_ok=True)


def env_bool(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    if value is None:
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


DEBUG = env_bool("DJANGO_DEBUG", True)
SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY", "")
if not SECRET_KEY:
    if not DEBUG:
        raise RuntimeError("DJANGO_SECRET_KEY must be set when DJANGO_DEBUG is off")
    SECRET_KEY = "dev-only-insecure-key-do-not-use-in-production"
ALLOWED_HOSTS = [
    h.strip() for h in os.environ.get("DJANGO_ALLOWED_HOSTS", "127.0.0.1,localhost").split(",") if h.strip()
]
CSRF_TRUSTED_ORIGINS = [
    o.strip() for o in os.environ.get("DJANGO_CSRF_TRUSTED_ORIGINS", "").split(",") if o.strip()
]

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "csp",
    "axes",
    "django_ratelimit",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",  # Swagger UI and Redoc as static files: no CDN
    "django_celery_beat",
    "tournaments",
    "web",
    "demo.apps.DemoAppConfig",  # manage.py run_demo (tooling, outside the domain app)
]

MIDDLEWARE = [
    "tienlen_site.health.HealthCheckMiddleware",  # first: probes skip host/https checks
    "django.middleware.security.SecurityMiddleware",
    "csp.middleware.CSPMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "axes.middleware.AxesMiddleware",  # last: turns a lockout into its 429 page
]

ROOT_URLCONF = "tienlen_site.urls"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

WSGI_APPLICATION = "tienlen_site.wsgi.application"
ASGI_APPLICATION = "tienlen_site.asgi.application"

DATABASES = {
    "default": dj_database_url.config(
        default=f"sqlite:///{VAR_DIR / 'db.sqlite3'}",
        conn_max_age=int(os.environ.get("DATABASE_CONN_MAX_AGE", "60")),
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # Several processes (web, worker) share one SQLite file in the quick start.
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        {"timeout": 30, "transaction_mode": "IMMEDIATE", "init_command": "PRAGMA journal_mode=WAL;"}
    )
    DATABASES["default"]["CONN_MAX_AGE"] = 0

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

# --- sign-in throttling and the sign-up check --------------------------------------------
# django-axes counts failed sign-ins per (username, client address): after
# TIENLEN_LOGIN_FAILURE_LIMIT failures in a row that pair is refused, right password or not,
# for TIENLEN_LOGIN_COOLOFF_MINUTES (answer 429). Per pair, so nobody locks another user out
# from elsewhere. Every authenticate() is covered: the site's sign-in, the admin's, and HTTP
# basic authentication on the API's token endpoint. A success resets the count.
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
AXES_FAILURE_LIMIT = int(os.environ.get("TIENLEN_LOGIN_FAILURE_LIMIT", "5"))
AXES_COOLOFF_TIME = timedelta(minutes=float(os.environ.get("TIENLEN_LOGIN_COOLOFF_MINUTES", "15")))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_CALLABLE = "web.security.lockout_response"
AXES_DISABLE_ACCESS_LOG = True  # failures are kept (AccessAttempt); successful sign-ins are not
# Sign-ups per client address (django-ratelimit, e.g. "5/h"): an address that keeps making
# accounts is asked to wait. The count lives in the cache below.
TIENLEN_SIGNUP_RATE = os.environ.get("TIENLEN_SIGNUP_RATE", "5/h")
# Every signed-in user may organise tournaments of their own (not only staff and holders of
# `tournaments.organise_tournaments`). Off by default; `make demo` turns it on, so a
# newcomer who signs up on the demo's site can run a first tournament from the web.
TIENLEN_ANYONE_ORGANISES = env_bool("TIENLEN_ANYONE_ORGANISES", False)

# How long an e-mail confirmation link works (tournaments.services.verification), and how
# many confirmation e-mails one account may ask for (the sign-up's own limit counts too).
TIENLEN_EMAIL_CONFIRM_TIMEOUT_S = int(os.environ.get("TIENLEN_EMAIL_CONFIRM_TIMEOUT_S", str(3 * 24 * 3600)))
TIENLEN_EMAIL_RATE = os.environ.get("TIENLEN_EMAIL_RATE", "5/h")

# E-mail (Django's framework; docs/deployment.md, "E-mail"): the sign-up's confirmation links.
# By default nothing leaves the machine: each message is a file in var/mail/ (or, with
# DJANGO_EMAIL_BACKEND=console, printed by the web process). DJANGO_EMAIL_BACKEND=smtp sends
# through DJANGO_EMAIL_HOST; any other value is a backend's dotted path.
_EMAIL_BACKENDS = {
    "file": "django.core.mail.backends.filebased.EmailBackend",
    "console": "django.core.mail.backends.console.EmailBackend",
    "smtp": "django.core.mail.backends.smtp.EmailBackend",
}
_email_backend = os.environ.get("DJANGO_EMAIL_BACKEND", "file")
EMAIL_BACKEND = _EMAIL_BACKENDS.get(_email_backend, _email_backend)
EMAIL_FILE_PATH = Path(os.environ.get("DJANGO_EMAIL_FILE_PATH", VAR_DIR / "mail"))
EMAIL_HOST = os.environ.get("DJANGO_EMAIL_HOST", "localhost")
EMAIL_PORT = int(os.environ.get("DJANGO_EMAIL_PORT", "25"))
EMAIL_HOST_USER = os.environ.get("DJANGO_EMAIL_HOST_USER", "")
EMAIL_HOST_PASSWORD = os.environ.get("DJANGO_EMAIL_HOST_PASSWORD", "")
EMAIL_USE_TLS = env_bool("DJANGO_EMAIL_USE_TLS", False)
EMAIL_USE_SSL = env_bool("DJANGO_EMAIL_USE_SSL", False)
EMAIL_TIMEOUT = int(os.environ.get("DJANGO_EMAIL_TIMEOUT", "10"))
DEFAULT_FROM_EMAIL = os.environ.get("DJANGO_DEFAULT_FROM_EMAIL", "tienlen@localhost")

# The cache holds the sign-up counts. DJANGO_CACHE_URL (redis://...) shares one count between
# every web process (the Docker set-up uses its Redis); without it each process counts on
# its own (the quick start has one web process), so with N processes a limit is up to N
# times looser: django-ratelimit's checks say so, and are silenced for that reason.
if os.environ.get("DJANGO_CACHE_URL"):
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": os.environ["DJANGO_CACHE_URL"],
        }
    }
else:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
# E003: a per-process cache (above); W001: Django's own Redis backend, whose incr is atomic.
SILENCED_SYSTEM_CHECKS = ["django_ratelimit.E003", "django_ratelimit.W001"]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "/static/"
STATIC_ROOT = Path(os.environ.get("DJANGO_STATIC_ROOT", VAR_DIR / "static"))
# WhiteNoise warns on every request when the folder is missing (before collectstatic).
with contextlib.suppress(OSError):  # a read-only image already has its collected files
    STATIC_ROOT.mkdir(parents=True, exist_ok=True)

# The site loads every script, style, font and image from itself: a page never depends on
# (or leaks its visitors to) another host, and an injected <script> cannot run. Scripts are
# files only (no inline code, no eval). Style *attributes* (style="width: 40%") are allowed:
# Django's admin and DRF's browsable API write them, and they cannot fetch anything (images
# and fonts are 'self' only).
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": [SELF],
        "script-src": [SELF],
        "style-src": [SELF],
        "style-src-attr": [UNSAFE_INLINE],
        "img-src": [SELF, "data:"],
        "font-src": [SELF],
        "connect-src": [SELF],
        "object-src": [NONE],
        "base-uri": [SELF],
        "form-action": [SELF],
        "frame-ancestors": [NONE],
    },
}

LOGIN_URL = "/accounts/login/"
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "/"

# --- production (deployment; `manage.py check --deploy` passes with docker/env.example) ---
if not DEBUG:
    if len(SECRET_KEY) < 50 or len(set(SECRET_KEY)) < 5:
        raise RuntimeError("DJANGO_SECRET_KEY must be at least 50 random characters in production")
    DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
    SECURE_SSL_REDIRECT = env_bool("DJANGO_SECURE_SSL_REDIRECT", True)
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_HSTS_SECONDS = int(os.environ.get("DJANGO_SECURE_HSTS_SECONDS", "31536000"))
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_HSTS_PRELOAD = True
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    STORAGES = {
        "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
        "staticfiles": {"BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"},
    }

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "INFO")},
    # django-axes announces itself at every start of every command; its warnings stay.
    "loggers": {"axes.apps": {"level": "WARNING"}},
}

# --- tournaments: REST API, Celery, referee (owned by the tournaments app) ---------------
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "tournaments.api.authentication.ApiTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticatedOrReadOnly"],
    "DEFAULT_RENDERER_CLASSES": [
        "rest_framework.renderers.JSONRenderer",
        "tournaments.api.renderers.StrictBrowsableAPIRenderer",
    ],
    "DEFAULT_PAGINATION_CLASS": "tournaments.api.pagination.BoundedLimitOffsetPagination",
    "PAGE_SIZE": 50,
    "DEFAULT_SCHEMA_CLASS": "tournaments.api.schema.PublicAwareAutoSchema",
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Tiến Lên tournament platform API",
    "DESCRIPTION": "Organise bot tournaments, register bots, read standings, ratings and replays.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "COMPONENT_SPLIT_REQUEST": True,
    # Fixed, so that operation ids (v1_bots_list, ...) do not change with the routes.
    "SCHEMA_PATH_PREFIX": r"/api/",
    # The API pages load nothing from another host (see CONTENT_SECURITY_POLICY).
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    # No validator badge: Swagger UI would load it from validator.swagger.io.
    "SWAGGER_UI_SETTINGS": {"deepLinking": True, "validatorUrl": None},
}

# No-server quick start: kombu's filesystem transport under var/ when no broker is set.
CELERY_BROKER_URL = os.environ.get("CELERY_BROKER_URL", "filesystem://")
if CELERY_BROKER_URL.startswith("filesystem://"):
    _broker_dir = VAR_DIR / "celery-broker"
    for _sub in ("out", "processed", "control"):
        (_broker_dir / _sub).mkdir(parents=True, exist_ok=True)
    # kombu's filesystem transport, its messages written whole (tournaments.filesystem_broker).
    CELERY_BROKER_TRANSPORT = "tournaments.filesystem_broker:Transport"
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(_broker_dir / "out"),
        "data_folder_out": str(_broker_dir / "out"),
        "processed_folder": str(_broker_dir / "processed"),
        "store_processed": False,
        # Without this kombu writes its broadcast (pidbox) files into ./control/.
        "control_folder": str(_broker_dir / "control"),
    }
CELERY_RESULT_BACKEND = os.environ.get("CELERY_RESULT_BACKEND") or None
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_DB_REUSE_MAX = 200
# The queue of the work that is not recording (the deals' luck baselines: simulations of
# each revealed deal): a worker playing tables consumes only `celery`, so it never spends
# its time on them; a worker of its own (compose's `analysis`), or one consuming both
# (`--queues celery,analysis`: the image's default, the demo), runs them.
TIENLEN_ANALYSIS_QUEUE = os.environ.get("TIENLEN_ANALYSIS_QUEUE", "analysis")
# The queue of the hosted bots' work (validating a submitted version, running a hosted
# bot's session for a table): consumed only by runners, workers on a host that can sandbox
# (docs/hosting.md), whose concurrency is their sandbox slots.
TIENLEN_RUNNER_QUEUE = os.environ.get("TIENLEN_RUNNER_QUEUE", "runner")
# How long a seat of a table with a hosted bot may stay disconnected before it forfeits
# (the referee's own grace is 10 s): room for a dead runner's session to restart on another
# runner (its lease expires and a reaper queues it again). Read by the table workers.
TIENLEN_HOSTED_DISCONNECT_GRACE_S = float(os.environ.get("TIENLEN_HOSTED_DISCONNECT_GRACE_S", "60"))
CELERY_BEAT_SCHEDULER = "django_celery_beat.schedulers:DatabaseScheduler"
# Celery beat's tick: starts scheduled tournaments when due and ladder tables. Pages read it
# too: a ladder no tick has looked at for two periods (plus a margin) says nobody ticks it.
TIENLEN_TICK_SECONDS = float(os.environ.get("TIENLEN_TICK_SECONDS", "30"))
CELERY_BEAT_SCHEDULE = {
    "tournaments-tick": {
        "task": "tournaments.tasks.tournaments_tick",
        "schedule": TIENLEN_TICK_SECONDS,
    },
}
CELERY_TIMEZONE = TIME_ZONE

REFEREE_TARGET = os.environ.get("REFEREE_TARGET", "127.0.0.1:50051")
REFEREE_ORGANIZER_TOKEN = os.environ.get("REFEREE_ORGANIZER_TOKEN", "dev-organizer-token")
# Bots not connected: a table retries with backoff until this many seconds have passed.
TIENLEN_CONNECT_DEADLINE_S = int(os.environ.get("TIENLEN_CONNECT_DEADLINE_S", "300"))
TIENLEN_DEFAULT_K_FACTOR = float(os.environ.get("TIENLEN_DEFAULT_K_FACTOR", "12"))
# Table leases (docs/deployment.md, "Recovery"): the worker playing a table renews its lease
# every TIENLEN_LEASE_RENEW_SECONDS; a lease not renewed for TIENLEN_LEASE_SECONDS is expired,
# and every worker (and the beat tick) looks for expired leases every
# TIENLEN_LEASE_REAP_SECONDS (0: this worker does not look) and re-enqueues those tables. A
# dead worker's table is resumed within lease + reap seconds (40 s by default).
TIENLEN_LEASE_SECONDS = float(os.environ.get("TIENLEN_LEASE_SECONDS", "30"))
TIENLEN_LEASE_RENEW_SECONDS = float(os.environ.get("TIENLEN_LEASE_RENEW_SECONDS", "10"))
TIENLEN_LEASE_REAP_SECONDS = float(os.environ.get("TIENLEN_LEASE_REAP_SECONDS", "10"))
# The outer bound: a running/waiting table with no progress (no game recorded, no attempt
# begun, no retry noted) for this long is claimed even with a live lease (e.g. stuck at a
# referee). Keep it above the longest game.
TIENLEN_STALE_TABLE_SECONDS = float(os.environ.get("TIENLEN_STALE_TABLE_SECONDS", "900"))
# A referee silent for this long is out of the pool (its heartbeat is every second):
# workers stop routing tables to it and bots stop connecting to it.
TIENLEN_REFEREE_TIMEOUT_S = float(os.environ.get("TIENLEN_REFEREE_TIMEOUT_S", "5"))
# The referee house bot that plays a forfeited seat for the rest of its table.
TIENLEN_STAND_IN_HOUSE_BOT = os.environ.get("TIENLEN_STAND_IN_HOUSE_BOT", "random")

# --- production (continued): no development credential may reach a deployment -----------
if not DEBUG and REFEREE_ORGANIZER_TOKEN in ("", "dev-organizer-token"):
    raise RuntimeError("REFEREE_ORGANIZER_TOKEN must be set to a random secret in production")
# Redis hands a dead worker's table to another worker after this many seconds. A table's
# task runs until the table ends, so it must stay above the longest table, or a healthy
# worker's table is delivered twice.
if CELERY_BROKER_URL.startswith(("redis://", "rediss://")):
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "visibility_timeout": int(os.environ.get("CELERY_VISIBILITY_TIMEOUT", "3600"))
    }

# --- web (spectator site) -----------------------------------------------------------------
# The referee address bot owners connect to, shown in the `tienlen-bot run` command after a
# bot is registered (the public name of REFEREE_TARGET).
REFEREE_PUBLIC_ADDRESS = os.environ.get("REFEREE_PUBLIC_ADDRESS", REFEREE_TARGET)
# How bot owners install the SDK, shown with their token. The SDK alone is its own
# distribution, tienlen-bot-sdk, built from sdk/ in a checkout (not on PyPI): the default is
# the command of the README and docs/bot-guide.md. A site that publishes the wheel or a
# package index states its own command (and blanks the note).
TIENLEN_SDK_INSTALL = os.environ.get("TIENLEN_SDK_INSTALL", "pip install ./packaging/sdk")
TIENLEN_SDK_INSTALL_NOTE = os.environ.get(
    "TIENLEN_SDK_INSTALL_NOTE",
    "in a checkout of the platform's source code, in a virtual environment (Python 3.11); "
    "it is not on PyPI",
)
# How often an open tournament page polls its progress (milliseconds).
WEB_PROGRESS_POLL_MS = int(os.environ.get("WEB_PROGRESS_POLL_MS", "2000"))
# New tables (a schedule's, a knockout round's) are played in groups of this many per
# task: one worker process plays a group's tables TIENLEN_GROUP_THREADS at a time and
# records them as their games arrive (tournaments.play.attempt.tables_attempt;
# docs/deployment.md). 1 (the default): a task per table, one after another, the referee
# idle while the worker plans, records and closes each (benchmarks/README.md, "Two tables
# at once").
TIENLEN_TABLES_PER_TASK = int(os.environ.get("TIENLEN_TABLES_PER_TASK", "1"))
# Of a group's tables, how many one worker process keeps streaming at a time: a thread takes
# the group's next table as soon as its last one is closed (2: the referee plays one while
# the worker records and closes the other; benchmarks/README.md, "Two tables at once").
TIENLEN_GROUP_THREADS = int(os.environ.get("TIENLEN_GROUP_THREADS", "2"))
