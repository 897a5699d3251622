"""Settings for Funnybone, read from the environment with safe defaults.

With no environment at all the platform runs on SQLite and a file-system
Celery broker (no servers needed). Set ``DATABASE_URL`` and
``CELERY_BROKER_URL`` (or ``REDIS_URL``) for PostgreSQL and Redis/RabbitMQ.
"""

import os
from pathlib import Path

import dj_database_url
from django.utils.csp import CSP

from .env import env_bool, env_int, env_list, env_str

# Arrow (the Parquet export) allocates with malloc: its default allocator, mimalloc,
# keeps ~20 MB more resident in the exporting process (docs/load.md). Set before
# anything imports pyarrow; an operator's own choice wins.
os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", "system")

BASE_DIR = Path(__file__).resolve().parent.parent
DATA_DIR = Path(env_str("FUNNYBONE_DATA_DIR", str(BASE_DIR / "var")))

DEBUG = env_bool("DEBUG", False)
# A shared server: a secret key is required and load_demo will not create the demo login.
FUNNYBONE_PRODUCTION = env_bool("FUNNYBONE_PRODUCTION", False)
SECRET_KEY = env_str("SECRET_KEY")
if not SECRET_KEY:
    if not DEBUG and FUNNYBONE_PRODUCTION:
        raise RuntimeError("SECRET_KEY must be set in production")
    # Development only: a per-checkout key so sessions survive restarts.
    _key_file = DATA_DIR / "secret_key"
    if _key_file.exists():
        SECRET_KEY = _key_file.read_text().strip()
    else:
        import secrets

        DATA_DIR.mkdir(parents=True, exist_ok=True)
        SECRET_KEY = secrets.token_urlsafe(50)
        _key_file.write_text(SECRET_KEY)

ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", "localhost,127.0.0.1,[::1]")
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework.authtoken",
    "drf_spectacular",
    "django_htmx",
    "annotation",
    "ratings",
    "judging",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "funnybone.middleware.RefuseNulMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django.middleware.csp.ContentSecurityPolicyMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "funnybone.deprecation.DeprecatedApiMiddleware",
]

ROOT_URLCONF = "funnybone.urls"
WSGI_APPLICATION = "funnybone.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
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

DATABASES = {
    "default": dj_database_url.parse(
        env_str("DATABASE_URL", f"sqlite:///{DATA_DIR / 'funnybone.sqlite3'}"),
        conn_max_age=env_int("DB_CONN_MAX_AGE", 60),
        conn_health_checks=True,
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # WAL + a busy timeout let the web server and the worker share the file.
    DATABASES["default"]["OPTIONS"] = {
        "timeout": 30,
        "transaction_mode": "IMMEDIATE",
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
    }
    DATABASES["default"]["CONN_MAX_AGE"] = 0

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# Django's four validators: invited experts choose their own passwords (annotation.views.experts).
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "researcher:study_list"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en"
# The annotator pages speak the study's language (its config ``language``, see annotation/languages.py);
# the researcher's pages stay English. Catalogs live in locale/ and are committed compiled (.mo).
LANGUAGES = [("en", "English"), ("zh-hans", "简体中文"), ("ja", "日本語")]
LOCALE_PATHS = [BASE_DIR / "locale"]
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = DATA_DIR / "staticfiles"
STATIC_ROOT.mkdir(parents=True, exist_ok=True)  # WhiteNoise warns on every request otherwise
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": (
            "whitenoise.storage.CompressedManifestStaticFilesStorage"
            if not DEBUG and env_bool("FUNNYBONE_MANIFEST_STATIC", False)
            else "django.contrib.staticfiles.storage.StaticFilesStorage"
        )
    },
}
MEDIA_ROOT = DATA_DIR / "media"
WHITENOISE_USE_FINDERS = True

# Security defaults: strict unless explicitly relaxed for local HTTP.
SESSION_ENGINE = "funnybone.sessions"  # Django's database sessions, read with one plain query
SESSION_COOKIE_HTTPONLY = True
CSRF_COOKIE_HTTPONLY = False  # htmx reads the token from the page, not the cookie
X_FRAME_OPTIONS = "DENY"
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
_https = env_bool("FUNNYBONE_HTTPS", False)
SESSION_COOKIE_SECURE = _https
CSRF_COOKIE_SECURE = _https
SECURE_SSL_REDIRECT = _https
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 31536000 if _https else 0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = _https
SECURE_HSTS_PRELOAD = _https
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https") if _https else None
# Pages load only our own scripts, styles and images (htmx is served from static/): no inline
# script or style attribute runs, so injected markup cannot execute. data: images are the
# protocol report's embedded figures.
SECURE_CSP = {
    "default-src": [CSP.SELF],
    "script-src": [CSP.SELF],
    "style-src": [CSP.SELF],
    "img-src": [CSP.SELF, "data:"],
    "object-src": [CSP.NONE],
    "base-uri": [CSP.SELF],
    "form-action": [CSP.SELF],
    "frame-ancestors": [CSP.NONE],
}

