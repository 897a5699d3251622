# SPDX-License-Identifier: GPL-3.0-or-later
"""Requesting, claiming and running exports.

A researcher's request for a small study is answered at once (the views
stream it); a study with more than ``inline_limit()`` judgments gets an
``Export`` row, a leased job (``annotation.jobs``): ``ratings.tasks.export_study_task``
claims it under a token, so a redelivered task never writes the same file
twice; a heartbeat renews the lease while the file is written; the file is
put in place and the export marked done only while the token still holds
it, so a worker that lost its lease leaves nothing behind. Recovery
(``exports_recover``, run by every worker) re-queues an export whose
worker stopped beating, or fails it after its last attempt.
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import IO

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from annotation.jobs import (
    Beat,
    Claim,
    LeaseLost,
    Recovered,
    job_claim,
    job_fail,
    job_finish,
    job_release,
    new_token,
    stale_jobs_recover,
)
from annotation.models import Judgment, Rater, Study, counted_raters
from ratings.models import Export

from .formats import get_format

logger = logging.getLogger(__name__)

EXPORT_DIR = "exports"
#: Claims (first run, retries, recoveries) before an export whose worker keeps dying is failed.
MAX_ATTEMPTS = 2
PROGRESS_EVERY = 20_000


def inline_limit() -> int:
    """Studies with at most this many judgments are exported within the request."""
    return settings.FUNNYBONE_EXPORT_INLINE_MAX


def clean_subset(*, study: Study, rater_ids: Iterable[int | str], fmt: str | None = None) -> list[int]:
    """Rater ids of a chosen subset, checked to be human raters of this study (and wanted by format ``fmt``)."""
    try:
        wanted = sorted({int(pk) for pk in rater_ids if str(pk).strip()})
    except ValueError:
        raise ValidationError("Rater ids in a subset must be whole numbers.") from None
    if not wanted:
        return []
    if fmt and get_format(fmt).whole_study_only:
        raise ValidationError(f"{get_format(fmt).label}: holds every rater's judgments, so it takes no rater subset.")
    known = set(
        Rater.objects.filter(pk__in=wanted, kind__in=(Rater.Kind.EXPERT, Rater.Kind.CROWD))
        .filter(Q(enrollments__study=study) | Q(judgments__study=study))
        .values_list("pk", flat=True)
    )
    unknown = [pk for pk in wanted if pk not in known]
    if unknown:
        raise ValidationError(f"Not human raters of this study: {', '.join(f'R{pk}' for pk in unknown)}.")
    return wanted


def export_filename(study: Study, fmt: str) -> str:
    stamp = timezone.now().strftime("%Y%m%d-%H%M%S")
    return f"{study.slug}-{stamp}.{get_format(fmt).extension}"


def is_large(study: Study) -> bool:
    return Judgment.objects.filter(counted_raters(), study=study).count() > inline_limit()


def export_create(*, study: Study, user: AbstractBaseUser, fmt: str, rater_subset: Iterable[int] = ()) -> Export:
    """Record an export request and queue its task once the request's transaction commits."""
    from ratings.tasks import export_study_task

    get_format(fmt)  # an unknown format is refused before anything is recorded
    export = Export.objects.create(
        study=study,
        format=fmt,
        created_by=user,
        rater_subset=list(rater_subset),
        rows_expected=Judgment.objects.filter(counted_raters(), study=study).count(),
    )
    export_study_task.delay_on_commit(export.pk)
    return export


def export_take(*, export_id: int, token: str) -> Claim | None:
    """Move a queued export (or one whose worker stopped beating) to running under ``token``, from its first row.

    None when someone else holds it or it is finished.
    """
    claim = job_claim(Export, pk=export_id, token=token)
    if claim is not None:
        Export.objects.filter(pk=export_id, claimed_by=token).update(rows_written=0, error="")
    return claim


def export_claim(*, export_id: int, token: str | None = None) -> Export | None:
    """``export_take``, returning the export, whose ``claimed_by`` is the token ``export_run`` finishes with."""
    if export_take(export_id=export_id, token=token or new_token()) is None:
        return None
    return Export.objects.select_related("study").get(pk=export_id)


def export_release(*, export_id: int, token: str | None = None) -> None:
    """Hand a running export back to the queue (before a retry)."""
    job_release(Export, pk=export_id, token=token)


