"""Celery tasks of the annotation app: they take ids, claim their work, and call the importers."""

import logging
import threading

from celery import shared_task
from celery.exceptions import SoftTimeLimitExceeded
from celery.signals import worker_ready, worker_shutting_down
from django.conf import settings
from django.db import DatabaseError, InterfaceError, OperationalError, connection

from .importers.background import item_import_fail, item_import_requeue, item_import_run, item_imports_recover
from .jobs import recover_periodically, soft_limit_of, time_limit_message

logger = logging.getLogger(__name__)


def _record_failure(import_id: int, errors: list[str]) -> None:
    try:
        item_import_fail(import_id=import_id, errors=errors)
    except DatabaseError:
        # The limit may have interrupted a query and left the connection unusable: record it on a fresh one.
        connection.close()
        item_import_fail(import_id=import_id, errors=errors)


@shared_task(
    bind=True,
    acks_late=True,
    max_retries=3,
    soft_time_limit=settings.FUNNYBONE_IMPORT_SOFT_TIME_LIMIT,
    time_limit=settings.FUNNYBONE_IMPORT_TIME_LIMIT,
)
def import_items_task(self, import_id: int) -> str:
    """Import one queued ItemImport (items or protocol data). Safe to deliver twice: the second finds it claimed."""
    try:
        item_import = item_import_run(import_id=import_id, background=True)
    except SoftTimeLimitExceeded:
        logger.warning("import %s hit its time limit", import_id)
        message = time_limit_message(soft_limit_of(self), what="The import")
        _record_failure(import_id, [f"{message} Split the file into smaller ones and import them one by one."])
        return "failed"
    except (OperationalError, InterfaceError) as exc:
        # The database went away mid-import; the import's transaction wrote nothing, so try again later.
        item_import_requeue(import_id=import_id)
        if self.request.retries >= self.max_retries:
            item_import_fail(import_id=import_id, errors=[f"The import failed after several tries: {exc}"])
            raise
        raise self.retry(exc=exc, countdown=10 * 2**self.request.retries) from exc
    except Exception as exc:
        logger.exception("import %s failed", import_id)
        item_import_fail(import_id=import_id, errors=[f"The import stopped on an unexpected error: {exc!r}"])
        raise
    if item_import is None:
        logger.warning("import %s no longer exists", import_id)
        return "missing"
    return item_import.status


@shared_task(ignore_result=True)
def recover_stale_imports_task() -> None:
    item_imports_recover()


_recovery_stop: threading.Event | None = None


@worker_ready.connect
def _recover_imports_when_a_worker_starts(sender=None, **kwargs) -> None:
    global _recovery_stop
    recover_stale_imports_task.delay()
    if settings.FUNNYBONE_RECOVERY_SECONDS > 0:
        _recovery_stop = recover_periodically(
            recover_stale_imports_task.delay, every=settings.FUNNYBONE_RECOVERY_SECONDS, name="import-recovery"
        )


@worker_shutting_down.connect
def _stop_import_recovery(**kwargs) -> None:
    if _recovery_stop is not None:
        _recovery_stop.set()
