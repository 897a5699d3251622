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

from .. import tables
from ..models import ItemImport, Study
from ..services.studies import ImportErrors, items_create
from .files import check_size, prepare
from .items import FileProblem
from .readers import detect_format

logger = logging.getLogger(__name__)

# Files up to this size are imported while the researcher waits; bigger ones go to a worker.
INLINE_MAX_BYTES = 1024 * 1024
# A running import not finished after this long belongs to a worker that died; it may be claimed again.
STALE_AFTER = timedelta(minutes=30)


def item_import_create(
    *, study: Study, upload: UploadedFile, user: AbstractBaseUser | None, replace: bool = False
) -> ItemImport:
    """Store the uploaded file and record a queued import.

    FileProblem, before anything is stored, for a wrong type or size and for a
    file the reader refuses outright (an XLSX zip bomb, XML entities).
    """
    fmt = detect_format(upload.name or "")
    check_size(upload.size or 0)
    tables.check_file(upload, fmt=fmt, size=upload.size or 0)
    item_import = ItemImport(
        study=study, original_name=(upload.name or "")[:255], format=fmt, replace=replace, created_by=user
    )
    item_import.file.save(get_valid_filename(upload.name or "items") or "items", upload, save=False)
    item_import.save()
    return item_import


def item_import_start(
    *, study: Study, upload: UploadedFile, user: AbstractBaseUser | None, replace: bool = False
) -> ItemImport:
    """Create the import and run it now if it is small, else queue it for a worker after commit.

    On the inline path a file the reader refuses as a whole (a quote never
    closed, undecodable bytes, a JSON line nested too deep) raises FileProblem,
    so the form and the API answer 400; the stored upload is removed whatever
    goes wrong, since the caller's transaction drops the import record with it.
    """
    item_import = item_import_create(study=study, upload=upload, user=user, replace=replace)
    try:
        if _workload(item_import) <= INLINE_MAX_BYTES:
            return item_import_run(import_id=item_import.pk, raise_refusal=True) or item_import
    except BaseException:
        _discard_file(item_import)
        raise
    transaction.on_commit(partial(_enqueue, item_import.pk))
    return item_import


def _workload(item_import: ItemImport) -> int:
    """Bytes the reader will process: a workbook's inflated size, so a small XLSX of big XML goes to a worker."""
    with item_import.file.open("rb") as stream:
        return tables.workload(stream, fmt=item_import.format, size=item_import.file.size)


def _discard_file(item_import: ItemImport) -> None:
    """Remove a stored upload nobody will read again (its import failed or was never recorded)."""
    if item_import.file:
        item_import.file.delete(save=False)


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
    """Mark the import failed and remove its upload from disk (a failed import is never read again)."""
    updated = (
        ItemImport.objects.filter(pk=import_id)
        .exclude(status=ItemImport.Status.DONE)
        .update(status=ItemImport.Status.FAILED, errors=errors, items_created=0, finished_at=timezone.now())
    )
    item_import = ItemImport.objects.filter(pk=import_id).first() if updated else None
    if item_import is not None and item_import.file:
        _discard_file(item_import)
        ItemImport.objects.filter(pk=import_id).update(file="")


def item_import_requeue(*, import_id: int) -> None:
    """Hand a running import back to the queue (before a retry after a passing failure)."""
    ItemImport.objects.filter(pk=import_id, status=ItemImport.Status.RUNNING).update(
        status=ItemImport.Status.QUEUED, started_at=None
    )


def item_import_run(*, import_id: int, raise_refusal: bool = False) -> ItemImport | None:
    """Claim and run one import; a no-op for an import already running elsewhere or finished.

    Returns the import as it stands afterwards, or None when it no longer exists.
    With ``raise_refusal`` a file refused as a whole raises FileProblem after
    the import is marked failed (the inline path answers the upload with it).
    """
    if not item_import_claim(import_id=import_id):
        return ItemImport.objects.filter(pk=import_id).first()
    item_import = ItemImport.objects.select_related("study").get(pk=import_id)
    try:
        with item_import.file.open("rb") as stream:
            specs, errors = prepare(
                study=item_import.study,
                stream=stream,
                fmt=item_import.format,
                size=item_import.file.size,
                replace=item_import.replace,
                refuse=True,
            )
    except FileProblem as exc:
        item_import_fail(import_id=import_id, errors=exc.messages)
        if raise_refusal:
            raise
        item_import.refresh_from_db()
        return item_import
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