def export_fail(*, export_id: int, error: str, token: str | None = None) -> None:
    """Mark an unfinished export failed with its reason; with ``token``, only while that worker holds it."""
    job_fail(Export, pk=export_id, token=token, error=error[:2000])


def exports_recover() -> Recovered:
    """Re-queue exports whose worker stopped beating, or fail them after their last attempt."""
    from ratings.tasks import export_study_task

    return stale_jobs_recover(
        Export,
        enqueue=export_study_task.delay,
        failure=lambda reason: {"error": reason},
        max_attempts=MAX_ATTEMPTS,
        advice="Ask for the export again.",
    )


def _progress(export: Export, beat: Beat | None) -> Callable[[int], None]:
    last = [0]

    def report(rows: int) -> None:
        if beat is not None:
            beat.check()  # stop writing as soon as the lease is gone
        if rows - last[0] >= PROGRESS_EVERY:
            Export.objects.filter(pk=export.pk, claimed_by=export.claimed_by).update(rows_written=rows)
            last[0] = rows

    return report


def export_run(*, export: Export, beat: Beat | None = None) -> Export:
    """Write a claimed export's file under MEDIA_ROOT/exports/ and mark it done.

    The export is held by ``export.claimed_by`` (set by ``export_claim``). The
    file is moved into place in the same transaction that marks it done, and
    only while that token still holds the export: a worker that lost its
    lease (``beat`` says so, or the final update finds another holder) leaves
    no file and changes nothing. LeaseLost is raised in that case.
    """
    token = export.claimed_by
    directory = Path(settings.MEDIA_ROOT) / EXPORT_DIR
    directory.mkdir(parents=True, exist_ok=True)
    name = f"{export.pk}-{export_filename(export.study, export.format)}"
    final = directory / name
    partial = directory / f".{name}.part"
    report = _progress(export, beat)
    try:
        rows = write_export(export.study, export.format, partial, rater_subset=export.rater_subset, progress=report)
        with transaction.atomic():
            if not job_finish(Export, pk=export.pk, token=token, file=f"{EXPORT_DIR}/{name}", rows_written=rows):
                raise LeaseLost(f"export {export.pk} is no longer held by this worker")
            # Inside the transaction: if the move fails, "done" is rolled back with it.
            os.replace(partial, final)
    finally:
        partial.unlink(missing_ok=True)
    export.refresh_from_db()
    return export


def write_export(
    study: Study,
    fmt: str,
    target: str | Path | IO[bytes],
    *,
    rater_subset: Iterable[int] = (),
    progress: Callable[[int], None] | None = None,
) -> int:
    """Write the study's export in format ``fmt`` (a registered name) to a path or binary stream.

    Returns the judgments read. A text format's writer gets a text stream over
    the target, opened with the line ends the format asks for.
    """
    export_format = get_format(fmt)
    if isinstance(target, Path):
        target = str(target)
    options = {"rater_subset": rater_subset, "progress": progress}
    if export_format.binary:
        return export_format.write(study, target, **options)
    if isinstance(target, str):
        with open(target, "w", encoding="utf-8", newline=export_format.newline) as out:
            return export_format.write(study, out, **options)
    out = io.TextIOWrapper(target, encoding="utf-8", newline=export_format.newline)
    try:
        return export_format.write(study, out, **options)
    finally:
        out.flush()
        out.detach()  # the caller keeps its binary stream open


def export_file_path(export: Export) -> Path:
    """The export's file, refusing anything that would resolve outside MEDIA_ROOT/exports/."""
    base = (Path(settings.MEDIA_ROOT) / EXPORT_DIR).resolve()
    path = (Path(settings.MEDIA_ROOT) / export.file).resolve()
    if not export.file or base not in path.parents:
        raise FileNotFoundError("This export has no file.")
    return path


def exports_discard(*, study: Study) -> int:
    """Delete the study's written exports and their files (after a withdrawal they may hold that person).

    Running exports are left to finish; the caller says so. Returns how many were deleted.
    """
    gone = 0
    for export in Export.objects.filter(study=study).exclude(status=Export.Status.RUNNING):
        with contextlib.suppress(FileNotFoundError):
            export_file_path(export).unlink()
        export.delete()
        gone += 1
    return gone
