"""What a background job's lease is: its status, claim, heartbeat, finish, fail, and recovery of dead holders.

The one home of the lease for everything a Celery worker works on: item and
protocol imports, exports, stored reports (held: one worker at a time, a
model inheriting ``LeasedJob``) and judge runs, generation runs and
tournaments (driven: several workers may work one run, each unit claimed
under its own lease; ``judging.models.Driven``). Both kinds share one status
vocabulary (``JobStatus``), one lease and one heartbeat setting
(``FUNNYBONE_JOB_LEASE_SECONDS``, ``FUNNYBONE_JOB_HEARTBEAT_SECONDS``) and one
recovery loop; ``annotation.job_tasks`` is the building block that runs a job
through claim → heartbeat → work → finish or fail.

- ``job_claim`` moves a queued job (or one whose holder stopped beating) to
  running with a conditional update, under a token naming the holder; a
  redelivered task that loses the race does nothing. ``job_drive`` is the
  claim of a driven run: not exclusive, it only names the latest driver.
  Both return a ``Claim``, the only thing ``heartbeat`` accepts.
- ``heartbeat`` renews ``heartbeat_at`` from a background thread while the
  holder works. It uses its own database connection, so the beat is visible
  even while the holder's long transaction is still open; it never starts
  inside a transaction, where the claim is not committed yet.
- ``job_finish`` and ``job_fail`` end a job; finishing is conditional on the
  token still holding it, so a holder that lost its lease cannot overwrite
  what recovery (or a newer holder) recorded.
- ``stale_jobs`` are running jobs whose last heartbeat is older than the
  lease: measured from the last sign of life, not from when they started, so
  a long import that is still beating is never taken for dead.
  ``stale_jobs_recover`` re-queues them while attempts remain, else marks
  them failed with the reason a researcher reads on the job's page.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import connection, models, transaction
from django.db.models import F, Q
from django.utils import timezone

logger = logging.getLogger(__name__)


class JobStatus(models.TextChoices):
    """Where every background job stands. Only driven runs are cancelled (their Cancel button)."""

    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    # A driven run stopped by itself (its endpoint never answered), the reason in ``error``; resumable.
    PAUSED = "paused", "Paused"
    CANCELLED = "cancelled", "Cancelled"
    DONE = "done", "Done"
    FAILED = "failed", "Failed"


ACTIVE = (JobStatus.QUEUED, JobStatus.RUNNING)
FINISHED = (JobStatus.DONE, JobStatus.FAILED, JobStatus.CANCELLED)


class LeasedJob(models.Model):
    """The lease fields of a background job; subclasses add what the job is about and its result."""

    status = models.CharField(max_length=10, choices=JobStatus, default=JobStatus.QUEUED)
    claimed_by = models.CharField(max_length=64, blank=True, help_text="Token of the worker holding the job.")
    attempts = models.PositiveSmallIntegerField(default=0, help_text="How many times a worker claimed it.")
    started_at = models.DateTimeField(null=True, blank=True)
    # The holder's last sign of life; a running job silent for longer than the lease is stale.
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        abstract = True
        constraints = [
            models.CheckConstraint(
                condition=~Q(status=JobStatus.RUNNING) | Q(heartbeat_at__isnull=False),
                name="%(app_label)s_%(class)s_running_has_heartbeat",
            ),
        ]

    @property
    def is_finished(self) -> bool:
        return self.status in FINISHED


def lease_seconds() -> float:
    """How long a job (or a run's unit) stays with a worker after its last sign of life."""
    return float(settings.FUNNYBONE_JOB_LEASE_SECONDS)


def heartbeat_seconds() -> float:
    """How often a working holder renews its lease: several times per lease, so one missed beat is no death."""
    return float(settings.FUNNYBONE_JOB_HEARTBEAT_SECONDS)


def recovery_seconds() -> float:
    """How often each worker looks for jobs of dead workers: every half lease (a look that sees a silent
    lease run out before the next also looks just after it, ``recheck_delay``); never less often than
    ``FUNNYBONE_RECOVERY_SECONDS``, whose 0 turns the periodic look off (the one at worker start stays)."""
    if settings.FUNNYBONE_RECOVERY_SECONDS <= 0:
        return 0.0
    return min(float(settings.FUNNYBONE_RECOVERY_SECONDS), lease_seconds() / 2)


def new_token() -> str:
    return uuid.uuid4().hex[:32]


@dataclass(frozen=True)
class Claim:
    """A job this worker claimed (``job_claim``, ``job_drive``): what ``heartbeat`` needs to beat for it."""

    model: type[models.Model]
    pk: int
    token: str


def _stale(now: datetime, lease: float) -> Q:
    return Q(status=JobStatus.RUNNING, heartbeat_at__lt=now - timedelta(seconds=lease))


def job_claim(model: type[LeasedJob], *, pk: int, token: str, lease: float | None = None) -> Claim | None:
    """Take a queued job, or a running one whose holder stopped beating; None if someone else has it or it ended."""
    now = timezone.now()
    claimable = Q(status=JobStatus.QUEUED) | _stale(now, lease_seconds() if lease is None else lease)
    updated = model.objects.filter(claimable, pk=pk).update(
        status=JobStatus.RUNNING,
        claimed_by=token,
        attempts=F("attempts") + 1,
        started_at=now,
        heartbeat_at=now,
        finished_at=None,
    )
    return Claim(model, pk, token) if updated == 1 else None


def job_drive(model: type[models.Model], *, pk: int, token: str, **fields: Any) -> Claim | None:
    """Mark an active driven run (judge run, generation, tournament) running, driven by ``token`` from now.

    Not exclusive: a second driver takes the heartbeat over and both work the
    run's units, each unit claimed once under its own lease. ``fields`` are set
    with it (e.g. a first ``started_at``). None when the run has ended.
    """
    updated = model.objects.filter(pk=pk, status__in=ACTIVE).update(
        status=JobStatus.RUNNING, claimed_by=token, heartbeat_at=timezone.now(), **fields
    )
    return Claim(model, pk, token) if updated else None


def job_heartbeat(model: type[LeasedJob], *, pk: int, token: str) -> bool:
    """Renew the lease; False when the job is no longer this holder's (failed by recovery, claimed anew)."""
    return bool(
        model.objects.filter(pk=pk, status=JobStatus.RUNNING, claimed_by=token).update(heartbeat_at=timezone.now())
    )


def job_finish(model: type[LeasedJob], *, pk: int, token: str, **fields: Any) -> bool:
    """Mark the job done with its result fields, only while ``token`` still holds it."""
    return bool(
        model.objects.filter(pk=pk, status=JobStatus.RUNNING, claimed_by=token).update(
            status=JobStatus.DONE, finished_at=timezone.now(), **fields
        )
    )


def job_fail(model: type[LeasedJob], *, pk: int, token: str | None = None, **fields: Any) -> bool:
    """Mark an unfinished job failed with its reason fields; with ``token``, only while that holder has it."""
    jobs = model.objects.filter(pk=pk).exclude(status__in=FINISHED)
    if token is not None:
        jobs = jobs.filter(claimed_by=token)
    return bool(jobs.update(status=JobStatus.FAILED, finished_at=timezone.now(), **fields))


def job_release(model: type[LeasedJob], *, pk: int, token: str | None = None) -> bool:
    """Hand a running job back to the queue (before a retry); with ``token``, only that holder's."""
    jobs = model.objects.filter(pk=pk, status=JobStatus.RUNNING)
    if token is not None:
        jobs = jobs.filter(claimed_by=token)
    return bool(jobs.update(status=JobStatus.QUEUED, claimed_by="", started_at=None))


class LeaseLost(Exception):
    """The holder no longer holds the job: recovery failed it or another worker claimed it."""


@dataclass
class Beat:
    """What the heartbeat thread found: ``lost`` is set once the job was no longer ours.

    ``deadline`` (``time.monotonic``) is the soft time limit of the delivery. Celery raises the limit
    as a signal in whatever code runs at that moment; landing in a destructor (Django's
    ``ModelState.__del__``) it is swallowed and the job ran on. ``check`` raises it again once the
    deadline has passed, so a job's next check ends it the way the signal should have.
    """

    lost: threading.Event = field(default_factory=threading.Event)
    deadline: float | None = None

    def check(self) -> None:
        if self.lost.is_set():
            raise LeaseLost("This job was taken over while it ran (its heartbeat was missed).")
        if self.deadline is not None and time.monotonic() > self.deadline:
            from celery.exceptions import SoftTimeLimitExceeded

            raise SoftTimeLimitExceeded()


@contextmanager
def heartbeat(claim: Claim, *, every: float | None = None, deadline: float | None = None) -> Iterator[Beat]:
    """Renew the claimed job's lease every ``every`` seconds from a daemon thread until the block ends.

    It beats only for a ``Claim`` (so never before the claim) and only once
    the claim has committed: inside a transaction (a request's, a test's) the
    thread's own connection could not see the claimed row, or would wait on
    its lock, so no thread starts there and the block runs unbeaten.
    """
    interval = heartbeat_seconds() if every is None else every
    beat = Beat(deadline=deadline)
    if connection.in_atomic_block:
        yield beat
        return
    model, pk, token = claim.model, claim.pk, claim.token
    stop = threading.Event()

    def run() -> None:
        try:
            while not stop.wait(interval):
                try:
                    if not job_heartbeat(model, pk=pk, token=token):
                        beat.lost.set()
                        return
                except Exception:  # noqa: BLE001 - a missed beat is retried; recovery judges by the lease
                    logger.exception("heartbeat of %s %s failed", model.__name__, pk)
        finally:
            connection.close()  # this thread's own connection

    thread = threading.Thread(target=run, name=f"heartbeat-{model.__name__}-{pk}", daemon=True)
    thread.start()
    try:
        yield beat
    finally:
        stop.set()
        thread.join(timeout=interval + 30)


def soft_limit_of(task: Any) -> float:
    """The soft time limit this delivery ran under: the call's own, the task's, or the global default."""
    limits = getattr(task.request, "timelimit", None) or (None, None)
    return limits[1] or task.soft_time_limit or settings.CELERY_TASK_SOFT_TIME_LIMIT


def time_limit_message(seconds: float, *, what: str, outcome: str = "nothing was written.") -> str:
    span = f"{seconds / 60:g} minutes" if seconds >= 120 else f"{seconds:g} second{'' if seconds == 1 else 's'}"
    return f"{what} took longer than the {span} time limit and was stopped; {outcome}"


def stale_jobs(model: type[LeasedJob], *, now: datetime | None = None, lease: float | None = None) -> models.QuerySet:
    """Running jobs whose holder has not beaten for longer than the lease."""
    now = now or timezone.now()
    return model.objects.filter(_stale(now, lease_seconds() if lease is None else lease)).order_by("pk")


def job_lease_expiry(model: type[LeasedJob], *, lease: float | None = None) -> datetime | None:
    """When the soonest lease of a running job of ``model`` runs out if its holder beats no more (None: none runs)."""
    last = model.objects.filter(status=JobStatus.RUNNING).aggregate(soonest=models.Min("heartbeat_at"))["soonest"]
    return None if last is None else last + timedelta(seconds=lease_seconds() if lease is None else lease)


#: A look for dead holders goes this long after the lease it waits for ran out (clocks and commits settle).
RECHECK_MARGIN_SECONDS = 0.5


def recheck_delay(expiries: list[datetime | None], *, now: datetime | None = None) -> float | None:
    """Seconds until one more look for dead holders is worth it, or None when the periodic look comes first.

    A holder that died shortly after a periodic look would otherwise wait up to half a lease more
    for the next one (a dead worker's job moved again after about 1.35 leases); looking again just
    after the soonest lease runs out moves it within a lease (and the margin). A live holder beats
    every third of a lease, so its lease always runs out after the next periodic look: only
    silent holders ask for the extra look. A lease already past is left to the periodic look (the
    check that just ran did not find it stale: its clock or its commit is elsewhere).
    """
    now = now or timezone.now()
    every = recovery_seconds()
    soonest = min((at for at in expiries if at is not None and at > now), default=None)
    if soonest is None or every <= 0:
        return None
    delay = (soonest - now).total_seconds() + RECHECK_MARGIN_SECONDS
    return delay if delay < every else None


@dataclass
class Recovered:
    requeued: list[int] = field(default_factory=list)
    failed: list[int] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.requeued or self.failed)


