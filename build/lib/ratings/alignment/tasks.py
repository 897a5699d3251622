# SPDX-License-Identifier: GPL-3.0-or-later
"""Storing alignment reports and computing them in the background.

One ``AlignmentReport`` row per study and parameter set holds the last
complete result and its timestamp. Asking for a recomputation marks the row
queued (a conditional update, so a second click while it is queued or
running changes nothing) and either computes it in the request, for small
studies, or queues :func:`alignment_report_task` after the transaction
commits. A report is a leased job (``annotation.jobs``): the task claims it
under a token (queued → running), so a message delivered twice computes
once; a heartbeat renews the lease while it computes, and the result is
stored only while the token still holds it. The previous result stays
visible until the new one replaces it. A running report counts as dead only
when its heartbeat is older than the lease (not when it started long ago):
then asking again, or the workers' recovery (``reports_recover``), queues it
anew, and after its last attempt recovery marks it failed with the reason.
"""

from __future__ import annotations

import logging

from celery import shared_task
from celery.exceptions import SoftTimeLimitExceeded
from django.db import InterfaceError, OperationalError, transaction
from django.db.models import Q
from django.utils import timezone

from annotation.job_tasks import DB_RETRIES, db_retrying, on_fresh_connection
from annotation.jobs import (
    Beat,
    LeaseLost,
    Recovered,
    heartbeat,
    job_claim,
    job_fail,
    job_finish,
    job_release,
    new_token,
    soft_limit_of,
    stale_jobs,
    stale_jobs_recover,
    time_limit_message,
)
from annotation.models import Study

from ..models import AlignmentReport
from . import AlignmentParams, AlignmentUnavailable, compute_alignment, count_judgments

logger = logging.getLogger(__name__)

#: Studies with at most this many judgments are computed in the request.
INLINE_JUDGMENTS = 5_000
#: Claims (first run, retries, recoveries) before a report whose worker keeps dying is failed.
MAX_ATTEMPTS = 2


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
    # Alive means its heartbeat is younger than the lease, however long ago it started.
    alive = not stale_jobs(AlignmentReport).filter(pk=report.pk).exists()
    if report.status == AlignmentReport.Status.RUNNING and alive:
        return report
    # Not running, or running with a heartbeat older than the lease: its worker is presumed dead.
    # Conditional on that state, so a worker that beats again in between keeps its report.
    requeued = AlignmentReport.objects.filter(
        ~Q(status=AlignmentReport.Status.RUNNING) | Q(pk__in=stale_jobs(AlignmentReport).values("pk")), pk=report.pk
    ).update(status=AlignmentReport.Status.QUEUED, claimed_by="", progress=0, stage="queued", error="")
    if not requeued:
        report.refresh_from_db()
        return report
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


def report_claim(*, report_id: int, token: str) -> bool:
    """Move a queued report (or one whose worker stopped beating) to running under ``token``; False if taken."""
    if not job_claim(AlignmentReport, pk=report_id, token=token):
        return False
    AlignmentReport.objects.filter(pk=report_id, claimed_by=token).update(progress=1, stage="starting")
    return True


def report_run(*, report_id: int, token: str | None = None, beat: Beat | None = None) -> None:
    """Claim and compute one report, storing the result or the reason it failed.

    With ``beat`` (a worker's heartbeat) the computation stops at its next
    progress report once the lease is lost, and LeaseLost is raised; the
    result is stored only while ``token`` still holds the report.
    """
    token = token or new_token()
    if not report_claim(report_id=report_id, token=token):
        logger.info("alignment report %s is not queued; nothing to do", report_id)
        return
    report = AlignmentReport.objects.select_related("study").get(pk=report_id)

    def progress(fraction: float, message: str) -> None:
        if beat is not None:
            beat.check()
        held = AlignmentReport.objects.filter(pk=report_id, claimed_by=token).update(
            progress=max(1, min(99, int(fraction * 100))), stage=message[:200]
        )
        if not held:
            raise LeaseLost(f"alignment report {report_id} is no longer held by this worker")

    try:
        result = compute_alignment(study=report.study, params=params_from_report(report), progress=progress)
    except AlignmentUnavailable as exc:
        report_fail(report_id=report_id, error=str(exc), token=token)
        return
    stored = job_finish(
        AlignmentReport,
        pk=report_id,
        token=token,
        progress=100,
        stage="done",
        result=result,
        error="",
        computed_at=timezone.now(),
    )
    if not stored:
        raise LeaseLost(f"alignment report {report_id} is no longer held by this worker")


def report_fail(*, report_id: int, error: str, token: str | None = None) -> None:
    """Mark an unfinished report failed with its reason; with ``token``, only while that worker holds it."""
    job_fail(AlignmentReport, pk=report_id, token=token, error=error[:2000], stage="failed")


def reports_recover() -> Recovered:
    """Re-queue reports whose worker stopped beating, or fail them after their last attempt."""
    return stale_jobs_recover(
        AlignmentReport,
        enqueue=alignment_report_task.delay,
        failure=lambda reason: {"error": reason[:2000], "stage": "failed"},
        max_attempts=MAX_ATTEMPTS,
        advice="Recompute the report to try again.",
    )


# The name it had before it moved into the alignment package, so messages queued before an upgrade still run.
@shared_task(bind=True, acks_late=True, max_retries=DB_RETRIES, name="ratings.alignment_tasks.alignment_report_task")
@db_retrying(
    release=lambda report_id: job_release(AlignmentReport, pk=report_id),
    fail=lambda report_id, reason: report_fail(report_id=report_id, error=reason),
    what="The report",
)
def alignment_report_task(self, report_id: int) -> None:
    """Compute one alignment report. Safe to deliver twice: only the claiming delivery computes."""
    token = new_token()
    try:
        with heartbeat(AlignmentReport, pk=report_id, token=token) as beat:
            report_run(report_id=report_id, token=token, beat=beat)
    except LeaseLost:
        # Recovery (or another worker) took it over; what it recorded stands.
        logger.warning("alignment report %s was taken over while this worker computed it", report_id)
    except (OperationalError, InterfaceError):
        raise  # db_retrying hands it back to the queue and retries with backoff
    except SoftTimeLimitExceeded:
        # Bounded by the global CELERY_TASK_SOFT_TIME_LIMIT; the previous result stays on the page.
        message = time_limit_message(soft_limit_of(self), what="The report")
        on_fresh_connection(lambda: report_fail(report_id=report_id, error=message, token=token))
        logger.warning("alignment report %s hit its time limit", report_id)
    except Exception as exc:
        report_fail(report_id=report_id, error=f"{type(exc).__name__}: {exc}", token=token)
        logger.exception("alignment report %s failed", report_id)
        raise
