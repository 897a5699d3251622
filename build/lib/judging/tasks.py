"""Celery tasks of the judging app. Each takes ids, calls a service, and is safe to run twice."""

import logging
import threading

from celery import shared_task
from celery.signals import worker_ready, worker_shutting_down
from django.conf import settings

from annotation.jobs import recover_periodically

from .runner import LEASE_SECONDS
from .services import judging_job  # noqa: F401 - load the model client once per worker, not per run
from .services.generation import generation_run_fail, process_generation_run
from .services.recovery import stalled_work_requeue
from .services.runs import process_run, run_fail
from .services.tournaments import process_tournament, tournament_fail

logger = logging.getLogger(__name__)

# Units are claimed under a lease, so a redelivered or duplicated task only
# works what is left; a worker killed mid-run loses only its in-flight calls.
TASK_OPTIONS = {
    "acks_late": True,
    "reject_on_worker_lost": True,
    "autoretry_for": (ConnectionError, OSError),
    "retry_backoff": True,
    "retry_jitter": True,
    "max_retries": 5,
    # A run may take hours; it has its own bound (the global one is for shorter work). Resume continues it.
    "soft_time_limit": settings.FUNNYBONE_RUN_SOFT_TIME_LIMIT,
    "time_limit": settings.FUNNYBONE_RUN_TIME_LIMIT,
}


@shared_task(bind=True, **TASK_OPTIONS)
def judge_run_task(self, run_id: int) -> None:
    try:
        process_run(run_id=run_id)
    except Exception as exc:
        if isinstance(exc, TASK_OPTIONS["autoretry_for"]) and self.request.retries < TASK_OPTIONS["max_retries"]:
            raise
        logger.exception("judge run %s failed", run_id)
        run_fail(run_id=run_id, error=f"{type(exc).__name__}: {exc}")


@shared_task(bind=True, **TASK_OPTIONS)
def generation_run_task(self, run_id: int) -> None:
    try:
        process_generation_run(run_id=run_id)
    except Exception as exc:
        if isinstance(exc, TASK_OPTIONS["autoretry_for"]) and self.request.retries < TASK_OPTIONS["max_retries"]:
            raise
        logger.exception("generation run %s failed", run_id)
        generation_run_fail(run_id=run_id, error=f"{type(exc).__name__}: {exc}")


@shared_task(bind=True, **TASK_OPTIONS)
def tournament_task(self, tournament_id: int) -> None:
    try:
        process_tournament(tournament_id=tournament_id)
    except Exception as exc:
        if isinstance(exc, TASK_OPTIONS["autoretry_for"]) and self.request.retries < TASK_OPTIONS["max_retries"]:
            raise
        logger.exception("tournament %s failed", tournament_id)
        tournament_fail(tournament_id=tournament_id, error=f"{type(exc).__name__}: {exc}")


@shared_task(ignore_result=True)
def recover_stalled_work_task() -> None:
    stalled_work_requeue()


def recovery_seconds() -> float:
    """How often a running worker looks for stalled work: every half lease, so a dead worker's run
    is picked up within about a lease; never less often than ``FUNNYBONE_RECOVERY_SECONDS``, whose 0
    turns the periodic check off (the start-up one stays)."""
    if settings.FUNNYBONE_RECOVERY_SECONDS <= 0:
        return 0.0
    return min(float(settings.FUNNYBONE_RECOVERY_SECONDS), LEASE_SECONDS / 2)


_recovery_stop: threading.Event | None = None


@worker_ready.connect
def _recover_when_a_worker_starts(sender=None, **kwargs) -> None:
    global _recovery_stop
    # Queued as a task, so the check runs in a pool process with its own database connection.
    recover_stalled_work_task.delay()
    every = recovery_seconds()
    if every > 0:
        _recovery_stop = recover_periodically(recover_stalled_work_task.delay, every=every, name="judging-recovery")


@worker_shutting_down.connect
def _stop_recovery(**kwargs) -> None:
    if _recovery_stop is not None:
        _recovery_stop.set()
