"""Driving a run: claim units, keep ``concurrency`` calls in flight, write results.

Shared by judge runs and generation runs. One process (a Celery task) runs
one ``drive`` loop: the loop's own thread does every database write, a thread
pool does only the network calls. Units are claimed with a conditional update
under a lease that this loop renews every few seconds (the heartbeat); a
worker that dies stops renewing, and its units become claimable again when
the lease runs out, so a resumed run picks them up. A unit whose result was
written but not yet marked done is found done on the next claim (its
judgment exists), so nothing is done twice.

``concurrency`` sizes this process's pool; the judge's limits across all
processes are held per call (``judging.limits``), so with several workers on
one judge some pool threads wait for a slot instead of calling.
"""

import logging
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Protocol

from django.conf import settings
from django.db import close_old_connections, transaction
from django.db.models import Min, Model, Q
from django.utils import timezone

from annotation.jobs import heartbeat

from .models import ACTIVE_RUN_STATES, RunStatus, UnitStatus

logger = logging.getLogger(__name__)

# One lease for a run's heartbeat and its units' claims: a worker silent for this long is taken for dead.
LEASE_SECONDS = settings.FUNNYBONE_RUN_LEASE_SECONDS
HEARTBEAT_SECONDS = min(2.0, LEASE_SECONDS / 3)


def worker_token() -> str:
    return f"{uuid.uuid4().hex[:16]}"


def claimable(now) -> Q:
    return Q(status=UnitStatus.PENDING) | Q(status=UnitStatus.CLAIMED, claimed_until__lt=now)


def claim_units(
    unit_model: type[Model],
    *,
    run_id: int,
    token: str,
    limit: int,
    lease: float = LEASE_SECONDS,
    related: tuple[str, ...] = (),
) -> list:
    """Claim up to ``limit`` units of a run for ``token``: pending ones, or ones whose lease ran out.

    ``related`` names relations to prefetch with the claimed units (saves a query per unit).
    """
    if limit <= 0:
        return []
    now = timezone.now()
    with transaction.atomic():
        ids = list(
            unit_model.objects.select_for_update(skip_locked=True)
            .filter(run_id=run_id)
            .filter(claimable(now))
            .order_by("id")
            .values_list("id", flat=True)[:limit]
        )
        if not ids:
            return []
        # Conditional: a unit someone else claimed in between is not taken again.
        unit_model.objects.filter(pk__in=ids).filter(claimable(now)).update(
            status=UnitStatus.CLAIMED, claimed_by=token, claimed_until=now + timedelta(seconds=lease)
        )
    claimed = unit_model.objects.filter(pk__in=ids, claimed_by=token, status=UnitStatus.CLAIMED).order_by("id")
    return list(claimed.prefetch_related(*related) if related else claimed)


def renew_leases(unit_model: type[Model], *, token: str, lease: float = LEASE_SECONDS) -> int:
    return unit_model.objects.filter(claimed_by=token, status=UnitStatus.CLAIMED).update(
        claimed_until=timezone.now() + timedelta(seconds=lease)
    )


def release_unit(unit, *, attempts: int = 0) -> None:
    type(unit).objects.filter(pk=unit.pk, status=UnitStatus.CLAIMED, claimed_by=unit.claimed_by).update(
        status=UnitStatus.PENDING, claimed_by="", claimed_until=None, attempts=unit.attempts + attempts
    )


def complete_unit(unit, *, status: str = UnitStatus.DONE, attempts: int = 0, **fields: Any) -> None:
    type(unit).objects.filter(pk=unit.pk).exclude(status__in=[UnitStatus.DONE, UnitStatus.FAILED]).update(
        status=status,
        claimed_until=None,
        finished_at=timezone.now(),
        attempts=unit.attempts + attempts,
        **fields,
    )


def run_take(run_model: type[Model], *, pk: int, token: str, **fields: Any) -> bool:
    """Mark an active run (or tournament) running and driven by ``token``, its heartbeat starting now.

    Not exclusive: a second driver takes the heartbeat over and both work the units, each claimed once.
    ``fields`` are set with it (e.g. a first ``started_at``). False when the run has ended.
    """
    now = timezone.now()
    return bool(
        run_model.objects.filter(pk=pk, status__in=ACTIVE_RUN_STATES).update(
            status=RunStatus.RUNNING, claimed_by=token, heartbeat_at=now, **fields
        )
    )


@contextmanager
def run_heartbeat(run_model: type[Model], *, pk: int, token: str) -> Iterator[None]:
    """Renew the run's heartbeat (``annotation.jobs.heartbeat``) a few times per lease while the block runs.

    Not inside a transaction (a caller's atomic block, a test's): there the run's row is locked by
    that transaction and invisible to others, so a beat from another connection could only wait.
    """
    if transaction.get_connection().in_atomic_block:
        yield
        return
    with heartbeat(run_model, pk=pk, token=token, every=LEASE_SECONDS / 3):
        yield


def unfinished(unit_model: type[Model], run_id: int):
    return unit_model.objects.filter(run_id=run_id, status__in=[UnitStatus.PENDING, UnitStatus.CLAIMED])


# A judge run and a generation run end, stop and start again the same way; only their models differ.


def cancel_run(run: Model) -> bool:
    """Stop handing out the run's units; calls in flight finish. False if it had ended."""
    changed = (
        type(run)
        .objects.filter(pk=run.pk, status__in=ACTIVE_RUN_STATES)
        .update(status=RunStatus.CANCELLED, finished_at=timezone.now())
    )
    run.refresh_from_db()
    return bool(changed)