DATA_UPLOAD_MAX_MEMORY_SIZE = env_int("DATA_UPLOAD_MAX_MEMORY_SIZE", 10 * 1024 * 1024)
FILE_UPLOAD_MAX_MEMORY_SIZE = DATA_UPLOAD_MAX_MEMORY_SIZE
FUNNYBONE_EXPORT_INLINE_MAX = env_int("FUNNYBONE_EXPORT_INLINE_MAX", 20_000)
# Stored reports (analysis, alignment, protocol, tournament) of studies with at most this many
# judgments are computed in the page's request when out of date; bigger ones only by a worker.
FUNNYBONE_REPORT_INLINE_JUDGMENTS = env_int("FUNNYBONE_REPORT_INLINE_JUDGMENTS", 5_000)
# The analysis report builds a study's whole items × raters matrix (float64) up to this many cells
# (25 million: 200 MB); above, its agreement reads only the items with two ratings or more.
FUNNYBONE_DENSE_MATRIX_CELLS = env_int("FUNNYBONE_DENSE_MATRIX_CELLS", 25_000_000)
FUNNYBONE_IMPORT_MAX_BYTES = env_int("FUNNYBONE_IMPORT_MAX_BYTES", 50 * 1024 * 1024)
# Item and protocol files up to this size are imported while the researcher waits; bigger ones by a worker.
FUNNYBONE_IMPORT_INLINE_MAX_BYTES = env_int("FUNNYBONE_IMPORT_INLINE_MAX_BYTES", 1024 * 1024)
# Every background job (imports, exports, reports, judge runs, generations, tournaments, and a run's
# units) holds one lease renewed by a heartbeat; a job silent for longer than the lease belongs to a
# dead worker and is re-queued (up to its attempts) or marked failed (annotation.jobs). The former
# FUNNYBONE_RUN_LEASE_SECONDS is read when this is unset.
FUNNYBONE_JOB_LEASE_SECONDS = max(
    2, env_int("FUNNYBONE_JOB_LEASE_SECONDS", 30, formerly=("FUNNYBONE_RUN_LEASE_SECONDS",))
)
# Several beats per lease, so one late beat (a busy database) is not taken for a death.
FUNNYBONE_JOB_HEARTBEAT_SECONDS = env_int("FUNNYBONE_JOB_HEARTBEAT_SECONDS", max(1, FUNNYBONE_JOB_LEASE_SECONDS // 3))
if FUNNYBONE_JOB_HEARTBEAT_SECONDS * 2 > FUNNYBONE_JOB_LEASE_SECONDS:
    raise RuntimeError("FUNNYBONE_JOB_HEARTBEAT_SECONDS must be at most half of FUNNYBONE_JOB_LEASE_SECONDS")
FUNNYBONE_IMPORT_MAX_ATTEMPTS = env_int("FUNNYBONE_IMPORT_MAX_ATTEMPTS", 2)
# Media on items (docs/media.md): the largest file and the most pixels (per frame) an import accepts,
# and how many files one archive may hold.
FUNNYBONE_MEDIA_MAX_BYTES = env_int("FUNNYBONE_MEDIA_MAX_BYTES", 10 * 1024 * 1024)
FUNNYBONE_MEDIA_MAX_PIXELS = env_int("FUNNYBONE_MEDIA_MAX_PIXELS", 40_000_000)
FUNNYBONE_MEDIA_MAX_FILES = env_int("FUNNYBONE_MEDIA_MAX_FILES", 5_000)
# In production nginx sends media bytes: the view answers with X-Accel-Redirect to this internal location.
FUNNYBONE_MEDIA_X_ACCEL = env_bool("FUNNYBONE_MEDIA_X_ACCEL", FUNNYBONE_PRODUCTION)
FUNNYBONE_MEDIA_ACCEL_PREFIX = env_str("FUNNYBONE_MEDIA_ACCEL_PREFIX", "/_protected_media/")

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.TokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_PAGINATION_CLASS": "annotation.api.pagination.BoundedLimitOffsetPagination",
    # JSON bodies within FUNNYBONE_JSON_* (depth, size, digits): a 400 naming the place, not a 500.
    "DEFAULT_PARSER_CLASSES": [
        "annotation.api.json_input.BoundedJSONParser",
        "rest_framework.parsers.FormParser",
        "rest_framework.parsers.MultiPartParser",
    ],
    "PAGE_SIZE": 500,
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Funnybone API",
    "DESCRIPTION": "Studies, items and judgments for humor research.",
    "VERSION": "0.1.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "PREPROCESSING_HOOKS": ["funnybone.schema.v1_schema_only"],
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "funnybone.schema.common_error_answers",
    ],
    "ENUM_NAME_OVERRIDES": {
        "ImportFormatEnum": "annotation.models.ItemImport.Format",
        "ExportFormatEnum": "ratings.exports.formats.format_choices",
        "RunStatusEnum": "judging.models.RunStatus",
    },
}

