"""What a served media file answers with, and who holds it.

The answer names nothing but the file's public id: ``Content-Disposition:
inline`` with a neutral name (``media.png``), the stored content type,
``nosniff``, a CSP that runs nothing even if the file is opened on its own,
and private caching (the file is behind a session). With
``FUNNYBONE_MEDIA_X_ACCEL`` (on by default in production) the view sends no
bytes: ``X-Accel-Redirect`` points nginx at the internal location
``FUNNYBONE_MEDIA_ACCEL_PREFIX`` + the stored name, which nginx serves from
``MEDIA_ROOT`` (docs/production.md). nginx keeps the type, disposition and
cache headers of this answer; its location adds ``nosniff`` and the CSP.
"""

from django.conf import settings
from django.core.files.storage import default_storage
from django.http import FileResponse, HttpResponse
from django.utils.http import quote_etag

from ..models import Assignment, MediaAttachment, MediaFile

# How long a browser may keep a file it was allowed to fetch (the bytes never change: the name is a hash).
CACHE_SECONDS = 3600
# Served media runs nothing and embeds nothing, even opened as a page of its own.
MEDIA_CSP = "default-src 'none'; sandbox"
# The assignments that hold an item for a rater: open leases and answered ones.
HOLDING = (Assignment.State.LEASED, Assignment.State.DONE)


def held_by_rater(*, media: MediaFile, rater_id: int) -> bool:
    """Whether this rater holds (has leased or answered) an item the file is attached to."""
    items = MediaAttachment.objects.filter(media=media).values("item_id")
    return Assignment.objects.filter(rater_id=rater_id, item_id__in=items, state__in=HOLDING).exists()


def neutral_name(media: MediaFile) -> str:
    """The name a browser is offered: the kind of file only, never its original name."""
    extension = media.file.name.rsplit(".", 1)[-1] if "." in media.file.name else "bin"
    return f"media.{extension}"


def _headers(response: HttpResponse, media: MediaFile) -> HttpResponse:
    response["Content-Type"] = media.content_type
    response["Content-Disposition"] = f'inline; filename="{neutral_name(media)}"'
    response["X-Content-Type-Options"] = "nosniff"
    response["Content-Security-Policy"] = MEDIA_CSP
    response["Cache-Control"] = f"private, max-age={CACHE_SECONDS}"
    response["ETag"] = quote_etag(media.sha256)
    response["Vary"] = "Cookie"
    return response


def accel_location(media: MediaFile) -> str:
    """The internal nginx address of the stored file."""
    return settings.FUNNYBONE_MEDIA_ACCEL_PREFIX.rstrip("/") + "/" + media.file.name


def media_response(media: MediaFile) -> HttpResponse:
    """The answer carrying the file: X-Accel to nginx in production, the bytes otherwise."""
    if settings.FUNNYBONE_MEDIA_X_ACCEL:
        response = HttpResponse()
        response["X-Accel-Redirect"] = accel_location(media)
        return _headers(response, media)
    stream = default_storage.open(media.file.name, "rb")
    return _headers(FileResponse(stream, content_type=media.content_type), media)
