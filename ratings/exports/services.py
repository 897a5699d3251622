# SPDX-License-Identifier: GPL-3.0-or-later
"""Requesting, claiming and running exports.

A researcher's request for a small study is answered at once (the views
stream it); a study with more than ``inline_limit()`` judgments gets an
``Export`` row that ``ratings.tasks.export_study_task`` claims with a
conditional update, so a redelivered task never writes the same file twice.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from datetime import timedelta
from pathlib import Path

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from annotation.models import Judgment, Rater, Study, counted_raters
from ratings.models import Export

from .csv_jsonl import write_csv, write_jsonl
from .workbook import write_workbook

EXPORT_DIR = "exports"
# A running export whose worker vanished (no heartbeat for this long) may be claimed again.
STALE_AFTER = timedelta(hours=2)
PROGRESS_EVERY = 20_000
EXTENSIONS = {Export.Format.XLSX: "xlsx", Export.Format.CSV: "csv", Export.Format.JSONL: "jsonl"}
CONTENT_TYPES = {
    Export.Format.XLSX: "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    Export.Format.CSV: "text/csv; charset=utf-8",
    Export.Format.JSONL: "application/x-ndjson; charset=utf-8",
}


def inline_limit() -> int:
    """Studies with at most this many judgments are exported within the request."""
    return settings.FUNNYBONE_EXPORT_INLINE_MAX


def clean_subset(*, study: Study, rater_ids: Iterable[int | str]) -> list[int]:
    """Rater ids of a chosen subset, checked to be human raters of this study."""
    try:
        wanted = sorted({int(pk) for pk in rater_ids if str(pk).strip()})
    except ValueError:
        raise ValidationError("Rater ids in a subset must be whole numbers.") from None
    if not wanted:
        return []
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
    return f"{study.slug}-{stamp}.{EXTENSIONS[fmt]}"


def is_large(study: Study) -> bool:
    return Judgment.objects.filter(counted_raters(), study=study).count() > inline_limit()


def export_create(*, study: Study, user: AbstractBaseUser, fmt: str, rater_subset: Iterable[int] = ()) -> Export:
    """Record an export request and queue its task once the request's transaction commits."""
    from ratings.tasks import export_study_task

    if fmt not in Export.Format.values:
        raise ValidationError(f"Unknown export format {fmt!r}.")
    export = Export.objects.create(
        study=study,
        format=fmt,
        created_by=user,
        rater_subset=list(rater_subset),
        rows_expected=Judgment.objects.filter(counted_raters(), study=study).count(),
    )
    export_study_task.delay_on_commit(export.pk)
    return export


def export_claim(*, export_id: int) -> Export | None:
    """Move a queued (or abandoned) export to running; None when someone else has it or it is finished."""
    now = timezone.now()
    claimable = Q(status=Export.Status.QUEUED) | Q(status=Export.Status.RUNNING, progress_at__lt=now - STALE_AFTER)
    claimed = Export.objects.filter(claimable, pk=export_id).update(
        status=Export.Status.RUNNING, started_at=now, progress_at=now, rows_written=0, error=""
    )
    if not claimed:
        return None
    return Export.objects.select_related("study").get(pk=export_id)


def export_release(*, export: Export) -> None:
    """Hand a running export back to the queue (before a retry)."""
    Export.objects.filter(pk=export.pk, status=Export.Status.RUNNING).update(status=Export.Status.QUEUED)


def export_fail(*, export_id: int, error: str) -> None:
    Export.objects.filter(pk=export_id).exclude(status=Export.Status.DONE).update(
        status=Export.Status.FAILED, error=error[:2000], finished_at=timezone.now()
    )


def _progress(export: Export):
    last = [0]

    def report(rows: int) -> None:
        if rows - last[0] >= PROGRESS_EVERY:
            Export.objects.filter(pk=export.pk).update(rows_written=rows, progress_at=timezone.now())
            last[0] = rows

    return report


def export_run(*, export: Export) -> Export:
    """Write a claimed export's file under MEDIA_ROOT/exports/ and mark it done."""
    directory = Path(settings.MEDIA_ROOT) / EXPORT_DIR
    directory.mkdir(parents=True, exist_ok=True)
    name = f"{export.pk}-{export_filename(export.study, export.format)}"
    final = directory / name
    partial = directory / f".{name}.part"
    report = _progress(export)
    try:
        if export.format == Export.Format.XLSX:
            rows = write_workbook(export.study, str(partial), rater_subset=export.rater_subset, progress=report)
        else:
            writer = write_csv if export.format == Export.Format.CSV else write_jsonl
            newline = "" if export.format == Export.Format.CSV else "\n"
            with open(partial, "w", encoding="utf-8", newline=newline) as out:
                rows = writer(export.study, out, rater_subset=export.rater_subset, progress=report)
        os.replace(partial, final)
    finally:
        partial.unlink(missing_ok=True)
    with transaction.atomic():
        updated = Export.objects.filter(pk=export.pk, status=Export.Status.RUNNING).update(
            status=Export.Status.DONE,
            file=f"{EXPORT_DIR}/{name}",
            rows_written=rows,
            finished_at=timezone.now(),
        )
    if not updated:
        # Someone else finished or failed it meanwhile; our file is not the one on record.
        final.unlink(missing_ok=True)
    export.refresh_from_db()
    return export


def export_file_path(export: Export) -> Path:
    """The export's file, refusing anything that would resolve outside MEDIA_ROOT/exports/."""
    base = (Path(settings.MEDIA_ROOT) / EXPORT_DIR).resolve()
    path = (Path(settings.MEDIA_ROOT) / export.file).resolve()
    if not export.file or base not in path.parents:
        raise FileNotFoundError("This export has no file.")
    return path
