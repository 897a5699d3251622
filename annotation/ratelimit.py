"""A per-client request budget kept in Django's cache.

Entry links are public, so each client address gets a fixed number of entries
per minute. The window starts at a client's first request and the count lives
in the shared cache (Redis in production), so every web process sees it.
"""

from collections.abc import Callable
from functools import wraps

from django.conf import settings
from django.core.cache import cache
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

WINDOW_SECONDS = 60


def client_address(request: HttpRequest) -> str:
    """The client's address, looking through as many proxies as the settings trust.

    With ``FUNNYBONE_TRUSTED_PROXY_COUNT = n`` the n-th address from the right of
    ``X-Forwarded-For`` is used (each trusted proxy appends the address it saw);
    without it, only ``REMOTE_ADDR``, which a client cannot forge.
    """
    trusted = getattr(settings, "FUNNYBONE_TRUSTED_PROXY_COUNT", 0)
    if trusted:
        hops = [h.strip() for h in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",") if h.strip()]
        if len(hops) >= trusted:
            return hops[-trusted]
    return request.META.get("REMOTE_ADDR", "") or "unknown"


def allow(*, scope: str, client: str, limit: int) -> bool:
    """Count one request; False once the client has used up ``limit`` in the window."""
    if limit <= 0:
        return True
    key = f"funnybone:rate:{scope}:{client}"
    # add() only creates the counter (with its expiry) when absent; incr keeps the expiry.
    cache.add(key, 0, timeout=WINDOW_SECONDS)
    try:
        count = cache.incr(key)
    except ValueError:
        # The counter expired between add() and incr(): this is the first request of a new window.
        cache.add(key, 1, timeout=WINDOW_SECONDS)
        count = 1
    return count <= limit


def entry_rate_limited(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """Answer 429 once a client opens more entry links than the per-minute budget."""

    @wraps(view)
    def wrapped(request: HttpRequest, *args, **kwargs) -> HttpResponse:
        limit = settings.FUNNYBONE_ENTRY_RATE_PER_MINUTE
        if not allow(scope="entry", client=client_address(request), limit=limit):
            response = render(
                request,
                "annotation/message.html",
                {
                    "title": "Too many requests",
                    "message": "This link was opened too many times from your network in the last minute. "
                    "Please wait a minute and try again.",
                },
                status=429,
            )
            response["Retry-After"] = str(WINDOW_SECONDS)
            return response
        return view(request, *args, **kwargs)

    return wrapped
