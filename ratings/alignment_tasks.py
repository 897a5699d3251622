# SPDX-License-Identifier: GPL-3.0-or-later
"""Storing alignment reports and computing them in the background.

One ``AlignmentReport`` row per study and parameter set holds the last
complete result and its timestamp. Asking for a recomputation marks the row
queued (a conditional update, so a second click while it is queued or
running changes nothing) and either computes it in the request, for small
studies, or queues :func:`alignment_report_task` after the transaction
commits. The task claims the row (queued → running) before it works, so a
message delivered twice computes once; the previous result stays visible
until the new one replaces it.
"""

from __future__ import annotations

import logging

from celery import shared_task
from celery.exceptions import SoftTimeLimitExceeded
from django.db import InterfaceError, OperationalError, transaction
from django.utils import timezone

from annotation.jobs import soft_limit_of, time_limit_message
from annotation.models import Study

from .alignment import AlignmentParams, AlignmentUnavailable, compute_alignment, count_judgments
from .models import AlignmentReport

logger = logging.getLogger(__name__)

MAX_RETRIES = 3
#: Studies with at most this many judgments are computed in the request.
INLINE_JUDGMENTS = 5_000
#: A running report whose worker has not reported progress for this long may be claimed again.
STALE_SECONDS = 15 * 60


def params_from_report(report: AlignmentReport) -> AlignmentParams:
    p = report.params
    return AlignmentParams(
        reference=p["reference"],
        reference_rater_ids=tuple(p.get("reference_rater_ids", ())),
        judge_ids=tuple(p.get("judge_ids", ())),
        breakdown=p.get("breakdown", ""),
        n_resamples=p.get("n_resamples", 1000),
        seed=p.get("seed", 0),
    )


def report_for(*, study: Study, params: AlignmentParams) -> AlignmentReport | None:
    return AlignmentReport.objects.filter(study=study, params_key=params.key).first()


def report_request(*, study: Study, params: AlignmentParams, inline: bool | None = None) -> AlignmentReport:
    """Ask for a (re)computation; computes now for small studies, else queues the task."""
    report, _ = AlignmentReport.objects.get_or_create(
        study=study,
        params_key=params.key,
        defaults={"params": params.as_dict(), "status": AlignmentReport.Status.QUEUED},
    )
    if report.status == AlignmentReport.Status.RUNNING and not _stale(report):
        return report
    # Not running, or running so long without finishing that its worker is presumed dead.
    AlignmentReport.objects.filter(pk=report.pk).update(
        status=AlignmentReport.Status.QUEUED, progress=0, stage="queued", error=""
    )
    if inline is None:
        inline = count_judgments(study=study) <= INLINE_JUDGMENTS
    if inline:
        try:
            report_run(report_id=report.pk)
        except Exception as exc:  # noqa: BLE001 - recorded on the report and logged, the page shows it
            logger.exception("alignment report %s failed", report.pk)
            report_fail(report_id=report.pk, error=f"{type(exc).__name__}: {exc}")
    else:
        transaction.on_commit(lambda: alignment_report_task.delay(report.pk))
    report.refresh_from_db()
    return report


def _stale(report: AlignmentReport) -> bool:
    started = report.started_at
    return started is not None and (timezone.now() - started).total_seconds() > STALE_SECONDS


def report_claim(*, report_id: int) -> bool:
    """Move a queued report to running; False when someone else already did."""
    return bool(
        AlignmentReport.objects.filter(pk=report_id, status=AlignmentReport.Status.QUEUED).update(
            status=AlignmentReport.Status.RUNNING, started_at=timezone.now(), progress=1, stage="starting"
        )
    )


def report_run(*, report_id: int) -> None:
    """Claim and compute one report, storing the result or the reason it failed."""
    if not report_claim(report_id=report_id):
        logger.info("alignment report %s is not queued; nothing to do", report_id)
        return
    report = AlignmentReport.objects.select_related("study").get(pk=report_id)

    def progress(fraction: float, message: str) -> None:
        AlignmentReport.objects.filter(pk=report_id).update(
            progress=max(1, min(99, int(fraction * 100))), stage=message[:200]
        )

    try:
        result = compute_alignment(study=report.study, params=params_from_report(report), progress=progress)
    except AlignmentUnavailable as exc:
        report_fail(report_id=report_id, error=str(exc))
        return
    AlignmentReport.objects.filter(pk=report_id).update(
        status=AlignmentReport.Status.DONE,
        progress=100,
        stage="done",
        result=result,
        error="",
        computed_at=timezone.now(),
    )


def report_fail(*, report_id: int, error: str) -> None:
    AlignmentReport.objects.filter(pk=report_id).update(
        status=AlignmentReport.Status.FAILED, error=error[:2000], stage="failed"
    )


@shared_task(bind=True, acks_late=True, max_retries=MAX_RETRIES)
def alignment_report_task(self, report_id: int) -> None:
    """Compute one alignment report. Safe to deliver twice: only the claiming delivery computes."""
    try:
        report_run(report_id=report_id)
    except (OperationalError, InterfaceError) as exc:
        # The database went away: put the report back in the queue and retry with backoff.
        AlignmentReport.objects.filter(pk=report_id, status=AlignmentReport.Status.RUNNING).update(
            status=AlignmentReport.Status.QUEUED
        )
        if self.request.retries >= MAX_RETRIES:
            report_fail(report_id=report_id, error=f"database unavailable: {exc}")
            raise
        raise self.retry(exc=exc, countdown=30 * 2**self.request.retries) from exc
    except SoftTimeLimitExceeded:
        # Bounded by the global CELERY_TASK_SOFT_TIME_LIMIT; the previous result stays on the page.
        report_fail(report_id=report_id, error=time_limit_message(soft_limit_of(self), what="The report"))
        logger.warning("alignment report %s hit its time limit", report_id)
    except Exception as exc:
        report_fail(report_id=report_id, error=f"{type(exc).__name__}: {exc}")
        logger.exception("alignment report %s failed", report_id)
        raise
