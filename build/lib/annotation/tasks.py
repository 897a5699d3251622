"""Celery tasks of the annotation app: they take ids, claim their work, and call the importers."""

import logging
import threading

from celery import shared_task
from celery.exceptions import SoftTimeLimitExceeded
from celery.signals import worker_ready, worker_shutting_down
from django.conf import settings
from django.db import InterfaceError, OperationalError

from .importers.background import item_import_fail, item_import_requeue, item_import_run, item_imports_recover
from .job_tasks import DB_RETRIES, db_retrying, job_recovery_register, jobs_recover, on_fresh_connection
from .jobs import recover_periodically, soft_limit_of, time_limit_message

logger = logging.getLogger(__name__)


@shared_task(
    bind=True,
    acks_late=True,
    max_retries=DB_RETRIES,
    soft_time_limit=settings.FUNNYBONE_IMPORT_SOFT_TIME_LIMIT,
    time_limit=settings.FUNNYBONE_IMPORT_TIME_LIMIT,
)
@db_retrying(
    release=lambda import_id: item_import_requeue(import_id=import_id),
    fail=lambda import_id, reason: item_import_fail(import_id=import_id, errors=[reason]),
    what="The import",
)
def import_items_task(self, import_id: int) -> str:
    """Import one queued ItemImport (items or protocol data). Safe to deliver twice: the second finds it claimed."""
    try:
        item_import = item_import_run(import_id=import_id, background=True)
    except SoftTimeLimitExceeded:
        logger.warning("import %s hit its time limit", import_id)
        message = time_limit_message(soft_limit_of(self), what="The import")
        errors = [f"{message} Split the file into smaller ones and import them one by one."]
        # The limit may have interrupted a query and left the connection unusable.
        on_fresh_connection(lambda: item_import_fail(import_id=import_id, errors=errors))
        return "failed"
    except (OperationalError, InterfaceError):
        raise  # db_retrying hands it back to the queue and retries with backoff
    except Exception as exc:
        logger.exception("import %s failed", import_id)
        item_import_fail(import_id=import_id, errors=[f"The import stopped on an unexpected error: {exc!r}"])
        raise
    if item_import is None:
        logger.warning("import %s no longer exists", import_id)
        return "missing"
    return item_import.status


job_recovery_register("item imports", item_imports_recover)


@shared_task(ignore_result=True)
def recover_stale_jobs_task() -> None:
    """Re-queue or fail every registered kind of job whose worker stopped beating (imports, exports, reports)."""
    jobs_recover()


# The former name, kept so messages already queued under it still run.
@shared_task(ignore_result=True)
def recover_stale_imports_task() -> None:
    jobs_recover()


_recovery_stop: threading.Event | None = None


@worker_ready.connect
def _recover_jobs_when_a_worker_starts(sender=None, **kwargs) -> None:
    global _recovery_stop
    recover_stale_jobs_task.delay()
    if settings.FUNNYBONE_RECOVERY_SECONDS > 0:
        _recovery_stop = recover_periodically(
            recover_stale_jobs_task.delay, every=settings.FUNNYBONE_RECOVERY_SECONDS, name="job-recovery"
        )


@worker_shutting_down.connect
def _stop_job_recovery(**kwargs) -> None:
    if _recovery_stop is not None:
        _recovery_stop.set()
