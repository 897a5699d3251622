"""Judge runs: create one, work it (in a Celery task), cancel it, resume it.

A run has one unit per (item, trial) — two in both-orders mode, the second
showing the pair in the opposite order. Each unit maps onto the judge's
assignment for that item and trial, so the judgment is stored at most once
however often a unit is retried, resumed, or repeated by a later run of the
same judge on the same study (that run finds the judgment and calls nothing).
The B/A order of trial t is assignment trial ``SWAPPED_TRIAL_OFFSET + t``.
"""

import logging
import os
import time
from collections.abc import Callable, Iterable

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models.functions import Coalesce
from django.utils import timezone

from annotation.allocation import UNIFORM
from annotation.allocation.state import policy_problem
from annotation.job_tasks import Held, JobKind, job_kind_register, job_run
from annotation.jobs import Claim, Recovered, job_drive
from annotation.models import SWAPPED_TRIAL_OFFSET, Assignment, Item, Judgment, Study
from annotation.plainsql import insert_select
from annotation.services.assignment import assignment_for_judge
from annotation.task_types import Level, get_task_type

from ..keys import ApiKeyUnavailable, redact
from ..models import ACTIVE_RUN_STATES, JudgeConfig, JudgeRun, JudgeUnit, RunStatus, Tournament, UnitStatus
from ..outbound import OutboundRefused
from ..prompts.images import refuse_blind
from ..runner import (
    DriveResult,
    cancel_run,
    drive,
    end_run_if_finished,
    resume_run,
)
from ..webhooks import run_ended
from .adaptive_runs import first_wave_trials, run_next_wave
from .recovery import judge_runs_expiry, judge_runs_recover
from .templates import judge_template

logger = logging.getLogger(__name__)

CANCEL_CHECK_SECONDS = 0.5

#: Above this many items (or failed units, for a retry) a queued run's units are made by the worker,
#: before it asks anything, and the request returns at once: the database makes a million units in
#: 10-15 s (their indexes), which no page should wait for. Runs not queued (``enqueue=False``: tests,
#: ``manage.py judge --inline``) make them at once, whatever their size.
PREPARE_IN_WORKER_ABOVE = 20_000


#: A run with this many calls in flight is judged by every process of a prefork worker at once (``run_shares``):
#: one process's interpreter spends more CPU time per judgment than 64 calls of 200 ms leave it.
SHARE_FROM_CONCURRENCY = 48


def _enqueue(run_id: int) -> None:
    from ..tasks import judge_run_task

    transaction.on_commit(lambda: judge_run_task.delay(run_id))


def _enqueue_share(run_id: int) -> None:
    from ..tasks import judge_run_share_task

    transaction.on_commit(lambda: judge_run_share_task.delay(run_id))


def run_shares(*, concurrency: int) -> int:
    """Into how many shares a run with ``concurrency`` calls in flight splits: one per process of the worker
    running it (``funnybone.celery`` says how many) once it is wide enough to keep one process's CPU busy."""
    try:
        processes = int(os.environ.get("FUNNYBONE_WORKER_PROCESSES", "1"))
    except ValueError:
        processes = 1
    return max(1, processes) if concurrency >= SHARE_FROM_CONCURRENCY else 1


