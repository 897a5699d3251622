"""Storing checked media through Django's storage API, named by the hash of the stored bytes.

``media_store`` writes a checked file once per study (the same bytes twice are
one ``MediaFile``) under ``media/<sha[:2]>/<sha>.<ext>``; two studies holding
the same picture share the stored file. ``StoredFiles`` remembers the names an
import wrote, so a failed import removes them again (``discard``), and
``unreferenced_delete`` removes a stored file once no row names it (a study
or an item deleted).
"""

import hashlib

from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.db import transaction
from django.db.models.signals import post_delete
from django.dispatch import receiver

from ..models import MediaFile, Study
from .checks import CheckedMedia


def stored_name_for(checked: CheckedMedia, sha256: str) -> str:
    return f"media/{sha256[:2]}/{sha256}.{checked.extension}"


class StoredFiles:
    """The files one import wrote, to remove if it fails."""

    def __init__(self) -> None:
        self.names: list[str] = []

    def discard(self) -> None:
        """Remove what this import wrote that no committed row names."""
        unreferenced_delete(self.names)
        self.names = []


def media_store(*, study: Study, checked: CheckedMedia, original_name: str, written: StoredFiles) -> MediaFile:
    """The study's MediaFile for these bytes, stored if new (call inside the import's transaction)."""
    sha = hashlib.sha256(checked.data).hexdigest()
    existing = MediaFile.objects.filter(study=study, sha256=sha).first()
    if existing is not None:
        return existing
    name = stored_name_for(checked, sha)
    if not default_storage.exists(name):
        saved = default_storage.save(name, ContentFile(checked.data))
        written.names.append(saved)
        name = saved
    return MediaFile.objects.create(
        study=study,
        sha256=sha,
        content_type=checked.content_type,
        kind=checked.kind,
        size_bytes=len(checked.data),
        width=checked.width,
        height=checked.height,
        original_name=original_name[:255],
        file=name,
    )


def media_orphans_delete(*, study: Study) -> int:
    """Delete the study's media files no item shows any more (after its items were replaced)."""
    deleted, _ = MediaFile.objects.filter(study=study, attachments__isnull=True).delete()
    return deleted


def unreferenced_delete(names: list[str]) -> None:
    """Delete each stored file no MediaFile row names any more."""
    if not names:
        return
    still = set(MediaFile.objects.filter(file__in=names).values_list("file", flat=True))
    for name in names:
        if name not in still:
            default_storage.delete(name)


@receiver(post_delete, sender=MediaFile)
def _file_after_delete(sender, instance: MediaFile, **kwargs) -> None:
    name = instance.file.name
    if name:
        transaction.on_commit(lambda: unreferenced_delete([name]))
