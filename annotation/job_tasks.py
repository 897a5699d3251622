"""The one building block of background work: a job kind, and a task that runs it claim → heartbeat → work → end.

``annotation.jobs`` says what a lease is (status, claim, heartbeat, finish,
fail, staleness); this module is where every Celery task that works on a job
goes through it, so a task body is only the work:

- ``JobKind`` describes one kind of job (item imports, exports, stored
  reports, judge runs, generation runs, tournaments): its model, how it is
  claimed (held by one worker, or driven by several), how a failure is
  recorded on its page, and how its dead workers' jobs are recovered.
  ``job_kind_register`` adds it to the one registry every worker's recovery
  loop walks (``jobs_recover``); apps that depend on annotation (ratings,
  judging) register from their ``AppConfig.ready``, so annotation never
  imports them.
- ``job_run`` claims, starts the heartbeat only once the claim has
  committed (``heartbeat`` takes the ``Claim`` and refuses to beat inside a
  transaction), runs the work and lets the work finish the job in its own
  writing transaction (``job_finish``, conditional on the token, so a worker
  that lost its lease has its writes undone). Used by the tasks and by the
  paths that run a small job inside the request.
- ``job_task`` makes the Celery task: ``job_run`` plus what happens when it
  goes wrong. A passing error (the database away; for driven runs a network
  error too) hands the job back and retries it after 10, 20, 40 … seconds
  (capped at 300), a bounded number of times, then fails it with the reason;
  the soft time limit fails it with the limit named; any other error fails it
  with the error. Every path returns the job's status afterwards.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from celery import shared_task
from celery.exceptions import SoftTimeLimitExceeded
from django.db import DatabaseError, InterfaceError, OperationalError, connection, models

from .jobs import (
    Beat,
    Claim,
    LeasedJob,
    LeaseLost,
    Recovered,
    heartbeat,
    job_claim,
    job_drive,
    job_lease_expiry,
    new_token,
    recheck_delay,
    soft_limit_of,
    time_limit_message,
)

logger = logging.getLogger(__name__)

#: Retries after a passing error before the job is failed.
DB_RETRIES = 3
#: First retry after this many seconds, doubling each time...
BASE_BACKOFF_SECONDS = 10
#: ...but never waiting longer than this.
MAX_BACKOFF_SECONDS = 300
#: Errors that pass: the database went away (a restart, a failover). Never the job's own fault.
DATABASE_ERRORS: tuple[type[BaseException], ...] = (OperationalError, InterfaceError)
#: ...and, for a driven run, its endpoint or broker out of reach for a moment.
NETWORK_ERRORS: tuple[type[BaseException], ...] = (ConnectionError, OSError)


def backoff_seconds(retries: int) -> int:
    """Seconds before retry number ``retries + 1``: 10, 20, 40, … capped at MAX_BACKOFF_SECONDS."""
    return min(MAX_BACKOFF_SECONDS, BASE_BACKOFF_SECONDS * 2 ** max(0, retries))


def on_fresh_connection(record: Callable[[], Any]) -> None:
    """Run a bookkeeping write; if the failure left the connection unusable, once more on a new one.

    If the database is still away the write is given up (and logged): the
    job's heartbeat has stopped, so recovery fails or re-queues it later.
    """
    try:
        record()
    except DatabaseError:
        connection.close()
        try:
            record()
        except DatabaseError:
            logger.exception("could not record the state of a job; recovery will find it")


@dataclass(frozen=True)
class Held:
    """A claimed job as its work sees it: its id, the claim's token, and the heartbeat's news."""

    pk: int
    token: str
    beat: Beat


@dataclass(frozen=True)
class JobKind:
    """One kind of background job.

    ``fail(pk, reason, token)`` records a final failure where the job's page
    shows it (``token`` None: whoever holds it). A ``driven`` kind (several
    workers per run, units under their own leases) is claimed with
    ``job_drive`` and also retries after a network error (its endpoint or
    broker away); a held one with the exclusive ``job_claim``. ``claim(pk,
    token)`` replaces either. ``release(pk)`` hands a job back to the queue
    before a retry (driven runs need none: their units' leases run out).
    ``recover()`` re-queues or fails this kind's jobs whose workers died.
    ``outcome`` says what the time limit leaves behind. ``expiry()`` says when the soonest
    lease of a running job of this kind runs out if its holder is silent from now on (held kinds:
    their jobs' heartbeats, by default; a driven kind passes its own).
    """

    name: str
    model: type[models.Model]
    what: str
    fail: Callable[[int, str, str | None], Any]
    recover: Callable[[], Recovered]
    driven: bool = False
    claim: Callable[[int, str], Claim | None] | None = None
    release: Callable[[int], Any] | None = None
    outcome: str = "nothing was written."
    limit_advice: str = ""
    expiry: Callable[[], datetime | None] | None = None

    def lease_expiry(self) -> datetime | None:
        if self.expiry is not None:
            return self.expiry()
        if not self.driven and issubclass(self.model, LeasedJob):
            return job_lease_expiry(self.model)
        return None

    def take(self, pk: int, token: str) -> Claim | None:
        if self.claim is not None:
            return self.claim(pk, token)
        if self.driven:
            return job_drive(self.model, pk=pk, token=token)
        return job_claim(self.model, pk=pk, token=token)

    @property
    def transient(self) -> tuple[type[BaseException], ...]:
        """Errors that pass, worth a retry: the database's, and a driven run's network errors."""
        return (*DATABASE_ERRORS, *(NETWORK_ERRORS if self.driven else ()))

    def status_of(self, pk: int) -> str:
        return self.model.objects.filter(pk=pk).values_list("status", flat=True).first() or "missing"


_kinds: dict[str, JobKind] = {}


def job_kind_register(kind: JobKind) -> JobKind:
    """Add one kind of job to the workers' recovery; registering the same name again replaces it."""
    _kinds[kind.name] = kind
    return kind


def job_kinds() -> list[JobKind]:
    return list(_kinds.values())


def jobs_recover() -> dict[str, Recovered]:
    """Recover every registered kind of job; one failing (its table locked, say) does not stop the others."""
    found: dict[str, Recovered] = {}
    for kind in job_kinds():
        try:
            found[kind.name] = kind.recover()
        except Exception:  # noqa: BLE001 - the next round tries again
            logger.exception("recovery of %s failed", kind.name)
    return found


def jobs_recheck_delay() -> float | None:
    """Seconds until the soonest lease of any kind's running job runs out (see ``jobs.recheck_delay``)."""
    expiries = []
    for kind in job_kinds():
        try:
            expiries.append(kind.lease_expiry())
        except Exception:  # noqa: BLE001 - the periodic look still comes
            logger.exception("could not read the leases of %s", kind.name)
    return recheck_delay(expiries)


def job_run(
    kind: JobKind, pk: int, work: Callable[[Held], Any], *, token: str | None = None, soft_limit: float | None = None
) -> bool:
    """Claim job ``pk`` of ``kind`` and run ``work`` on it under a heartbeat; False when there was nothing to do.

    Nothing to do: another worker holds it, or it ended. A holder that lost
    its lease meanwhile (``LeaseLost``) stops; what recovery or the new holder
    recorded stands.
    """
    claim = kind.take(pk, token or new_token())
    if claim is None:
        logger.info("%s %s is finished or held elsewhere; nothing to do", kind.name, pk)
        return False
    try:
        deadline = time.monotonic() + soft_limit if soft_limit else None
        with heartbeat(claim, deadline=deadline) as beat:
            work(Held(pk=pk, token=claim.token, beat=beat))
    except LeaseLost:
        logger.warning("%s %s was taken over while this worker had it; its writes were undone", kind.name, pk)
    return True


def job_task(kind: JobKind, *, name: str | None = None, **options: Any) -> Callable[[Callable[[Held], Any]], Any]:
    """Make ``work(held)`` the body of a Celery task ``task(job_id)`` that runs one job of ``kind``.

    ``options`` go to ``shared_task`` (time limits, ``max_retries``; acks_late
    is always on: the claim makes a second delivery harmless).
    """
    retrying = kind.transient

    def decorate(work: Callable[[Held], Any]) -> Any:
        def run(self, job_id: int) -> str:
            token = new_token()
            try:
                job_run(kind, job_id, work, token=token, soft_limit=soft_limit_of(self))
            except SoftTimeLimitExceeded:
                logger.warning("%s %s hit its time limit", kind.name, job_id)
                message = time_limit_message(soft_limit_of(self), what=kind.what, outcome=kind.outcome)
                reason = f"{message} {kind.limit_advice}".strip()
                # The limit may have interrupted a query and left the connection unusable.
                on_fresh_connection(lambda: kind.fail(job_id, reason, token))
            except retrying as exc:
                retries = self.request.retries
                if kind.release is not None:
                    on_fresh_connection(lambda: kind.release(job_id))
                if retries >= self.max_retries:
                    cause = (
                        "the database was unavailable" if isinstance(exc, DATABASE_ERRORS) else "a connection failed"
                    )
                    reason = f"{kind.what} failed after {retries + 1} tries because {cause}: {exc}".strip()
                    on_fresh_connection(lambda: kind.fail(job_id, reason, None))
                    raise
                logger.warning("%s %s: %s, retry %s", kind.name, job_id, type(exc).__name__, retries + 1)
                raise self.retry(exc=exc, countdown=backoff_seconds(retries)) from exc
            except Exception as exc:
                logger.exception("%s %s failed", kind.name, job_id)
                kind.fail(job_id, f"{type(exc).__name__}: {exc}", token)
                raise
            return kind.status_of(job_id)

        # Named after the work, so the task keeps the name its queued messages carry. Not functools.wraps:
        # Celery reads the arguments of __wrapped__, and the task takes the job's id, not a Held.
        run.__name__, run.__qualname__ = work.__name__, work.__qualname__
        run.__module__, run.__doc__ = work.__module__, work.__doc__
        options.setdefault("max_retries", DB_RETRIES)
        task = shared_task(bind=True, acks_late=True, **({"name": name} if name else {}), **options)(run)
        task.job_kind = kind
        return task

    return decorate