def run_create(
    *,
    study: Study,
    judge: JudgeConfig,
    trials: int | None = None,
    both_orders: bool | None = None,
    items: Iterable[Item] | None = None,
    created_by=None,
    tournament: Tournament | None = None,
    enqueue: bool = True,
    allocation_policy: str = UNIFORM,
) -> JudgeRun:
    """A queued run of ``judge`` over the study's items (all but attention checks, unless ``items`` is given).

    With an adaptive ``allocation_policy`` every item is asked one trial first, and further trials go
    in waves to the items the policy still needs (``adaptive_runs.run_next_wave``), up to ``trials``.

    Trials and both-orders are part of what produces a judge's answers: a run asking for others than
    the judge's own sets them on the judge (``judge_update``), which makes a new version of a judge
    that has run; the run is then the new version's. The run's judge is ``run.judge``."""
    from .judges import judge_update

    trials = judge.trials if trials is None else trials
    if not 1 <= trials <= SWAPPED_TRIAL_OFFSET - 1:
        raise ValidationError("Trials must be at least 1.")
    both_orders = judge.both_orders if both_orders is None else both_orders
    if both_orders and get_task_type(study.task_type).level != Level.PAIRWISE:
        raise ValidationError("Both-orders mode is for pairwise studies.")
    if allocation_policy != UNIFORM and (
        problem := policy_problem(task_type=study.task_type, config=study.config, policy=allocation_policy)
    ):
        raise ValidationError({"allocation_policy": [problem]})
    item_list = list(items) if items is not None else None
    if not (item_list if item_list is not None else _judged_items(study).exists()):
        raise ValidationError("The study has no items to judge.")
    if item_list is not None and any(item.study_id != study.pk for item in item_list):
        raise ValidationError("Every item must belong to the study.")
    if not judge.is_baseline:
        refuse_blind(study=study, sees_images=judge.sees_images, who=f"The judge {judge}", items=item_list)
    in_worker = enqueue and item_list is None and _judged_items(study)[PREPARE_IN_WORKER_ABOVE:].exists()
    with transaction.atomic():
        changes = {
            key: value
            for key, value in (("trials", trials), ("both_orders", both_orders))
            if getattr(judge, key) != value
        }
        if changes:
            judge = judge_update(judge=judge, **changes)
        template = (
            None
            if judge.is_baseline
            else judge_template(judge=judge, task_type=study.task_type, protocol=study.protocol)
        )
        run = JudgeRun.objects.create(
            study=study,
            judge=judge,
            template=template,
            trials=trials,
            both_orders=both_orders,
            created_by=created_by,
            tournament=tournament,
            preparing=in_worker,
            allocation_policy=allocation_policy,
        )
        orders = (False, True) if both_orders else (False,)
        if item_list is not None:
            JudgeUnit.objects.bulk_create(
                JudgeUnit(run=run, item=item, trial=trial, swapped=swapped)
                for item in item_list
                for trial in range(first_wave_trials(run))
                for swapped in orders
            )
        elif not in_worker:  # else process_run makes them (_prepare_units)
            _units_of_every_item(run, study=study, trials=first_wave_trials(run), orders=orders)
        if enqueue:
            _enqueue(run.pk)
    return run


def _judged_items(study: Study):
    """The items a run over the whole study judges: all but the attention checks."""
    return study.items.filter(is_attention_check=False)


def _prepare_units(run_id: int) -> None:
    """Make the units of a run queued with ``preparing`` (a run over a big study, or a big retry), once:
    the first worker's update takes the flag, a second one waits for its commit and finds nothing to do."""
    with transaction.atomic():
        if not JudgeRun.objects.filter(pk=run_id, preparing=True).update(preparing=False):
            return
        run = JudgeRun.objects.select_related("study", "retry_of").get(pk=run_id)
        if run.retry_of is not None:
            _copy_failed_units(run.retry_of, into=run)
        else:
            orders = (False, True) if run.both_orders else (False,)
            _units_of_every_item(run, study=run.study, trials=first_wave_trials(run), orders=orders)


def _units_of_every_item(run: JudgeRun, *, study: Study, trials: int, orders: tuple[bool, ...]) -> int:
    """The run's units over every judged item, made in the database in one statement (a million items
    never pass through Python), in the order ``bulk_create`` made them: by item position, trial, order."""
    items, item_params = _judged_items(study).order_by().values_list("id", "position").query.sql_with_params()
    trial_rows = " UNION ALL ".join(["SELECT %s AS trial"] * trials)
    order_rows = " UNION ALL ".join(["SELECT %s AS swapped"] * len(orders))
    select = (
        f"SELECT i.id AS item_id, t.trial, s.swapped, i.position FROM ({items}) i "  # noqa: S608 - no user text
        f"CROSS JOIN ({trial_rows}) t CROSS JOIN ({order_rows}) s"
    )
    return insert_select(
        JudgeUnit,
        select,
        [*item_params, *range(trials), *orders],
        columns=("item", "trial", "swapped"),
        values={"run": run.pk},
        order_by=("position", "item_id", "trial", "swapped"),
    )


