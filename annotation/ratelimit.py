"""Request budgets kept in Django's cache: crowd entry links, and the counter behind login throttling.

Counts live in the default cache, so with Redis (``REDIS_URL``) every web process
and machine sees the same numbers. With the in-memory default each process counts
alone, which is only right for a single process such as ``make run``.

Each count is a fixed window: it starts with the first request and lasts
``window`` seconds. On Redis the increment and its expiry are one script, so a
counter can never be left without an expiry (Django's ``cache.incr`` on Redis
checks that the key exists and increments in two steps; a key expiring between
the two would come back as a counter that never runs out, locking a client out
for good).
"""

import hashlib
import logging
from collections.abc import Callable
from functools import wraps

from django.conf import settings
from django.core import checks
from django.core.cache import caches
from django.core.cache.backends.redis import RedisCache
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.translation import gettext
from redis.exceptions import RedisError

logger = logging.getLogger(__name__)

WINDOW_SECONDS = 60

# INCR then set the expiry if the key has none (it was just created): atomic on the server.
_INCR_WITH_EXPIRY = """
local count = redis.call('INCR', KEYS[1])
if redis.call('TTL', KEYS[1]) < 0 then
  redis.call('EXPIRE', KEYS[1], ARGV[1])
end
return count
"""


def client_address(request: HttpRequest) -> str:
    """The client's address, looking through as many reverse proxies as the settings trust.

    Each trusted proxy appends the address it received the request from to
    ``X-Forwarded-For``, so with ``FUNNYBONE_TRUSTED_PROXY_COUNT = n`` the client
    is the n-th entry from the right; anything further left was written by the
    client and is ignored. With a count of 0 the header is not read at all (a
    client could put anything in it) and ``REMOTE_ADDR`` is the client.
    """
    trusted = settings.FUNNYBONE_TRUSTED_PROXY_COUNT
    if trusted > 0:
        hops = [h.strip() for h in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",") if h.strip()]
        if len(hops) >= trusted:
            return hops[-trusted]
        # Fewer hops than proxies: the request skipped one; only the peer's address is known.
    return request.META.get("REMOTE_ADDR", "") or "unknown"


def _key(scope: str, client: str) -> str:
    # Hashed: a participant id or a forwarded address can be any text, and cache keys
    # must stay short and free of spaces and control characters on every backend.
    digest = hashlib.sha256(client.encode("utf-8", "surrogatepass")).hexdigest()[:32]
    return f"funnybone:rate:{scope}:{digest}"


def hit(*, scope: str, client: str, window: int) -> int:
    """Count one event for ``client`` in ``scope``; the number counted in the current window.

    A cache that cannot be reached counts nothing (returns 0): an outage of the
    cache must not turn away a study's participants or every login.
    """
    key = _key(scope, client)
    cache = caches["default"]
    try:
        if isinstance(cache, RedisCache):
            cache_key = cache.make_and_validate_key(key)
            client_ = cache._cache.get_client(cache_key, write=True)
            return int(client_.register_script(_INCR_WITH_EXPIRY)(keys=[cache_key], args=[window]))
        # add() creates the counter with its expiry only when absent; incr() keeps the expiry.
        cache.add(key, 0, timeout=window)
        try:
            return cache.incr(key)
        except ValueError:
            # It expired between add() and incr(): this is the first event of a new window.
            cache.add(key, 1, timeout=window)
            return 1
    except RedisError:
        logger.warning("Rate counter %s unavailable; not counting", scope, exc_info=True)
        return 0


def count(*, scope: str, client: str) -> int:
    """How many events ``client`` has in the current window of ``scope`` (0 when none or unreachable)."""
    try:
        return int(caches["default"].get(_key(scope, client), 0))
    except RedisError:
        logger.warning("Rate counter %s unavailable; reading 0", scope, exc_info=True)
        return 0


def prolong(*, scope: str, client: str, seconds: int) -> None:
    """Keep the current window of ``client`` in ``scope`` for ``seconds`` from now."""
    try:
        caches["default"].touch(_key(scope, client), timeout=seconds)
    except RedisError:
        logger.warning("Rate counter %s unavailable; not prolonged", scope, exc_info=True)


def forget(*, scope: str, client: str) -> None:
    """Drop the count of ``client`` in ``scope``."""
    try:
        caches["default"].delete(_key(scope, client))
    except RedisError:
        logger.warning("Rate counter %s unavailable; not reset", scope, exc_info=True)


def allow(*, scope: str, client: str, limit: int, window: int = WINDOW_SECONDS) -> bool:
    """Count one request; False once the client has used up ``limit`` in the window (0 = no limit)."""
    if limit <= 0:
        return True
    return hit(scope=scope, client=client, window=window) <= limit


def shared_cache_check(app_configs, **kwargs) -> list[checks.CheckMessage]:
    """``check --deploy``: on a production server the budgets must be counted in one shared cache."""
    backend = settings.CACHES.get("default", {}).get("BACKEND", "")
    if settings.FUNNYBONE_PRODUCTION and backend.endswith("LocMemCache"):
        return [
            checks.Warning(
                "The cache is in-process memory, so the entry rate limits and login throttling "
                "count separately in every web process.",
                hint="Set REDIS_URL so every process shares the counts.",
                id="funnybone.W001",
            )
        ]
    return []


def _too_many(request: HttpRequest, message: str) -> HttpResponse:
    response = render(
        request, "annotation/message.html", {"title": gettext("Too many requests"), "message": message}, status=429
    )
    response["Retry-After"] = str(WINDOW_SECONDS)
    return response


def entry_rate_limited(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """Answer 429 once a participant id, or a client address, opens too many entry links in a minute.

    Two budgets. The participant id's (``PROLIFIC_PID``, or MTurk's ``workerId``, when the link carries one) is
    small and stops one participant's reload loop or script; it is checked first so
    that such a loop does not also spend the address's budget, which everyone behind
    the same proxy or campus network shares. The address's budget is large enough
    for a study launch of a few hundred participants a minute from one network, and
    still stops a client inventing a new participant id on every request.
    """

    @wraps(view)
    def wrapped(request: HttpRequest, *args, **kwargs) -> HttpResponse:
        participant_id = (request.GET.get("PROLIFIC_PID") or request.GET.get("workerId") or "").strip()
        if participant_id and not allow(
            scope="entry-pid", client=participant_id, limit=settings.FUNNYBONE_ENTRY_RATE_PER_PARTICIPANT
        ):
            return _too_many(
                request,
                gettext(
                    "This link was opened too many times with your participant id in the last minute. "
                    "Please wait a minute and try again."
                ),
            )
        if not allow(scope="entry", client=client_address(request), limit=settings.FUNNYBONE_ENTRY_RATE_PER_MINUTE):
            return _too_many(
                request,
                gettext(
                    "This link was opened too many times from your network in the last minute. "
                    "Please wait a minute and try again."
                ),
            )
        return view(request, *args, **kwargs)

    return wrapped