def resume_run(run: Model, *, unit_model: type[Model], enqueue: Callable[[int], None] | None) -> Model:
    """Queue the run again (``enqueue`` its id after commit): unfinished units, or ones held by a dead worker,
    are worked; finished ones are kept. A run that is done with nothing left stays as it is."""
    if run.status == RunStatus.DONE and not unfinished(unit_model, run.pk).exists():
        return run
    with transaction.atomic():
        type(run).objects.filter(pk=run.pk).update(status=RunStatus.QUEUED, finished_at=None, error="")
        if enqueue:
            enqueue(run.pk)
    run.refresh_from_db()
    return run


def end_run_if_finished(run_model: type[Model], unit_model: type[Model], run_id: int) -> None:
    """Mark an active run done once none of its units is left (a cancelled or failed run keeps its status)."""
    if not unfinished(unit_model, run_id).exists():
        run_model.objects.filter(pk=run_id, status__in=ACTIVE_RUN_STATES).update(
            status=RunStatus.DONE, finished_at=timezone.now()
        )


class Job(Protocol):
    """What a run does with each unit. ``prepare`` and ``finish`` run on the loop's thread (database);
    ``call`` runs on a pool thread (network only). ``prepare`` returns None when the unit needed no call
    (it finished it itself)."""

    unit_model: type[Model]
    concurrency: int

    def prepare(self, unit) -> Any | None: ...

    def call(self, prepared: Any) -> Any: ...

    def finish(self, unit, prepared: Any, result: Any) -> None: ...

    def fail(self, unit, prepared: Any, error: BaseException) -> None: ...


@dataclass
class DriveResult:
    processed: int = 0
    cancelled: bool = False


def drive(
    job: Job,
    *,
    run_id: int,
    is_cancelled: Callable[[], bool],
    token: str | None = None,
    lease: float = LEASE_SECONDS,
    heartbeat: float = HEARTBEAT_SECONDS,
    wait_for_others: bool = True,
) -> DriveResult:
    """Work a run's units until none is left (or the run is cancelled).

    Up to ``concurrency`` calls are in flight and as many more units wait prepared
    beside them, so a finished call's slot is refilled at once and the database
    work (claiming, preparing, recording) overlaps the calls instead of following them.
    """
    token = token or worker_token()
    result = DriveResult()
    in_flight: dict[Future, tuple[Any, Any]] = {}
    ready: deque[tuple[Any, Any]] = deque()
    last_beat = time.monotonic()
    with ThreadPoolExecutor(max_workers=job.concurrency, thread_name_prefix=f"run{run_id}") as pool:

        def fill_slots() -> None:
            while ready and len(in_flight) < job.concurrency:
                unit, prepared = ready.popleft()
                in_flight[pool.submit(job.call, prepared)] = (unit, prepared)

        while True:
            cancelled = is_cancelled()
            if cancelled:
                while ready:  # prepared but never sent: back to pending for a resumed run
                    release_unit(ready.popleft()[0])
            else:
                room = 2 * job.concurrency - len(in_flight) - len(ready)
                claimed = claim_units(
                    job.unit_model,
                    run_id=run_id,
                    token=token,
                    limit=room,
                    lease=lease,
                    related=getattr(job, "claim_related", ()),
                )
                for unit in claimed:
                    prepared = _prepare(job, unit)
                    if prepared is None:
                        result.processed += 1
                    else:
                        ready.append((unit, prepared))
                    fill_slots()
            if not in_flight:
                if cancelled:
                    result.cancelled = True
                    break
                left = unfinished(job.unit_model, run_id)
                if not left.exists():
                    break
                if left.filter(claimable(timezone.now())).exists():
                    continue  # more to claim right away
                if not wait_for_others:
                    break
                # Only units leased by another (maybe dead) worker remain: wait for them.
                soonest = left.aggregate(t=Min("claimed_until"))["t"]
                pause = (soonest - timezone.now()).total_seconds() if soonest else 0.0
                time.sleep(min(max(pause, 0.05), heartbeat))
                close_old_connections()
                continue
            done, _ = wait(list(in_flight), timeout=heartbeat, return_when=FIRST_COMPLETED)
            finished = [in_flight.pop(future) + (future,) for future in done]
            fill_slots()
            for unit, prepared, future in finished:
                _finish(job, unit, prepared, future)
                result.processed += 1
            if time.monotonic() - last_beat >= heartbeat / 2:
                renew_leases(job.unit_model, token=token, lease=lease)
                last_beat = time.monotonic()
    return result


def _prepare(job: Job, unit) -> Any | None:
    try:
        # One transaction per step: one commit instead of one per write.
        with transaction.atomic():
            return job.prepare(unit)
    except Exception as exc:  # noqa: BLE001 - recorded on the unit's judgment, not lost
        logger.exception("preparing unit %s failed", unit.pk)
        job.fail(unit, None, exc)
        return None


def _finish(job: Job, unit, prepared: Any, future: Future) -> None:
    try:
        with transaction.atomic():
            job.finish(unit, prepared, future.result())
    except Exception as exc:  # noqa: BLE001 - the unit is marked failed with the reason
        logger.exception("finishing unit %s failed", unit.pk)
        job.fail(unit, prepared, exc)
