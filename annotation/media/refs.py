"""Reading an item's media: what a page, a judge or an export needs to name, open or embed a file.

``item_media`` answers for many items in one query; everything else takes the
``MediaRef`` it returned. A ``MediaRef`` names a file by its ``id`` (the
opaque public id); neither the original name nor the stored path is in it, so
nothing built from a ref can tell a rater where a picture came from.
"""

import base64
from collections.abc import Iterable
from dataclasses import dataclass
from typing import BinaryIO

from django.core.files.storage import default_storage
from django.urls import reverse

from ..models import MediaAttachment, MediaFile


@dataclass(frozen=True)
class MediaRef:
    """One media file as attached to one item (or prompt, or candidate)."""

    id: str  # the public id: opaque, neither the sha256 nor the original name
    sha256: str
    content_type: str
    kind: str  # MediaFile.Kind
    width: int | None
    height: int | None
    alt: str
    role: str  # MediaAttachment.Role
    candidate_key: str | None  # the candidate's key when role is "candidate"
    position: int


_COLUMNS = (
    "item_id",
    "media__public_id",
    "media__sha256",
    "media__content_type",
    "media__kind",
    "media__width",
    "media__height",
    "alt_text",
    "role",
    "candidate__key",
    "position",
)


def item_media(item_ids: Iterable[int]) -> dict[int, list[MediaRef]]:
    """Each item's media, in the order shown (role, then position); items without media are left out.

    One query, whatever the number of items.
    """
    ids = list(item_ids)
    found: dict[int, list[MediaRef]] = {}
    if not ids:
        return found
    rows = (
        MediaAttachment.objects.filter(item_id__in=ids)
        .order_by("item_id", "role", "position", "id")
        .values_list(*_COLUMNS)
    )
    for item_id, public_id, sha, content_type, kind, width, height, alt, role, key, position in rows:
        found.setdefault(item_id, []).append(
            MediaRef(
                id=public_id,
                sha256=sha,
                content_type=content_type,
                kind=kind,
                width=width,
                height=height,
                alt=alt,
                role=role,
                candidate_key=key,
                position=position,
            )
        )
    return found


def stored_name(ref: MediaRef) -> str:
    """The storage name of a ref's file (internal: never put it in a page)."""
    return MediaFile.objects.values_list("file", flat=True).get(public_id=ref.id)


def media_bytes(ref: MediaRef) -> BinaryIO:
    """The stored file, opened for reading in binary; the caller closes it."""
    return default_storage.open(stored_name(ref), "rb")


def media_data_uri(ref: MediaRef) -> str:
    """The file as a ``data:`` URI (base64), for a model call that takes images inline."""
    with media_bytes(ref) as stream:
        encoded = base64.b64encode(stream.read()).decode("ascii")
    return f"data:{ref.content_type};base64,{encoded}"


def rater_media_url(ref: MediaRef) -> str:
    """The address an annotator's page loads the file from.

    Opaque (the public id only); the view serves it only to a session that holds
    an item the file is attached to, or to the study's owner.
    """
    return reverse("annotator:media", args=[ref.id])


def bundle_path(sha256: str, content_type: str) -> str:
    """Where a file sits inside a study's bundle (and so what its items' ``src`` say): by hash, never by name."""
    from .checks import extension_for

    return f"media/{sha256}.{extension_for(content_type)}"


def media_records(item_ids: Iterable[int] = (), *, study_id: int | None = None) -> dict[int, list[dict]]:
    """Each item's media as the researcher's files write it (exports, study files, bundles), in one query.

    For the given items, or with ``study_id`` for every item of that study.

    Every record: ``id`` (public id), ``sha256``, ``original_name``, ``alt``,
    ``role``, ``candidate_key``, ``content_type`` and ``src`` (its path in a bundle).
    """
    found: dict[int, list[dict]] = {}
    if study_id is not None:
        attachments = MediaAttachment.objects.filter(item__study_id=study_id)
    else:
        ids = list(item_ids)
        if not ids:
            return found
        attachments = MediaAttachment.objects.filter(item_id__in=ids)
    rows = attachments.order_by("item_id", "role", "position", "id").values_list(
        "item_id",
        "media__public_id",
        "media__sha256",
        "media__original_name",
        "alt_text",
        "role",
        "candidate__key",
        "media__content_type",
    )
    for item_id, public_id, sha, original, alt, role, key, content_type in rows:
        found.setdefault(item_id, []).append(
            {
                "id": public_id,
                "sha256": sha,
                "original_name": original,
                "alt": alt,
                "role": role,
                "candidate_key": key,
                "content_type": content_type,
                "src": bundle_path(sha, content_type),
            }
        )
    return found
