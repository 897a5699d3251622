"""What every leased-job Celery task shares: retries on database errors, and recovery on worker start.

``annotation.jobs`` holds the lease itself (claim, heartbeat, finish, fail,
stale-job recovery); this module holds the task side around it, so imports,
exports and reports do not each write their own:

- ``db_retrying`` wraps a bound task taking the job's id. When the database
  goes away mid-job (``OperationalError``/``InterfaceError``) the job goes
  back to the queue and the task is retried with exponential backoff capped
  at ``MAX_BACKOFF_SECONDS``; after its last retry the job is failed with
  the reason on its page. The job's own transaction wrote nothing.
- ``job_recovery_register`` lets an app add its jobs to the recovery that
  every worker runs at start and every ``FUNNYBONE_RECOVERY_SECONDS``
  (``annotation.tasks.recover_stale_jobs_task``). Apps that depend on
  annotation (ratings, judging) register from their ``AppConfig.ready``, so
  annotation never imports them.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import Any

from django.db import DatabaseError, InterfaceError, OperationalError, connection

from .jobs import Recovered

logger = logging.getLogger(__name__)

#: Retries after a database error before the job is failed.
DB_RETRIES = 3
#: First retry after this many seconds, doubling each time...
BASE_BACKOFF_SECONDS = 10
#: ...but never waiting longer than this.
MAX_BACKOFF_SECONDS = 300


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


def db_retrying(
    *,
    release: Callable[[int], Any],
    fail: Callable[[int, str], Any],
    what: str,
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorate a bound task ``task(self, job_id, ...)``: on a database error, release, back off and retry.

    ``release(job_id)`` hands the job back to the queue; ``fail(job_id, reason)``
    records the reason after the last retry (``self.max_retries``, which
    ``shared_task(max_retries=DB_RETRIES)`` sets).
    """

    def decorate(task: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(task)
        def run(self, job_id: int, *args: Any, **kwargs: Any) -> Any:
            try:
                return task(self, job_id, *args, **kwargs)
            except (OperationalError, InterfaceError) as exc:
                retries = self.request.retries
                on_fresh_connection(lambda: release(job_id))
                if retries >= self.max_retries:
                    reason = (
                        f"{what} failed after {retries + 1} tries because the database was unavailable: {exc}"
                    ).strip()
                    on_fresh_connection(lambda: fail(job_id, reason))
                    raise
                logger.warning("%s %s: database unavailable, retry %s", what, job_id, retries + 1)
                raise self.retry(exc=exc, countdown=backoff_seconds(retries)) from exc

        return run

    return decorate


_recoveries: dict[str, Callable[[], Recovered]] = {}


def job_recovery_register(name: str, recover: Callable[[], Recovered]) -> None:
    """Add one kind of job to the workers' recovery; registering the same name again replaces it."""
    _recoveries[name] = recover


def jobs_recover() -> dict[str, Recovered]:
    """Run every registered recovery; one failing (its table locked, say) does not stop the others."""
    found: dict[str, Recovered] = {}
    for name, recover in list(_recoveries.items()):
        try:
            found[name] = recover()
        except Exception:  # noqa: BLE001 - the next round tries again
            logger.exception("recovery of %s failed", name)
    return found
