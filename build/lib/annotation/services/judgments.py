"""Recording judgments: validated, exactly once per assignment."""

from dataclasses import dataclass
from typing import Any

from django.core.exceptions import PermissionDenied, ValidationError
from django.db import IntegrityError, transaction
from django.utils import timezone

from ..models import Assignment, Enrollment, Judgment, Rater
from ..task_types import get_task_type
from .assignment import item_holders


@dataclass(frozen=True)
class Submitted:
    judgment: Judgment
    created: bool  # False when the same assignment had already been judged (double submit)


def _candidate_keys(assignment: Assignment) -> list[str]:
    return list(assignment.item.candidates.order_by("position", "id").values_list("key", flat=True))


def clean_value(*, assignment: Assignment, value: Any) -> Any:
    """Validate a raw value against the study's task type and this item."""
    study = assignment.study
    task_type = get_task_type(study.task_type)
    return task_type.validate(
        value,
        candidate_keys=_candidate_keys(assignment),
        config=task_type.config(study.config),
        item_text=assignment.item.text,
    )


def value_from_form(*, assignment: Assignment, data: Any) -> Any:
    study = assignment.study
    task_type = get_task_type(study.task_type)
    return task_type.value_from_form(data, shown_order=assignment.shown_order, config=task_type.config(study.config))


def apply_attention_policy(enrollment: Enrollment) -> None:
    study = enrollment.study
    failures = Judgment.objects.filter(study=study, rater=enrollment.rater, attention_passed=False).count()
    if failures <= study.attention_check_max_failures:
        return
    enrollment.excluded = True
    enrollment.excluded_reason = f"failed {failures} attention check(s)"
    enrollment.ended_early = study.attention_check_policy == study.AttentionPolicy.END
    enrollment.save(update_fields=["excluded", "excluded_reason", "ended_early"])


def _lock_for_submit(assignment: Assignment, rater: Rater) -> Assignment:
    """Lock what a submission reads and writes, in next_assignment's order.

    For a person: their enrollment first (one request per rater at a time; it
    is written when a check fails), then the assignment together with its item
    row, which next_assignment also locks before counting an item's holders, so
    a late answer and a new lease cannot both take an item's last place. Both
    rows in one statement is safe: any other request that locks this
    assignment and something more holds the rater's enrollment first. A model
    judge is not bound by the quota and only needs its assignment.
    """
    rows = ("self",)
    if rater.is_human:
        Enrollment.objects.select_for_update().filter(study_id=assignment.study_id, rater=rater).first()
        rows = ("self", "item")
    return Assignment.objects.select_for_update(of=rows).select_related("study", "item").get(pk=assignment.pk)


def judgment_submit(
    *,
    assignment: Assignment,
    rater: Rater,
    value: Any,
    status: str = Judgment.Status.OK,
    provenance: dict[str, Any] | None = None,
    duration_ms: int | None = None,
) -> Submitted:
    """Store the one judgment of an assignment.

    A second submission for the same assignment (a double click, a resent
    form) returns the stored judgment unchanged. A human whose lease expired
    may still submit while the item has room under its quota.
    """
    if assignment.rater_id != rater.pk:
        raise PermissionDenied("This assignment belongs to another rater.")
    value = clean_value(assignment=assignment, value=value) if status == Judgment.Status.OK else None
    with transaction.atomic():
        locked = _lock_for_submit(assignment, rater)
        # Read the clock once the locks are held: a lease that ran out while
        # this request waited must count as expired.
        now = timezone.now()
        existing = Judgment.objects.filter(assignment=locked).first()
        if existing is not None:
            return Submitted(existing, created=False)
        study, item = locked.study, locked.item
        if rater.is_human:
            if not study.is_open:
                raise ValidationError("This study is closed.")
            expired = locked.state != Assignment.State.LEASED or locked.lease_expires_at <= now
            if (
                expired
                and not item.is_attention_check
                and item_holders(item.pk, now, exclude_id=locked.pk) >= study.quota_per_item
            ):
                raise ValidationError("This item was handed to someone else after a long pause; here is the next one.")
        if duration_ms is None and locked.shown_at is not None:
            duration_ms = max(0, int((now - locked.shown_at).total_seconds() * 1000))
        attention_passed = None
        if item.is_attention_check and status == Judgment.Status.OK:
            task_type = get_task_type(study.task_type)
            attention_passed = task_type.matches_gold(value, item.gold, config=task_type.config(study.config))
        too_fast = (
            rater.is_human
            and duration_ms is not None
            and study.min_seconds_per_item > 0
            and duration_ms < study.min_seconds_per_item * 1000
        )
        try:
            with transaction.atomic():
                judgment = Judgment.objects.create(
                    assignment=locked,
                    study=study,
                    item=item,
                    rater=rater,
                    status=status,
                    value=value,
                    shown_order=locked.shown_order,
                    duration_ms=duration_ms,
                    too_fast=too_fast,
                    attention_passed=attention_passed,
                    provenance=provenance or {},
                )
        except IntegrityError:
            return Submitted(Judgment.objects.get(assignment=locked), created=False)
        locked.state = Assignment.State.DONE
        locked.save(update_fields=["state"])
        if attention_passed is False:
            enrollment = Enrollment.objects.select_for_update().filter(study=study, rater=rater).first()
            if enrollment is not None:
                apply_attention_policy(enrollment)
    return Submitted(judgment, created=True)
