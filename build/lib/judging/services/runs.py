"""Judge runs: create one, work it (in a Celery task), cancel it, resume it.

A run has one unit per (item, trial) — two in both-orders mode, the second
showing the pair in the opposite order. Each unit maps onto the judge's
assignment for that item and trial, so the judgment is stored at most once
however often a unit is retried, resumed, or repeated by a later run of the
same judge on the same study (that run finds the judgment and calls nothing).
The B/A order of trial t is assignment trial ``SWAPPED_TRIAL_OFFSET + t``.
"""

import logging
import time
from collections.abc import Iterable

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models.functions import Coalesce
from django.utils import timezone

from annotation.models import SWAPPED_TRIAL_OFFSET, Assignment, Item, Judgment, Study
from annotation.services.assignment import assignment_for_judge
from annotation.task_types import Level, get_task_type

from ..keys import ApiKeyUnavailable, redact
from ..models import ACTIVE_RUN_STATES, JudgeConfig, JudgeRun, JudgeUnit, RunStatus, Tournament
from ..outbound import OutboundRefused
from ..runner import (
    DriveResult,
    cancel_run,
    drive,
    end_run_if_finished,
    resume_run,
    run_heartbeat,
    run_take,
    worker_token,
)
from .templates import judge_template

logger = logging.getLogger(__name__)

CANCEL_CHECK_SECONDS = 0.5


def _enqueue(run_id: int) -> None:
    from ..tasks import judge_run_task

    transaction.on_commit(lambda: judge_run_task.delay(run_id))


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
) -> JudgeRun:
    """A queued run of ``judge`` over the study's items (all but attention checks, unless ``items`` is given)."""
    trials = judge.trials if trials is None else trials
    if not 1 <= trials <= SWAPPED_TRIAL_OFFSET - 1:
        raise ValidationError("Trials must be at least 1.")
    both_orders = judge.both_orders if both_orders is None else both_orders
    if both_orders and get_task_type(study.task_type).level != Level.PAIRWISE:
        raise ValidationError("Both-orders mode is for pairwise studies.")
    template = (
        None if judge.is_baseline else judge_template(judge=judge, task_type=study.task_type, protocol=study.protocol)
    )
    item_list = list(items) if items is not None else list(study.items.filter(is_attention_check=False))
    if not item_list:
        raise ValidationError("The study has no items to judge.")
    if any(item.study_id != study.pk for item in item_list):
        raise ValidationError("Every item must belong to the study.")
    with transaction.atomic():
        run = JudgeRun.objects.create(
            study=study,
            judge=judge,
            template=template,
            trials=trials,
            both_orders=both_orders,
            created_by=created_by,
            tournament=tournament,
        )
        JudgeUnit.objects.bulk_create(
            JudgeUnit(run=run, item=item, trial=trial, swapped=swapped)
            for item in item_list
            for trial in range(trials)
            for swapped in ((False, True) if both_orders else (False,))
        )
        if enqueue:
            _enqueue(run.pk)
    return run


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


def _mark_started(run_id: int, token: str) -> bool:
    return run_take(JudgeRun, pk=run_id, token=token, started_at=Coalesce("started_at", timezone.now()))


def run_fail(*, run_id: int, error: str, secrets: tuple[str, ...] = ()) -> None:
    JudgeRun.objects.filter(pk=run_id).exclude(status=RunStatus.CANCELLED).update(
        status=RunStatus.FAILED, error=redact(error, *secrets)[:2000], finished_at=timezone.now()
    )


def process_run(*, run_id: int, token: str | None = None, sleep=time.sleep) -> DriveResult:
    """Work a run to the end (or until cancelled). Safe to call from several workers at once."""
    from .judging_job import JudgeJob

    token = token or worker_token()
    if not _mark_started(run_id, token):
        return DriveResult()
    run = JudgeRun.objects.select_related("study", "judge__rater", "template").get(pk=run_id)
    try:
        job = JudgeJob(run, sleep=sleep)
    except (ApiKeyUnavailable, OutboundRefused, ValidationError) as exc:
        run_fail(run_id=run_id, error=str(exc))
        return DriveResult()
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
        with run_heartbeat(JudgeRun, pk=run_id, token=token):
            result = drive(job, run_id=run_id, is_cancelled=is_cancelled, token=token)
    finally:
        job.close()
    if not result.cancelled:
        end_run_if_finished(JudgeRun, JudgeUnit, run_id)
    return result
