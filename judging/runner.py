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
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Protocol

from django.db import close_old_connections, connection, transaction
from django.db.models import Min, Model, Q
from django.utils import timezone

from annotation.jobs import lease_seconds

from .models import ACTIVE_RUN_STATES, RunStatus, UnitStatus
from .shared_limits import renew_held_slots
from .webhooks import run_ended

logger = logging.getLogger(__name__)

# The one job lease (annotation.jobs) also bounds a unit's claim: a worker silent for this long is taken for dead.
LEASE_SECONDS = lease_seconds()
# How often the drive loop wakes to renew its units' claims and look for work (not the run's heartbeat).
HEARTBEAT_SECONDS = min(2.0, LEASE_SECONDS / 3)


# Units claimed per place in the pool: one being called, the rest prepared and waiting (see drive).
PREPARED_PER_SLOT = 3
# A claim while the pool is idle (nothing in flight, nothing prepared: a run's start, a new wave of an
# adaptive run) takes this many units, which are sent before the rest are claimed and prepared, so the
# first calls do not wait for a pool's worth to be prepared (192 units took 0.13 s at concurrency 64).
FIRST_CLAIM = 8
# Longest the loop lets finished calls gather before recording them, while the pool has enough prepared.
GATHER_SECONDS = 0.1
# How often a loop with nothing left but units other workers hold looks whether they are done.
OTHERS_POLL_SECONDS = 0.2


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


def update_rows(
    model: type[Model],
    rows: list[tuple],
    fields: list[str],
    constants: dict[str, Any],
    *,
    unless: dict[str, list[Any]] | None = None,
) -> int:
    """Set ``fields`` row by row (each row ``(pk, *values)``) and ``constants`` on every row, in one
    ``WITH v AS (VALUES ...) UPDATE ... FROM v``: what ``bulk_update`` does, without the CASE expression
    per field and row that Django builds in Python (which, for a few hundred rows, costs far more than
    the database's work). Rows whose field in ``unless`` holds one of its values are left alone.
    Values are parameters; column names come from the model. The number of rows changed."""
    if not rows:
        return 0
    quote = connection.ops.quote_name
    meta = model._meta
    table = quote(meta.db_table)
    columns = [meta.get_field(name) for name in fields]
    alias = ["pk", *(f"v{i}" for i in range(len(columns)))]
    sets = [
        f"{quote(field.column)} = CAST(v.{name} AS {field.cast_db_type(connection)})"
        for field, name in zip(columns, alias[1:], strict=True)
    ]
    params: list[Any] = []
    for name, value in constants.items():
        field = meta.get_field(name)
        sets.append(f"{quote(field.column)} = %s")
        params.append(field.get_db_prep_save(value, connection))
    row_sql = "(" + ", ".join(["%s"] * len(alias)) + ")"
    values = [value for row in rows for value in row]
    where = [f"{table}.{quote(meta.pk.column)} = v.pk"]
    for name, excluded in (unless or {}).items():
        field = meta.get_field(name)
        where.append(f"{table}.{quote(field.column)} NOT IN ({', '.join(['%s'] * len(excluded))})")
        params.extend(field.get_db_prep_save(value, connection) for value in excluded)
    sql = (
        f"WITH v ({', '.join(alias)}) AS (VALUES {', '.join([row_sql] * len(rows))}) "  # noqa: S608 - names from the model, values as parameters
        f"UPDATE {table} SET {', '.join(sets)} FROM v WHERE {' AND '.join(where)}"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, values + params)
        return cursor.rowcount


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
    if changed:
        run_ended(type(run), run.pk)
    return bool(changed)


