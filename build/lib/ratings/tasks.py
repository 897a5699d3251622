# SPDX-License-Identifier: GPL-3.0-or-later
"""Background work of the ratings app: exports too large for a request."""

import logging

from celery import shared_task
from celery.exceptions import SoftTimeLimitExceeded
from django.db import InterfaceError, OperationalError

from annotation.job_tasks import DB_RETRIES, db_retrying, on_fresh_connection
from annotation.jobs import LeaseLost, heartbeat, soft_limit_of, time_limit_message
from ratings.exports.services import export_claim, export_fail, export_release, export_run
from ratings.models import Export

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


from ratings.alignment.tasks import alignment_report_task  # noqa: E402,F401 - registers the task with the worker
