"""Celery tasks of the judging app: judge runs, generation runs and tournaments, through the one job block.

Each is a driven job (``annotation.job_tasks``): several workers may work one
run, each claiming units under its own lease, so a redelivered or duplicated
task only works what is left and a worker killed mid-run loses only its
in-flight calls. Claims, heartbeat, retries after a passing error, the final
failure and recovery of dead workers' runs belong to the block and the kinds
(``JUDGE_RUNS``, ``GENERATION_RUNS``, ``TOURNAMENTS``); the bodies only drive.
"""

from django.conf import settings

from annotation.job_tasks import Held, JobKind, job_kind_register, job_task

from .models import WebhookDelivery
from .services import judging_job  # noqa: F401 - load the model client once per worker, not per run
from .services.generation import GENERATION_RUNS, generation_run_drive
from .services.runs import JUDGE_RUN_SHARES, JUDGE_RUNS, run_drive
from .services.tournaments import TOURNAMENTS, tournament_play
from .webhooks import deliver, deliveries_recover, delivery_fail, delivery_release

WEBHOOK_DELIVERIES = job_kind_register(
    JobKind(
        name="webhook deliveries",
        model=WebhookDelivery,
        what="The webhook delivery",
        fail=delivery_fail,
        release=delivery_release,
        recover=deliveries_recover,
    )
)

# A run may take hours; it has its own bound (the global one is for shorter work). Resume continues it.
RUN_OPTIONS = {
    "reject_on_worker_lost": True,
    "max_retries": 5,
    "soft_time_limit": settings.FUNNYBONE_RUN_SOFT_TIME_LIMIT,
    "time_limit": settings.FUNNYBONE_RUN_TIME_LIMIT,
}


@job_task(JUDGE_RUNS, **RUN_OPTIONS)
def judge_run_task(job: Held) -> None:
    run_drive(job)


@job_task(JUDGE_RUN_SHARES, **RUN_OPTIONS)
def judge_run_share_task(job: Held) -> None:
    """One more process of the worker on a wide run (``judging.services.runs.run_shares``)."""
    run_drive(job, share=True)


@job_task(GENERATION_RUNS, **RUN_OPTIONS)
def generation_run_task(job: Held) -> None:
    generation_run_drive(job)


@job_task(TOURNAMENTS, **RUN_OPTIONS)
def tournament_task(job: Held) -> None:
    tournament_play(job.pk)


@job_task(WEBHOOK_DELIVERIES, soft_time_limit=120, time_limit=150)
def webhook_delivery_task(job: Held) -> None:
    """POST one webhook delivery (a few tries a few seconds apart; the result is on the webhooks page)."""
    deliver(delivery_id=job.pk, token=job.token)
