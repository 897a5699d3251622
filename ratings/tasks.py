# SPDX-License-Identifier: GPL-3.0-or-later
"""Background work of the ratings app: exports too large for a request, and stored reports."""

import logging

from celery import shared_task
from celery.exceptions import SoftTimeLimitExceeded
from django.db import InterfaceError, OperationalError

from annotation.job_tasks import DB_RETRIES, db_retrying, on_fresh_connection
from annotation.jobs import LeaseLost, heartbeat, job_release, new_token, soft_limit_of, time_limit_message
from ratings.cached import report_fail, report_run
from ratings.exports.services import export_claim, export_fail, export_release, export_run
from ratings.models import Export, StudyReport

logger = logging.getLogger(__name__)


@shared_task(bind=True, acks_late=True, max_retries=DB_RETRIES)
@db_retrying(
    release=lambda export_id: export_release(export_id=export_id),
    fail=lambda export_id, reason: export_fail(export_id=export_id, error=reason),
    what="The export",
)
def export_study_task(self, export_id: int) -> None:
    """Write one export. Safe to deliver twice: only the worker whose claim succeeds writes."""
    export = export_claim(export_id=export_id)
    if export is None:
        logger.info("export %s is finished or being written elsewhere; nothing to do", export_id)
        return
    token = export.claimed_by
    try:
        with heartbeat(Export, pk=export_id, token=token) as beat:
            export_run(export=export, beat=beat)
    except LeaseLost:
        # Recovery (or another worker) took it over; what it recorded stands and our file was removed.
        logger.warning("export %s was taken over while this worker wrote it; nothing was kept", export_id)
    except (OperationalError, InterfaceError):
        raise  # db_retrying hands it back to the queue and retries with backoff
    except SoftTimeLimitExceeded:
        # The global CELERY_TASK_SOFT_TIME_LIMIT bounds exports; the partial file was removed.
        message = time_limit_message(soft_limit_of(self), what="The export")
        on_fresh_connection(lambda: export_fail(export_id=export_id, error=message, token=token))
        logger.warning("export %s hit its time limit", export_id)
    except Exception as exc:
        export_fail(export_id=export_id, error=f"{type(exc).__name__}: {exc}", token=token)
        logger.exception("export %s failed", export_id)
        raise


@shared_task(bind=True, acks_late=True, max_retries=DB_RETRIES)
@db_retrying(
    release=lambda report_id: job_release(StudyReport, pk=report_id),
    fail=lambda report_id, reason: report_fail(report_id=report_id, error=reason),
    what="The report",
)
def study_report_task(self, report_id: int) -> None:
    """Compute one stored report (analysis, alignment, protocol, tournament). Safe to deliver twice."""
    token = new_token()
    try:
        with heartbeat(StudyReport, pk=report_id, token=token) as beat:
            report_run(report_id=report_id, token=token, beat=beat)
    except LeaseLost:
        # Recovery (or another worker) took it over; what it recorded stands.
        logger.warning("report %s was taken over while this worker computed it", report_id)
    except (OperationalError, InterfaceError):
        raise  # db_retrying hands it back to the queue and retries with backoff
    except SoftTimeLimitExceeded:
        # Bounded by the global CELERY_TASK_SOFT_TIME_LIMIT; the previous result stays on the page.
        message = time_limit_message(soft_limit_of(self), what="The report")
        on_fresh_connection(lambda: report_fail(report_id=report_id, error=message, token=token))
        logger.warning("report %s hit its time limit", report_id)
    except Exception as exc:
        report_fail(report_id=report_id, error=f"{type(exc).__name__}: {exc}", token=token)
        logger.exception("report %s failed", report_id)
        raise


from ratings.alignment.tasks import alignment_report_task  # noqa: E402,F401 - registers the task with the worker
