"""Celery tasks of the judging app. Each takes ids, calls a service, and is safe to run twice."""

import logging

from celery import shared_task

from .services import judging_job  # noqa: F401 - load the model client once per worker, not per run
from .services.generation import generation_run_fail, process_generation_run
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
