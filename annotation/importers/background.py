"""Item imports as records: small files are imported during the request, big ones by a worker.

An ``ItemImport`` is claimed with a conditional update (queued → running), so
a redelivered task never imports twice, and its items and its "done" status
are committed in the same transaction, so a worker that dies half-way leaves
nothing behind and the import can be claimed again once it is stale.
"""

import logging
from datetime import timedelta
from functools import partial

from django.contrib.auth.models import AbstractBaseUser
from django.core.files.uploadedfile import UploadedFile
from django.db import transaction
from django.db.models import Q
from django.utils import timezone
from django.utils.text import get_valid_filename

from ..models import ItemImport, Study
from ..services.studies import ImportErrors, items_create
from .files import check_size, prepare
from .readers import detect_format

logger = logging.getLogger(__name__)

# Files up to this size are imported while the researcher waits; bigger ones go to a worker.
INLINE_MAX_BYTES = 1024 * 1024
# A running import not finished after this long belongs to a worker that died; it may be claimed again.
STALE_AFTER = timedelta(minutes=30)


def item_import_create(
    *, study: Study, upload: UploadedFile, user: AbstractBaseUser | None, replace: bool = False
) -> ItemImport:
    """Store the uploaded file and record a queued import (FileProblem for a wrong type or size)."""
    fmt = detect_format(upload.name or "")
    check_size(upload.size or 0)
    item_import = ItemImport(
        study=study, original_name=(upload.name or "")[:255], format=fmt, replace=replace, created_by=user
    )
    item_import.file.save(get_valid_filename(upload.name or "items") or "items", upload, save=False)
    item_import.save()
    return item_import


def item_import_start(
    *, study: Study, upload: UploadedFile, user: AbstractBaseUser | None, replace: bool = False
) -> ItemImport:
    """Create the import and run it now if it is small, else queue it for a worker after commit."""
    item_import = item_import_create(study=study, upload=upload, user=user, replace=replace)
    if item_import.file.size <= INLINE_MAX_BYTES:
        return item_import_run(import_id=item_import.pk) or item_import
    transaction.on_commit(partial(_enqueue, item_import.pk))
    return item_import


def _enqueue(import_id: int) -> None:
    from ..tasks import import_items_task

    try:
        import_items_task.delay(import_id)
    except Exception as exc:
        # Never fall back to importing inside the request: say why it did not start.
        logger.exception("could not queue item import %s", import_id)
        item_import_fail(
            import_id=import_id, errors=[f"The import could not be queued ({exc}); is the broker running?"]
        )


def item_import_claim(*, import_id: int) -> bool:
    """Move a queued (or stale running) import to running; False when someone else has it or it is finished."""
    now = timezone.now()
    claimable = Q(status=ItemImport.Status.QUEUED) | Q(
        status=ItemImport.Status.RUNNING, started_at__lt=now - STALE_AFTER
    )
    updated = (
        ItemImport.objects.filter(pk=import_id)
        .filter(claimable)
        .update(status=ItemImport.Status.RUNNING, started_at=now, finished_at=None)
    )
    return updated == 1


def item_import_fail(*, import_id: int, errors: list[str]) -> None:
    ItemImport.objects.filter(pk=import_id).exclude(status=ItemImport.Status.DONE).update(
        status=ItemImport.Status.FAILED, errors=errors, items_created=0, finished_at=timezone.now()
    )


def item_import_requeue(*, import_id: int) -> None:
    """Hand a running import back to the queue (before a retry after a passing failure)."""
    ItemImport.objects.filter(pk=import_id, status=ItemImport.Status.RUNNING).update(
        status=ItemImport.Status.QUEUED, started_at=None
    )


def item_import_run(*, import_id: int) -> ItemImport | None:
    """Claim and run one import; a no-op for an import already running elsewhere or finished.

    Returns the import as it stands afterwards, or None when it no longer exists.
    """
    if not item_import_claim(import_id=import_id):
        return ItemImport.objects.filter(pk=import_id).first()
    item_import = ItemImport.objects.select_related("study").get(pk=import_id)
    with item_import.file.open("rb") as stream:
        specs, errors = prepare(
            study=item_import.study,
            stream=stream,
            fmt=item_import.format,
            size=item_import.file.size,
            replace=item_import.replace,
        )
    if not errors:
        try:
            with transaction.atomic():
                count = items_create(
                    study=item_import.study, items=specs, replace=item_import.replace, actor=item_import.created_by
                )
                ItemImport.objects.filter(pk=import_id, status=ItemImport.Status.RUNNING).update(
                    status=ItemImport.Status.DONE, items_created=count, errors=[], finished_at=timezone.now()
                )
        except ImportErrors as exc:
            errors = exc.errors_by_row
    if errors:
        item_import_fail(import_id=import_id, errors=errors)
    item_import.refresh_from_db()
    return item_import
