"""Celery tasks of the annotation app: they take ids, claim their work, and call the importers."""

import logging

from celery import shared_task
from django.db import InterfaceError, OperationalError

from .importers.background import item_import_fail, item_import_requeue, item_import_run

logger = logging.getLogger(__name__)


@shared_task(bind=True, acks_late=True, max_retries=3)
def import_items_task(self, import_id: int) -> str:
    """Import one queued ItemImport. Safe to deliver twice: the second delivery finds it claimed or finished."""
    try:
        item_import = item_import_run(import_id=import_id)
    except (OperationalError, InterfaceError) as exc:
        # The database went away mid-import; the import's transaction wrote nothing, so try again later.
        item_import_requeue(import_id=import_id)
        if self.request.retries >= self.max_retries:
            item_import_fail(import_id=import_id, errors=[f"The import failed after several tries: {exc}"])
            raise
        raise self.retry(exc=exc, countdown=10 * 2**self.request.retries) from exc
    except Exception as exc:
        logger.exception("item import %s failed", import_id)
        item_import_fail(import_id=import_id, errors=[f"The import stopped on an unexpected error: {exc!r}"])
        raise
    if item_import is None:
        logger.warning("item import %s no longer exists", import_id)
        return "missing"
    return item_import.status