# Judge API keys stored in the database are encrypted with a key derived from this
# (or from SECRET_KEY when unset); keys named by an environment variable are never stored.
FUNNYBONE_KEY_SECRET = env_str("FUNNYBONE_KEY_SECRET")
# Earlier values of that secret (or of SECRET_KEY), comma-separated: stored keys encrypted under
# them still decrypt after a rotation; `manage.py rotate_judge_keys` moves them to the current one.
FUNNYBONE_KEY_SECRET_OLD = env_list("FUNNYBONE_KEY_SECRET_OLD")
# Environment variables a researcher may name as a judge's or generator's key (besides any named
# FUNNYBONE_JUDGE_KEY_*); anything else, SECRET_KEY or DATABASE_URL say, is refused (judging.keys).
FUNNYBONE_JUDGE_KEY_ENVS = env_list("FUNNYBONE_JUDGE_KEY_ENVS")

# Hosts (``host`` or ``host:port``) a judge's base URL may point at; empty allows any.
# Set it on shared servers so a researcher cannot make the workers call internal addresses.
FUNNYBONE_JUDGE_URL_ALLOWLIST = env_list("FUNNYBONE_JUDGE_URL_ALLOWLIST")
# Networks (CIDR) judges and generators may reach although they are not public: loopback, private,
# link-local... are refused otherwise, on every connection (judging.outbound). `make run` allows loopback.
FUNNYBONE_OUTBOUND_ALLOW_NETWORKS = env_list("FUNNYBONE_OUTBOUND_ALLOW_NETWORKS")

# Limits on what users type or upload (see README, docs/judging.md and docs/study-files.md).
# A rendered prompt (system or user message) may be at most this many characters.
FUNNYBONE_PROMPT_MAX_CHARS = env_int("FUNNYBONE_PROMPT_MAX_CHARS", 100_000)
# Parsed JSON and YAML (API bodies, study files, study config, item metadata): nesting depth,
# values in all (YAML aliases count once per use), digits of an integer, characters of a string.
FUNNYBONE_JSON_MAX_DEPTH = env_int("FUNNYBONE_JSON_MAX_DEPTH", 32)
FUNNYBONE_JSON_MAX_NODES = env_int("FUNNYBONE_JSON_MAX_NODES", 1_000_000)
FUNNYBONE_JSON_MAX_INT_DIGITS = env_int("FUNNYBONE_JSON_MAX_INT_DIGITS", 30)
FUNNYBONE_JSON_MAX_STRING_CHARS = env_int("FUNNYBONE_JSON_MAX_STRING_CHARS", 1_000_000)

# Celery: a file-system broker by default so `make run` needs no server.
_redis_url = env_str("REDIS_URL")
CELERY_BROKER_URL = env_str("CELERY_BROKER_URL", _redis_url or "filesystem://")
CELERY_BROKER_TRANSPORT_OPTIONS = {}
if CELERY_BROKER_URL.startswith("filesystem://"):
    _broker_dir = Path(env_str("FUNNYBONE_BROKER_DIR", str(DATA_DIR / "broker")))
    for sub in ("out", "processed", "control"):
        (_broker_dir / sub).mkdir(parents=True, exist_ok=True)
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(_broker_dir / "out"),
        "data_folder_out": str(_broker_dir / "out"),
        "processed_folder": str(_broker_dir / "processed"),
        "control_folder": str(_broker_dir / "control"),
        "store_processed": False,
    }