def retryable_units(run: JudgeRun):
    """The run's units whose judgment is, as it stands now, failed or unparseable (or never written)."""
    finished = run.units.filter(status__in=[UnitStatus.DONE, UnitStatus.FAILED])
    return finished.exclude(assignment__judgment__status=Judgment.Status.OK)


def run_retry_failed(*, run: JudgeRun, created_by=None, enqueue: bool = True) -> JudgeRun:
    """A new run of the same judge version over the units of ``run`` that failed or were unparseable.

    It asks again with the version's settings as they are now (timeouts, retries, limits; what shapes
    an answer cannot have changed within a version) and records each new attempt over the failed
    judgment, the earlier attempts kept in its provenance (``annotation...judgment_retry``)."""
    if run.is_active:
        raise ValidationError("The run is still going; retry its failures once it has stopped.")
    judge = run.judge
    if not judge.is_baseline:
        refuse_blind(study=run.study, sees_images=judge.sees_images, who=f"The judge {judge}")
    template = (
        None
        if judge.is_baseline
        else judge_template(judge=judge, task_type=run.study.task_type, protocol=run.study.protocol)
    )
    in_worker = enqueue and retryable_units(run)[PREPARE_IN_WORKER_ABOVE:].exists()
    with transaction.atomic():
        retry = JudgeRun.objects.create(
            study=run.study,
            judge=judge,
            template=template,
            trials=run.trials,
            both_orders=run.both_orders,
            created_by=created_by,
            retry_of=run,
            preparing=in_worker,
        )
        if not in_worker and not _copy_failed_units(run, into=retry):
            raise ValidationError("Nothing to retry: every unit of this run has an answer.")
        if enqueue:
            _enqueue(retry.pk)
    return retry


def _copy_failed_units(run: JudgeRun, *, into: JudgeRun) -> int:
    """Copies of ``run``'s retryable units in ``into``, in one statement, in their order (item order)."""
    failed, params = (
        retryable_units(run).order_by().values_list("id", "item_id", "trial", "swapped").query.sql_with_params()
    )
    return insert_select(
        JudgeUnit, failed, params, columns=("item", "trial", "swapped"), values={"run": into.pk}, order_by=("id",)
    )


def run_cancel(*, run: JudgeRun) -> bool:
    """Stop handing out the run's units; calls in flight finish and are recorded. False if it had ended."""
    return cancel_run(run)


def run_resume(*, run: JudgeRun, enqueue: bool = True) -> JudgeRun:
    """Queue the run again: units not yet done (or held by a dead worker) are worked; done ones are kept."""
    return resume_run(run, unit_model=JudgeUnit, enqueue=_enqueue if enqueue else None)


def unit_assignment(*, unit: JudgeUnit, run: JudgeRun) -> Assignment:
    """The assignment a unit writes to; the swapped variant shows the base order reversed."""
    rater, item = run.judge.rater, unit.item
    base = assignment_for_judge(study=run.study, rater=rater, item=item, trial=unit.trial)
    if not unit.swapped:
        return base
    swapped = assignment_for_judge(study=run.study, rater=rater, item=item, trial=SWAPPED_TRIAL_OFFSET + unit.trial)
    wanted = list(reversed(base.shown_order))
    if swapped.shown_order != wanted and not Judgment.objects.filter(assignment=swapped).exists():
        Assignment.objects.filter(pk=swapped.pk).update(shown_order=wanted)
        swapped.shown_order = wanted
    return swapped


def run_fail(*, run_id: int, error: str, secrets: tuple[str, ...] = ()) -> None:
    failed = (
        JudgeRun.objects.filter(pk=run_id)
        .exclude(status=RunStatus.CANCELLED)
        .update(status=RunStatus.FAILED, error=redact(error, *secrets)[:2000], finished_at=timezone.now())
    )
    if failed:
        run_ended(JudgeRun, run_id)


