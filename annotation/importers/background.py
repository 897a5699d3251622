"""Imports as jobs: small files are imported during the request, big ones by a worker under a lease.

An ``ItemImport`` records one uploaded file, an item file or a protocol
template's data file (``kind``), and what became of it. It is a leased job
(``annotation.jobs``): claimed with a conditional update (queued → running),
so a redelivered task never imports twice; while a worker imports, a
heartbeat renews the lease; the rows and the "done" status are committed in
one transaction, and "done" is written only while this worker still holds
the lease. A worker that dies leaves nothing half-written, and recovery
(``item_imports_recover``, run by every worker) re-queues the import or,
after its last attempt, marks it failed with the reason.
"""

import logging
import shutil
import tempfile
import zipfile
from functools import partial

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.core.files.uploadedfile import UploadedFile
from django.db import transaction
from django.utils.text import get_valid_filename

from .. import tables
from ..job_tasks import Held, JobKind, job_kind_register, job_run
from ..jobs import (
    Beat,
    LeaseLost,
    Recovered,
    job_claim,
    job_fail,
    job_finish,
    job_release,
    new_token,
    stale_jobs_recover,
)
from ..media.store import StoredFiles, media_orphans_delete
from ..models import ItemImport, Study
from ..services.studies import ImportErrors, items_create
from .archive import ARCHIVE, check_archive, is_archive, media_attach, resolve_media
from .files import check_size, prepare
from .items import FileProblem
from .readers import detect_format

logger = logging.getLogger(__name__)

# The default of FUNNYBONE_IMPORT_INLINE_MAX_BYTES: files up to this size are imported while the researcher waits.
INLINE_MAX_BYTES = settings.FUNNYBONE_IMPORT_INLINE_MAX_BYTES


def inline_max_bytes() -> int:
    return settings.FUNNYBONE_IMPORT_INLINE_MAX_BYTES


def item_import_create(
    *,
    study: Study,
    upload: UploadedFile,
    user: AbstractBaseUser | None,
    replace: bool = False,
    kind: str = ItemImport.Kind.ITEMS,
) -> ItemImport:
    """Store the uploaded file and record a queued import.

    FileProblem, before anything is stored, for a wrong type or size and for a
    file the reader refuses outright (an XLSX zip bomb, XML entities).
    """
    name = upload.name or ""
    check_size(upload.size or 0)
    if is_archive(name) and kind == ItemImport.Kind.ITEMS:
        fmt = ARCHIVE
        check_archive(upload, label=name)
    else:
        fmt = detect_format(name)
        tables.check_file(upload, fmt=fmt, size=upload.size or 0)
    item_import = ItemImport(
        study=study,
        kind=kind,
        original_name=(upload.name or "")[:255],
        format=fmt,
        replace=replace,
        created_by=user,
    )
    item_import.file.save(get_valid_filename(upload.name or "items") or "items", upload, save=False)
    item_import.save()
    return item_import


def item_import_start(
    *,
    study: Study,
    upload: UploadedFile,
    user: AbstractBaseUser | None,
    replace: bool = False,
    kind: str = ItemImport.Kind.ITEMS,
) -> ItemImport:
    """Create the import and run it now if it is small, else queue it for a worker after commit.

    On the inline path a file the reader refuses as a whole (a quote never
    closed, undecodable bytes, a JSON line nested too deep) raises FileProblem,
    so the form and the API answer 400; the stored upload is removed whatever
    goes wrong, since the caller's transaction drops the import record with it.
    """
    item_import = item_import_create(study=study, upload=upload, user=user, replace=replace, kind=kind)
    try:
        if _workload(item_import) <= inline_max_bytes():
            return item_import_run(import_id=item_import.pk, raise_refusal=True) or item_import
    except BaseException:
        _discard_file(item_import)
        raise
    transaction.on_commit(partial(_enqueue, item_import.pk))
    return item_import


def _workload(item_import: ItemImport) -> int:
    """Bytes the reader will process: a workbook's inflated size, so a small XLSX of big XML goes to a worker."""
    with item_import.file.open("rb") as stream:
        if item_import.format == ARCHIVE:
            return sum(check_archive(stream, label=item_import.original_name).sizes.values())
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
        logger.exception("could not queue import %s", import_id)
        item_import_fail(
            import_id=import_id, errors=[f"The import could not be queued ({exc}); is the broker running?"]
        )


def item_import_claim(*, import_id: int, token: str | None = None) -> bool:
    """Move a queued (or stale running) import to running; False when someone else has it or it is finished."""
    return job_claim(ItemImport, pk=import_id, token=token or new_token())


def item_import_fail(*, import_id: int, errors: list[str], token: str | None = None) -> None:
    """Mark the import failed and remove its upload from disk (a failed import is never read again)."""
    if not job_fail(ItemImport, pk=import_id, token=token, errors=errors, items_created=0, judgments_created=0):
        return
    item_import = ItemImport.objects.filter(pk=import_id).first()
    if item_import is not None and item_import.file:
        _discard_file(item_import)
        ItemImport.objects.filter(pk=import_id).update(file="")


def item_import_requeue(*, import_id: int) -> None:
    """Hand a running import back to the queue (before a retry after a passing failure)."""
    job_release(ItemImport, pk=import_id)


