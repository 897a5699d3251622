"""Celery tasks of the annotation app: item imports, and the one recovery loop every worker runs."""

import logging
import threading

from celery import shared_task
from celery.signals import worker_ready, worker_shutting_down
from django.conf import settings

from .importers.background import IMPORTS, item_import_work
from .job_tasks import Held, job_task, jobs_recheck_delay, jobs_recover
from .jobs import recover_periodically, recovery_seconds
from .privacy import erase_expired_raw_ids

logger = logging.getLogger(__name__)


@job_task(
    IMPORTS,
    soft_time_limit=settings.FUNNYBONE_IMPORT_SOFT_TIME_LIMIT,
    time_limit=settings.FUNNYBONE_IMPORT_TIME_LIMIT,
)
def import_items_task(job: Held) -> None:
    """Import one queued ItemImport (items or protocol data). Safe to deliver twice: the second finds it claimed."""
    item_import_work(job)


@shared_task(ignore_result=True)
def erase_raw_ids_task() -> None:
    """Erase participants' platform ids past ``FUNNYBONE_RAW_ID_RETENTION_DAYS`` (annotation.privacy)."""
    erase_expired_raw_ids()


@shared_task(ignore_result=True)
def recover_stale_jobs_task() -> None:
    """Re-queue or fail every registered kind of job whose worker stopped beating (``job_kind_register``);
    look once more just after the soonest silent lease runs out when that comes before the periodic look."""
    jobs_recover()
    delay = jobs_recheck_delay()
    if delay is not None:
        recover_stale_jobs_task.apply_async(countdown=delay)


# Former names (imports only; judge runs, generations and tournaments), kept so messages already
# queued under them still run: both now recover every kind.
@shared_task(ignore_result=True)
def recover_stale_imports_task() -> None:
    jobs_recover()


@shared_task(name="judging.tasks.recover_stalled_work_task", ignore_result=True)
def recover_stalled_work_task() -> None:
    jobs_recover()


_recovery_stop: threading.Event | None = None
_erasure_stop: threading.Event | None = None
#: How often a worker queues the erasure of expired platform ids.
ERASE_EVERY_SECONDS = 3600


@worker_ready.connect
def _recover_jobs_when_a_worker_starts(sender=None, **kwargs) -> None:
    global _recovery_stop, _erasure_stop
    # Queued as a task, so the check runs in a pool process with its own database connection.
    recover_stale_jobs_task.delay()
    every = recovery_seconds()
    if every > 0:
        _recovery_stop = recover_periodically(recover_stale_jobs_task.delay, every=every, name="job-recovery")
    erase_raw_ids_task.delay()
    _erasure_stop = recover_periodically(erase_raw_ids_task.delay, every=ERASE_EVERY_SECONDS, name="raw-id-erasure")


@worker_shutting_down.connect
def _stop_job_recovery(**kwargs) -> None:
    for stop in (_recovery_stop, _erasure_stop):
        if stop is not None:
            stop.set()