CELERY_TASK_ALWAYS_EAGER = False
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_IGNORE_RESULT = True
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# Every task ends: at the soft limit it gets SoftTimeLimitExceeded (and records why it
# failed), at the hard limit the pool kills its process. Tasks that need other bounds
# set their own below; the prefork pool enforces them (the solo pool cannot).
CELERY_TASK_SOFT_TIME_LIMIT = env_int("CELERY_TASK_SOFT_TIME_LIMIT", 60 * 60)
CELERY_TASK_TIME_LIMIT = env_int("CELERY_TASK_TIME_LIMIT", CELERY_TASK_SOFT_TIME_LIMIT + 5 * 60)
# Item and protocol imports: a file that takes longer than this is refused, not ground through.
FUNNYBONE_IMPORT_SOFT_TIME_LIMIT = env_int("FUNNYBONE_IMPORT_SOFT_TIME_LIMIT", 15 * 60)
FUNNYBONE_IMPORT_TIME_LIMIT = env_int("FUNNYBONE_IMPORT_TIME_LIMIT", FUNNYBONE_IMPORT_SOFT_TIME_LIMIT + 60)
# Judge runs, generations and tournaments work unit by unit under leases and can be resumed;
# they may run for hours, so they get their own, longer bound.
FUNNYBONE_RUN_SOFT_TIME_LIMIT = env_int("FUNNYBONE_RUN_SOFT_TIME_LIMIT", 24 * 60 * 60)
FUNNYBONE_RUN_TIME_LIMIT = env_int("FUNNYBONE_RUN_TIME_LIMIT", FUNNYBONE_RUN_SOFT_TIME_LIMIT + 10 * 60)
for _soft, _hard in (
    ("CELERY_TASK_SOFT_TIME_LIMIT", "CELERY_TASK_TIME_LIMIT"),
    ("FUNNYBONE_IMPORT_SOFT_TIME_LIMIT", "FUNNYBONE_IMPORT_TIME_LIMIT"),
    ("FUNNYBONE_RUN_SOFT_TIME_LIMIT", "FUNNYBONE_RUN_TIME_LIMIT"),
):
    if globals()[_hard] <= globals()[_soft]:
        raise RuntimeError(f"{_hard} must be larger than {_soft}, so the task can record why it stopped")

# Assignment leases: how long an item stays with an annotator after the last sign of life from its
# page; an open item page renews the lease every third of this (annotation.services.leases), so a
# closed page's item is handed out again within minutes.
FUNNYBONE_LEASE_SECONDS = max(3, env_int("FUNNYBONE_LEASE_SECONDS", 3 * 60))
# Crowd entry rate limits, per minute (0 = none): per client address, sized for a study
# launch of a few hundred participants a minute from one network, and per participant id.
FUNNYBONE_ENTRY_RATE_PER_MINUTE = env_int("FUNNYBONE_ENTRY_RATE_PER_MINUTE", 600)
FUNNYBONE_ENTRY_RATE_PER_PARTICIPANT = env_int("FUNNYBONE_ENTRY_RATE_PER_PARTICIPANT", 10)
# How many reverse proxies in front of the web server append to X-Forwarded-For; the client
# address is read from that header only when this is above 0 (see "Behind a reverse proxy").
FUNNYBONE_TRUSTED_PROXY_COUNT = max(0, env_int("FUNNYBONE_TRUSTED_PROXY_COUNT", 0))
# Login throttling: this many failed logins for one username (or from one client address)
# pause logging in for it for FUNNYBONE_LOGIN_LOCKOUT_SECONDS; 0 turns a limit off.
FUNNYBONE_LOGIN_FAILURE_LIMIT = env_int("FUNNYBONE_LOGIN_FAILURE_LIMIT", 5)
FUNNYBONE_LOGIN_ADDRESS_FAILURE_LIMIT = env_int("FUNNYBONE_LOGIN_ADDRESS_FAILURE_LIMIT", 50)
FUNNYBONE_LOGIN_LOCKOUT_SECONDS = max(1, env_int("FUNNYBONE_LOGIN_LOCKOUT_SECONDS", 15 * 60))
# The longest each Celery worker waits between looks for jobs of dead workers (it looks every half
# lease when that is sooner, annotation.jobs.recovery_seconds); 0 = only at start-up.
FUNNYBONE_RECOVERY_SECONDS = env_int("FUNNYBONE_RECOVERY_SECONDS", 300)
# A model call that fails in transport (refused, 5xx, timeout) is retried, beyond the judge's
# retries, until this many seconds have passed: an endpoint restart of a minute is waited out.
FUNNYBONE_JUDGE_RETRY_SECONDS = max(0, env_int("FUNNYBONE_JUDGE_RETRY_SECONDS", 120))

CACHES = {
    "default": (
        {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": _redis_url}
        if _redis_url
        else {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}
    )
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
    # The OpenAI SDK's HTTP client logs every request line at INFO.
    "loggers": {name: {"level": "WARNING"} for name in ("httpx", "httpx2", "openai")},
}