def item_imports_recover() -> Recovered:
    """Re-queue imports whose worker stopped beating, or fail them after their last attempt."""
    return stale_jobs_recover(
        ItemImport,
        enqueue=_enqueue,
        failure=lambda reason: {"errors": [reason], "items_created": 0, "judgments_created": 0},
        max_attempts=settings.FUNNYBONE_IMPORT_MAX_ATTEMPTS,
    )


def _finish(item_import: ItemImport, token: str, **result: int) -> None:
    """Record the import done inside the writing transaction; raising there undoes the writes."""
    if not job_finish(ItemImport, pk=item_import.pk, token=token, errors=[], **result):
        raise LeaseLost(f"import {item_import.pk} is no longer held by this worker")


def _run_items(item_import: ItemImport, token: str, beat: Beat) -> list[str]:
    if item_import.format == ARCHIVE:
        return _run_archive(item_import, token, beat)
    with item_import.file.open("rb") as stream:
        specs, errors = prepare(
            study=item_import.study,
            stream=stream,
            fmt=item_import.format,
            size=item_import.file.size,
            replace=item_import.replace,
            refuse=True,
        )
    if errors:
        return errors
    # Media named by URL are fetched once, now (a path needs the archive the file travels in).
    media = (
        resolve_media(specs, label=item_import.original_name, beat=beat.check) if any(s.media for s in specs) else None
    )
    return _write(item_import, token, beat, specs, media)


def _write(item_import: ItemImport, token: str, beat: Beat, specs: list, media: dict | None = None) -> list[str]:
    """The items (and their media) and "done", in one transaction; stored media removed if it rolls back."""
    beat.check()
    written = StoredFiles()
    try:
        with transaction.atomic():
            count = items_create(
                study=item_import.study,
                items=specs,
                replace=item_import.replace,
                actor=item_import.created_by,
                with_media=media is not None,
            )
            if item_import.replace:
                # The replaced items' pictures go with them (their bytes once no study names them).
                media_orphans_delete(study=item_import.study)
            if media:
                media_attach(study=item_import.study, specs=specs, checked=media, written=written)
            beat.check()  # past the time limit (or no longer ours): roll back rather than commit
            _finish(item_import, token, items_created=count)
    except ImportErrors as exc:
        written.discard()
        return exc.errors_by_row
    except BaseException:
        written.discard()
        raise
    return []


def _run_archive(item_import: ItemImport, token: str, beat: Beat) -> list[str]:
    """An archive: its item file read like any other, then every media file it names checked, then written."""
    label = item_import.original_name
    with item_import.file.open("rb") as stream, tempfile.SpooledTemporaryFile(max_size=4 * 1024 * 1024) as items:
        index = check_archive(stream, label=label)
        with zipfile.ZipFile(stream) as archive:
            with archive.open(index.item_file) as member:
                shutil.copyfileobj(member, items)
            items.seek(0)
            specs, errors = prepare(
                study=item_import.study,
                stream=items,
                fmt=index.fmt,
                size=index.sizes[index.item_file],
                replace=item_import.replace,
                refuse=True,
            )
            if errors:
                return errors
            beat.check()
            media = resolve_media(specs, label=label, archive=archive, index=index, beat=beat.check)
    return _write(item_import, token, beat, specs, media)


def _run_protocol(item_import: ItemImport, token: str, beat: Beat) -> list[str]:
    from ..protocols.importing import protocol_import  # the protocols package imports the importers

    beat.check()
    # The stored file is handed over as a stream: the table reader reads it row by row, never whole.
    with item_import.file.open("rb") as stream:
        result = protocol_import(
            study=item_import.study,
            data=stream,
            filename=item_import.original_name,
            actor=item_import.created_by,
            on_written=lambda items, judgments: _finish(
                item_import, token, items_created=items, judgments_created=judgments
            ),
        )
    return result.errors


def item_import_work(held: Held, *, raise_refusal: bool = False) -> None:
    """Import one claimed import: its rows and "done" in one transaction, or its problems recorded.

    With ``raise_refusal`` a file refused as a whole raises FileProblem after
    the import is marked failed (the inline path answers the upload with it).
    """
    item_import = ItemImport.objects.select_related("study", "created_by").get(pk=held.pk)
    work = _run_protocol if item_import.kind == ItemImport.Kind.PROTOCOL else _run_items
    try:
        errors = work(item_import, held.token, held.beat)
    except FileProblem as exc:
        item_import_fail(import_id=held.pk, errors=exc.messages, token=held.token)
        if raise_refusal:
            raise
        return
    if errors:
        item_import_fail(import_id=held.pk, errors=errors, token=held.token)


def item_import_run(*, import_id: int, raise_refusal: bool = False) -> ItemImport | None:
    """Claim and run one import now (the inline path); a no-op for an import running elsewhere or finished.

    Returns the import as it stands afterwards, or None when it no longer exists.
    """
    job_run(IMPORTS, import_id, partial(item_import_work, raise_refusal=raise_refusal))
    return ItemImport.objects.filter(pk=import_id).first()


IMPORTS = job_kind_register(
    JobKind(
        name="item imports",
        model=ItemImport,
        what="The import",
        fail=lambda pk, reason, token: item_import_fail(import_id=pk, errors=[reason], token=token),
        release=lambda pk: item_import_requeue(import_id=pk),
        recover=item_imports_recover,
        limit_advice="Split the file into smaller ones and import them one by one.",
    )
)
