# SPDX-License-Identifier: GPL-3.0-or-later
"""Background work of the ratings app: exports too large for a request."""

import logging

from celery import shared_task
from celery.exceptions import SoftTimeLimitExceeded
from django.db import InterfaceError, OperationalError

from annotation.jobs import soft_limit_of, time_limit_message
from ratings.exports.services import export_claim, export_fail, export_release, export_run

logger = logging.getLogger(__name__)

MAX_RETRIES = 3


@shared_task(bind=True, acks_late=True, max_retries=MAX_RETRIES)
def export_study_task(self, export_id: int) -> None:
    """Write one export. Safe to deliver twice: only the worker whose claim succeeds writes."""
    export = export_claim(export_id=export_id)
    if export is None:
        logger.info("export %s is finished or being written elsewhere; nothing to do", export_id)
        return
    try:
        export_run(export=export)
    except (OperationalError, InterfaceError) as exc:
        # The database went away mid-export: try again later, up to MAX_RETRIES times.
        if self.request.retries >= MAX_RETRIES:
            export_fail(export_id=export_id, error=f"database unavailable: {exc}")
            raise
        export_release(export=export)
        raise self.retry(exc=exc, countdown=30 * 2**self.request.retries) from exc
    except SoftTimeLimitExceeded:
        # The global CELERY_TASK_SOFT_TIME_LIMIT bounds exports; the partial file was removed.
        export_fail(export_id=export_id, error=time_limit_message(soft_limit_of(self), what="The export"))
        logger.warning("export %s hit its time limit", export_id)
    except Exception as exc:
        export_fail(export_id=export_id, error=f"{type(exc).__name__}: {exc}")
        logger.exception("export %s failed", export_id)
        raise


from ratings.alignment_tasks import alignment_report_task  # noqa: E402,F401 - registers the task with the worker