IMPORT_ADVICE = "Try again, or split the file if it is very large."


def stalled_reason(job: LeasedJob, *, max_attempts: int, advice: str = IMPORT_ADVICE) -> str:
    last = job.heartbeat_at.strftime("%Y-%m-%d %H:%M:%S UTC") if job.heartbeat_at else "its start"
    return (
        f"The worker doing this job stopped responding (last sign of life {last}, attempt {job.attempts} of "
        f"{max_attempts}). It was stopped, restarted or ran out of memory; nothing was written. {advice}"
    )


def stale_jobs_recover(
    model: type[LeasedJob],
    *,
    enqueue: Callable[[int], None],
    failure: Callable[[str], dict[str, Any]],
    max_attempts: int,
    now: datetime | None = None,
    lease: float | None = None,
    advice: str = IMPORT_ADVICE,
) -> Recovered:
    """Re-queue stale jobs with attempts left (``enqueue(pk)`` after commit); fail the others.

    ``failure(reason)`` turns the reason into the model's own fields (e.g. ``{"errors": [reason]}``);
    ``advice`` ends the reason with what the researcher can do about it.
    Each change is a conditional update on the stale state, so a holder that
    beats again in between, or a second recovery running at once, wins cleanly.
    """
    now = now or timezone.now()
    lease = lease_seconds() if lease is None else lease
    found = Recovered()
    for job in stale_jobs(model, now=now, lease=lease):
        still_stale = model.objects.filter(_stale(now, lease), pk=job.pk, heartbeat_at=job.heartbeat_at)
        with transaction.atomic():
            if job.attempts < max_attempts:
                if still_stale.update(status=JobStatus.QUEUED, claimed_by="", started_at=None):
                    transaction.on_commit(lambda pk=job.pk: enqueue(pk))
                    found.requeued.append(job.pk)
            elif still_stale.update(
                status=JobStatus.FAILED,
                finished_at=now,
                **failure(stalled_reason(job, max_attempts=max_attempts, advice=advice)),
            ):
                found.failed.append(job.pk)
    if found:
        logger.warning("%s: re-queued %s, failed %s (no heartbeat)", model.__name__, found.requeued, found.failed)
    return found


def recover_periodically(queue_check: Callable[[], None], *, every: float, name: str) -> threading.Event:
    """Call ``queue_check`` (which should queue a recovery task) every ``every`` seconds; set the event to stop.

    Started from a worker's ``worker_ready`` signal: queueing a task (rather
    than checking here) runs the check in a pool process with its own
    database connection.
    """
    stop = threading.Event()

    def tick() -> None:
        while not stop.wait(every):
            try:
                queue_check()
            except Exception:  # noqa: BLE001 - the broker may be down; the next tick tries again
                logger.exception("could not queue the %s check", name)

    threading.Thread(target=tick, name=name, daemon=True).start()
    return stop