def _share_claim(pk: int, token: str) -> Claim | None:
    """A share of a run another task drives: it works units while the run is active and leaves the run's
    heartbeat to that task (whose death recovery notices and re-queues, as for any run)."""
    return Claim(JudgeRun, pk, token) if JudgeRun.objects.filter(pk=pk, status=RunStatus.RUNNING).exists() else None


JUDGE_RUNS = job_kind_register(
    JobKind(
        name="judge runs",
        model=JudgeRun,
        what="The judge run",
        # Driven, not held: every worker that takes the run works its units; the first sets started_at.
        claim=lambda pk, token: job_drive(
            JudgeRun, pk=pk, token=token, started_at=Coalesce("started_at", timezone.now())
        ),
        fail=lambda pk, reason, token: run_fail(run_id=pk, error=reason),
        recover=judge_runs_recover,
        expiry=judge_runs_expiry,
        driven=True,
        outcome="the units judged so far are kept; Resume continues it.",
    )
)


# Registered with nothing of its own to recover: a run's recovery (JUDGE_RUNS) re-queues its one task, which
# queues its shares again.
JUDGE_RUN_SHARES = job_kind_register(
    JobKind(
        name="judge run shares",
        model=JudgeRun,
        what="The judge run",
        claim=_share_claim,
        fail=lambda pk, reason, token: run_fail(run_id=pk, error=reason),
        recover=Recovered,
        driven=True,
        outcome=JUDGE_RUNS.outcome,
    )
)


def process_run(*, run_id: int, token: str | None = None, sleep=time.sleep) -> DriveResult:
    """Work a run to the end (or until cancelled). Safe to call from several workers at once."""
    result = DriveResult()

    def work(held: Held) -> None:
        nonlocal result
        result = run_drive(held, sleep)

    job_run(JUDGE_RUNS, run_id, work, token=token)
    return result


def run_drive(held: Held, sleep: Callable[[float], None] = time.sleep, *, share: bool = False) -> DriveResult:
    """Work a claimed judge run: make its units if the worker is to, then judge them until none is left.

    A wide run (``run_shares``) queues a share task (``share``) for each other process of the worker; each
    share keeps its part of the judge's concurrency in flight and claims units as any driver does, under
    its own lease, so none is judged twice and a share that dies leaves its units to the others."""
    from .judging_job import JudgeJob

    run_id = held.pk
    _prepare_units(run_id)
    run = JudgeRun.objects.select_related("study", "judge__rater", "template").get(pk=run_id)
    try:
        job = JudgeJob(run, sleep=sleep)
    except (ApiKeyUnavailable, OutboundRefused, ValidationError) as exc:
        run_fail(run_id=run_id, error=str(exc))
        return DriveResult()
    shares = run_shares(concurrency=job.concurrency)
    if shares > 1:
        # The judge's limits hold the concurrency across the shares (judging.limits); this sizes each pool.
        job.concurrency = max(1, job.concurrency // shares)
        if not share:
            for _ in range(shares - 1):
                _enqueue_share(run_id)
    last_check = [0.0, False]

    def is_cancelled() -> bool:
        now = time.monotonic()
        if now - last_check[0] >= CANCEL_CHECK_SECONDS:
            last_check[0] = now
            last_check[1] = not JudgeRun.objects.filter(pk=run_id, status__in=ACTIVE_RUN_STATES).exists()
            if last_check[1]:
                job.stop.set()
        return last_check[1]

    try:
        result = drive(job, run_id=run_id, is_cancelled=is_cancelled, token=held.token)
        # An adaptive run: once a wave is judged, the policy names the items that need more trials.
        while not share and not result.cancelled and run_next_wave(run):
            result = drive(job, run_id=run_id, is_cancelled=is_cancelled, token=held.token)
    finally:
        job.close()
    # The run's own task ends it (a share that ended it could beat the next wave of an adaptive run).
    if not share and not result.cancelled:
        end_run_if_finished(JudgeRun, JudgeUnit, run_id)
    return result
