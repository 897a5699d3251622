"""Media named by URL in an item file: fetched once, at import, under the outbound rules.

The rules for where the server may send requests live in ``judging.outbound``
(``fetch_once``); annotation may not import judging, so judging registers its
fetcher here when the apps load (``judging.apps``). Crowd browsers never load a
third-party URL: the bytes are checked and stored like an archive's.
"""

from collections.abc import Callable

from django.conf import settings

from .checks import MediaProblem

Fetcher = Callable[..., bytes]
_fetcher: list[Fetcher] = []


def register_fetcher(fetcher: Fetcher) -> None:
    _fetcher[:] = [fetcher]


def is_url(source: str) -> bool:
    return source.strip().lower().startswith(("http://", "https://"))


def fetch_media(url: str) -> bytes:
    """The bytes at ``url`` (at most FUNNYBONE_MEDIA_MAX_BYTES), or MediaProblem naming the URL."""
    if not _fetcher:
        raise MediaProblem(f"{url}: media cannot be fetched by URL on this server.")
    try:
        return _fetcher[0](url.strip(), max_bytes=settings.FUNNYBONE_MEDIA_MAX_BYTES)
    except Exception as exc:
        raise MediaProblem(f"{url}: {exc}") from None
