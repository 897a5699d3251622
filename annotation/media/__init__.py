"""Media on items: images (animated ones too), checked, stored by content hash and served blind.

Public API (docs/media.md, docs/architecture.md "Media"):

- ``item_media(item_ids)`` → ``{item_id: [MediaRef, ...]}`` in one query (pages, judges);
- ``media_records(item_ids)`` → ``{item_id: [dict, ...]}``, what exports and study files write;
- ``media_bytes(ref)``, ``media_data_uri(ref)``, ``rater_media_url(ref)``;
- ``MediaRef``, and the models ``MediaFile`` and ``MediaAttachment`` (in ``annotation.models``).
"""

from ..models import MediaAttachment, MediaFile
from .refs import MediaRef, bundle_path, item_media, media_bytes, media_data_uri, media_records, rater_media_url

__all__ = [
    "MediaAttachment",
    "MediaFile",
    "MediaRef",
    "bundle_path",
    "item_media",
    "media_bytes",
    "media_data_uri",
    "media_records",
    "rater_media_url",
]