def pause_run(run_model: type[Model], *, pk: int, reason: str) -> bool:
    """Stop an active run that cannot go on as it is (``reason`` says why and what to fix); resuming continues it.

    Its workers see it as they see a cancellation: calls in flight end and their units go back to pending.
    """
    paused = run_model.objects.filter(pk=pk, status__in=ACTIVE_RUN_STATES).update(status=RunStatus.PAUSED, error=reason)
    if paused:
        run_ended(run_model, pk)
    return bool(paused)


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
        done = run_model.objects.filter(pk=run_id, status__in=ACTIVE_RUN_STATES).update(
            status=RunStatus.DONE, finished_at=timezone.now()
        )
        if done:
            run_ended(run_model, run_id)


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

    Up to ``concurrency`` calls are in flight and twice as many units wait prepared
    beside them. A call that ends hands its place to the next prepared unit at once,
    from the pool thread (``refill``), so the pool stays full while this thread does
    the database work (claiming, preparing, recording the finished calls in batches).
    """
    token = token or worker_token()
    result = DriveResult()
    in_flight: dict[Future, tuple[Any, Any]] = {}  # sent and not yet recorded (some may have ended)
    ready: deque[tuple[Any, Any]] = deque()
    calling = [0]  # calls under way right now
    lock = threading.RLock()  # guards in_flight, ready and calling between this thread and the pool's
    # Set while less than a pool's worth waits prepared: this thread should claim now, not gather results.
    running_low = threading.Event()
    last_beat = time.monotonic()
    with ThreadPoolExecutor(max_workers=job.concurrency, thread_name_prefix=f"run{run_id}") as pool:

        def fill_slots() -> None:
            with lock:
                while ready and calling[0] < job.concurrency:
                    unit, prepared = ready.popleft()
                    if len(ready) < job.concurrency:
                        running_low.set()
                    try:
                        future = pool.submit(job.call, prepared)
                    except RuntimeError:  # the pool is shutting down: leave it for this thread to release
                        ready.appendleft((unit, prepared))
                        return
                    calling[0] += 1
                    in_flight[future] = (unit, prepared)
                    future.add_done_callback(refill)

        def refill(_future: Future) -> None:
            with lock:
                calling[0] -= 1
                fill_slots()

        while True:
            cancelled = is_cancelled()
            if cancelled:
                with lock:
                    unsent = list(ready)
                    ready.clear()
                for unit, _prepared in unsent:  # prepared but never sent: back to pending for a resumed run
                    release_unit(unit)
            else:
                with lock:
                    # Up to twice the pool's size waits prepared: enough for the pool threads to keep
                    # taking from while this thread is slowed by a busy database. While some wait, claim
                    # only once a pool's worth fits: a claim and its preparing cost about the same
                    # queries for 5 units as for 60, and on a busy machine this thread's time per unit
                    # is what holds the calls back.
                    room = PREPARED_PER_SLOT * job.concurrency - len(in_flight) - len(ready)
                    if ready and room < job.concurrency:
                        room = 0
                    first = not in_flight and not ready and room > FIRST_CLAIM
                if first:
                    room = FIRST_CLAIM
                claimed = claim_units(
                    job.unit_model,
                    run_id=run_id,
                    token=token,
                    limit=room,
                    lease=lease,
                    related=getattr(job, "claim_related", ()),
                )
                for unit, prepared in _prepare_batch(job, claimed):
                    if prepared is None:
                        result.processed += 1
                    else:
                        with lock:
                            ready.append((unit, prepared))
                fill_slots()
                with lock:
                    if len(ready) >= job.concurrency:
                        running_low.clear()
                if first and claimed:
                    continue  # the first calls are on their way: claim and prepare the rest now
            with lock:
                idle = not in_flight
                pending_calls = list(in_flight)
            if idle:
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
                # Only units leased by another (maybe dead) worker remain: wait for them. A live one (a share
                # of the run, judging.services.runs) finishes them in a moment: look again soon, so the run
                # ends then and not a heartbeat later.
                soonest = left.aggregate(t=Min("claimed_until"))["t"]
                pause = (soonest - timezone.now()).total_seconds() if soonest else 0.0
                time.sleep(min(max(pause, 0.05), heartbeat, OTHERS_POLL_SECONDS))
                close_old_connections()
                continue
            done, _ = wait(pending_calls, timeout=heartbeat, return_when=FIRST_COMPLETED)
            if done and not cancelled:
                # While the pool has a pool's worth prepared, let more calls end before recording
                # them: one transaction for many answers costs this thread far less than one for each.
                running_low.wait(timeout=GATHER_SECONDS)
            with lock:
                finished = [in_flight.pop(future) + (future,) for future in list(in_flight) if future.done()]
            _finish_batch(job, finished)
            result.processed += len(finished)
            if time.monotonic() - last_beat >= heartbeat / 2:
                renew_leases(job.unit_model, token=token, lease=lease)
                renew_held_slots()  # the judge's call slots this worker holds live as long as its units
                last_beat = time.monotonic()
    return result


def _prepare_batch(job: Job, units: list) -> list[tuple[Any, Any | None]]:
    """Prepare claimed units together in one transaction when the job can (``prepare_many``); one by one,
    each in its own, when it cannot or the batch failed (so one bad unit is recorded on its own)."""
    if not units:
        return []
    if hasattr(job, "prepare_many"):
        try:
            with transaction.atomic():
                return job.prepare_many(units)
        except Exception:  # noqa: BLE001 - worked again unit by unit below, where failures are recorded
            logger.exception("preparing %d units together failed; preparing them one by one", len(units))
    return [(unit, _prepare(job, unit)) for unit in units]


def _finish_batch(job: Job, finished: list[tuple[Any, Any, Future]]) -> None:
    """Record finished calls together in one transaction when the job can (``finish_many``); a call that
    raised, or a batch that failed, is recorded unit by unit (``_finish``)."""
    answered = [(unit, prepared, future) for unit, prepared, future in finished if future.exception() is None]
    if len(answered) > 1 and hasattr(job, "finish_many"):
        try:
            with transaction.atomic():
                job.finish_many([(unit, prepared, future.result()) for unit, prepared, future in answered])
        except Exception:  # noqa: BLE001 - recorded again unit by unit below
            logger.exception("recording %d results together failed; recording them one by one", len(answered))
        else:
            finished = [entry for entry in finished if entry[2].exception() is not None]
    for unit, prepared, future in finished:
        _finish(job, unit, prepared, future)


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
