"""Recording judgments: validated, exactly once per assignment."""

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext

from ..allocation.state import arm_add
from ..models import Assignment, Enrollment, Item, Judgment, Rater, Study
from ..plainsql import fetch, for_update, insert, shape, table, update
from ..task_types import get_task_type
from .assignment import NextItem, candidate_keys, next_assignment
from .places import take_place


@dataclass(frozen=True)
class Submitted:
    judgment: Judgment
    created: bool  # False when the same assignment had already been judged (double submit)


def _candidate_keys(assignment: Assignment) -> list[str]:
    if get_task_type(assignment.study.task_type).candidates[1] == 0:
        return []  # the importer refuses candidates for this task type: nothing to query
    return candidate_keys(assignment.item)


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
    # Excluding a rater changes what reports read (annotation.study_changes); a rater already excluded
    # who fails another check only gets a new reason.
    fields = (
        ["excluded_reason", "ended_early"] if enrollment.excluded else ["excluded", "excluded_reason", "ended_early"]
    )
    enrollment.excluded = True
    enrollment.excluded_reason = f"failed {failures} attention check(s)"
    enrollment.ended_early = study.attention_check_policy == study.AttentionPolicy.END
    enrollment.save(update_fields=fields)


def _lock_person_rows(
    *, study_id: int, rater_id: int, assignment_id: int
) -> tuple[Enrollment | None, Assignment | None]:
    """Lock a person's enrollment in the study, then their assignment together with its item row.

    The order next_assignment locks in: the enrollment first (one request per
    rater at a time; it is written when a check fails), then the item, which
    next_assignment also locks before taking one of its places, so a late
    answer and a new lease cannot both take an item's last place. Another
    rater's request locks this assignment only with SKIP LOCKED (releasing an
    expired lease), so it never waits for it here. Both rows in one statement
    is safe: any other request that locks this assignment and something more
    holds the rater's enrollment first. Plain SQL (``plainsql``): it runs for
    every answer. The assignment is None when it is not the rater's in the study.
    """
    e, a, i = shape(Enrollment, "e"), shape(Assignment, "a"), shape(Item, "i")
    enrollment = fetch(
        f"SELECT {e.select} FROM {table(Enrollment)} e WHERE e.study_id = %s AND e.rater_id = %s{for_update()}",  # noqa: S608
        [study_id, rater_id],
        e,
    )
    found = fetch(
        f"SELECT {a.select}, {i.select} FROM {table(Assignment)} a JOIN {table(Item)} i ON i.id = a.item_id"  # noqa: S608
        f" WHERE a.id = %s AND a.study_id = %s AND a.rater_id = %s{for_update('a', 'i')}",
        [assignment_id, study_id, rater_id],
        a,
        i,
    )
    assignment = None
    if found is not None:
        assignment, assignment.item = found
    return (enrollment[0] if enrollment else None), assignment


def _lock_for_submit(assignment: Assignment, rater: Rater) -> Assignment:
    """Lock what a submission reads and writes: for a person ``_lock_person_rows``; a model judge is not
    bound by the quota and only needs its assignment."""
    if not rater.is_human:
        return Assignment.objects.select_for_update(of=("self",)).select_related("study", "item").get(pk=assignment.pk)
    _enrollment, locked = _lock_person_rows(
        study_id=assignment.study_id, rater_id=rater.pk, assignment_id=assignment.pk
    )
    if locked is None:
        raise Assignment.DoesNotExist("No such assignment.")
    locked.study = assignment.study
    return locked


def lock_for_answer(*, enrollment: Enrollment, assignment_id: int) -> tuple[Enrollment, Assignment]:
    """The annotator's answer: ``_lock_person_rows`` for a caller that stores the answer and leases the
    next item in one transaction (which it must be in).

    The enrollment comes back fresh, with the study and rater of the one given,
    and the assignment with its item and that study. ``Assignment.DoesNotExist``
    when the rater has no such assignment in the study.
    """
    locked, assignment = _lock_person_rows(
        study_id=enrollment.study_id, rater_id=enrollment.rater_id, assignment_id=assignment_id
    )
    if locked is None or assignment is None:
        raise Assignment.DoesNotExist("No such assignment.")
    locked.study, locked.rater = enrollment.study, enrollment.rater
    assignment.study = enrollment.study
    return locked, assignment


def _attention_passed(*, study: Study, item: Item, value: Any, status: str) -> bool | None:
    """Whether an answer to an attention check matches its gold; None for a regular item or no usable answer."""
    if not item.is_attention_check or status != Judgment.Status.OK:
        return None
    task_type = get_task_type(study.task_type)
    return task_type.matches_gold(value, item.gold, config=task_type.config(study.config))


def _place_for_answer(locked: Assignment, now: datetime) -> bool:
    """Whether a person's answer may be stored: its lease still holds a place, or a free one is taken now.

    A released lease gave its place back; the answer takes one again if the
    item has room. Attention checks are outside the quota.
    """
    if locked.state != Assignment.State.RELEASED or locked.item.is_attention_check:
        return True
    return take_place(locked.item, locked.study.quota_per_item, now)


def judgment_submit(
    *,
    assignment: Assignment,
    rater: Rater,
    value: Any,
    status: str = Judgment.Status.OK,
    provenance: dict[str, Any] | None = None,
    duration_ms: int | None = None,
    locks_held: bool = False,
) -> Submitted:
    """Store the one judgment of an assignment.

    A second submission for the same assignment (a double click, a resent
    form) returns the stored judgment unchanged. A person whose lease expired
    still holds its place until someone else's request releases it; after
    that, the answer is taken only while the item has a free place again.
    ``locks_held``: the caller's transaction already holds what ``lock_for_answer``
    locks, and ``assignment`` is the row it read.
    """
    if assignment.rater_id != rater.pk:
        raise PermissionDenied("This assignment belongs to another rater.")
    value = clean_value(assignment=assignment, value=value) if status == Judgment.Status.OK else None
    with transaction.atomic(savepoint=not locks_held):
        locked = assignment if locks_held else _lock_for_submit(assignment, rater)
        # Read the clock once the locks are held: a lease that ran out while
        # this request waited must count as expired.
        now = timezone.now()
        # An assignment is marked done in the transaction that stores its judgment (here and in
        # judgments_import), so only a done one can have one.
        if locked.state == Assignment.State.DONE:
            existing = Judgment.objects.filter(assignment=locked).first()
            if existing is not None:
                return Submitted(existing, created=False)
        study, item = locked.study, locked.item
        if rater.is_human:
            if not study.is_open:
                raise ValidationError(gettext("This study is closed."))
            if not _place_for_answer(locked, now):
                raise ValidationError(
                    gettext("This item was handed to someone else after a long pause; here is the next one.")
                )
        if duration_ms is None and locked.shown_at is not None:
            duration_ms = max(0, int((now - locked.shown_at).total_seconds() * 1000))
        attention_passed = _attention_passed(study=study, item=item, value=value, status=status)
        too_fast = (
            rater.is_human
            and duration_ms is not None
            and study.min_seconds_per_item > 0
            and duration_ms < study.min_seconds_per_item * 1000
        )
        # No second judgment can race this one: the assignment's row is locked and not done.
        judgment = insert(
            Judgment(
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
        )
        locked.state = Assignment.State.DONE
        update(Assignment, locked.pk, state=locked.state)
        if rater.is_human and status == Judgment.Status.OK:
            arm_add(study=study, item=item, value=value, candidate_keys=_candidate_keys(locked))
        if attention_passed is False:
            enrollment = Enrollment.objects.select_for_update().filter(study=study, rater=rater).first()
            if enrollment is not None:
                apply_attention_policy(enrollment)
    return Submitted(judgment, created=True)


def answer_and_next(*, enrollment: Enrollment, assignment_id: int, data: Any, lease_next: bool) -> NextItem | None:
    """A person's answer from the item form, stored, and with ``lease_next`` their next item leased
    (and marked shown), in one transaction: one commit per answer.

    Raises ``ValidationError`` (nothing written) for an answer the form or the item
    refuses, and ``Assignment.DoesNotExist`` for an assignment that is not the
    rater's in this study. A second submit of the same assignment stores nothing.
    The next item's reason is "busy" when only items another request holds are
    left: the caller asks again once this transaction has ended, free to wait.
    """
    with transaction.atomic():
        locked, assignment = lock_for_answer(enrollment=enrollment, assignment_id=assignment_id)
        value = value_from_form(assignment=assignment, data=data)
        submitted = judgment_submit(assignment=assignment, rater=locked.rater, value=value, locks_held=True)
        if not lease_next:
            return None
        if submitted.judgment.attention_passed is False:
            # The attention policy may just have ended the enrollment.
            locked.refresh_from_db(fields=["excluded", "excluded_reason", "ended_early"])
        return next_assignment(enrollment=locked, wait=False, locks_held=True, shown=True)


@dataclass(frozen=True)
class ModelAnswer:
    """One model judgment to store with ``judgments_submit_many``."""

    assignment: Assignment
    value: Any
    status: str = Judgment.Status.OK
    provenance: dict[str, Any] | None = None
    duration_ms: int | None = None


def judgments_submit_many(*, rater: Rater, answers: list[ModelAnswer]) -> set[int]:
    """Store many judgments of one model rater at once; the ids of the assignments judged now.

    For judge runs, where a judgment per transaction would make the database the bottleneck: in the
    caller's transaction, without savepoints, the assignments already judged are left as they are
    (as ``judgment_submit`` does) and the rest inserted in one statement. A model is not bound by a
    quota, so nothing is locked: a judgment written meanwhile by another worker makes the insert
    fail on the one-judgment-per-assignment constraint (IntegrityError), for the caller to record
    its batch one by one. Values are validated first; an invalid one raises before anything is written.
    """
    if rater.is_human:
        raise PermissionDenied("A person's answers are submitted one by one.")
    if not answers:
        return set()
    if any(answer.assignment.rater_id != rater.pk for answer in answers):
        raise PermissionDenied("An assignment belongs to another rater.")
    values = [
        clean_value(assignment=a.assignment, value=a.value) if a.status == Judgment.Status.OK else None for a in answers
    ]
    with transaction.atomic(savepoint=False):
        ids = sorted({a.assignment.pk for a in answers})
        judged = set(Judgment.objects.filter(assignment_id__in=ids).values_list("assignment_id", flat=True))
        rows, new = [], set()
        for answer, value in zip(answers, values, strict=True):
            assignment = answer.assignment
            if assignment.pk in judged or assignment.pk in new:
                continue
            new.add(assignment.pk)
            item, study = assignment.item, assignment.study
            attention_passed = _attention_passed(study=study, item=item, value=value, status=answer.status)
            rows.append(
                Judgment(
                    assignment=assignment,
                    study_id=assignment.study_id,
                    item_id=assignment.item_id,
                    rater=rater,
                    status=answer.status,
                    value=value,
                    shown_order=assignment.shown_order,
                    duration_ms=answer.duration_ms,
                    attention_passed=attention_passed,
                    provenance=answer.provenance or {},
                )
            )
        Judgment.objects.bulk_create(rows)
        Assignment.objects.filter(pk__in=new).update(state=Assignment.State.DONE)
    return new


def _spent_before(provenance: dict[str, Any]) -> dict[str, float]:
    """The tokens and cost of the attempt in ``provenance`` plus those of the attempts before it.

    Pops the earlier sum from ``provenance``, which is then kept as the attempt's own record.
    """
    before = provenance.pop("earlier_usage", None) or {}
    tokens = provenance.get("tokens") if isinstance(provenance.get("tokens"), dict) else {}

    def number(value: Any) -> float:
        try:
            return float(value or 0)
        except (TypeError, ValueError):
            return 0.0

    return {
        "prompt": int(number(before.get("prompt")) + number(tokens.get("prompt"))),
        "completion": int(number(before.get("completion")) + number(tokens.get("completion"))),
        "cost": round(number(before.get("cost")) + number(provenance.get("cost")), 8),
    }


def judgment_retry(
    *,
    assignment: Assignment,
    rater: Rater,
    value: Any,
    status: str = Judgment.Status.OK,
    provenance: dict[str, Any] | None = None,
    duration_ms: int | None = None,
) -> Submitted:
    """Record a new attempt at a model's judgment that failed or was unparseable.

    The attempt it replaces is kept, whole, at the end of ``provenance["earlier_attempts"]`` (oldest
    first), with its status, value, time and provenance: a retry adds to the record, never erases it.
    What the earlier attempts spent is summed in ``provenance["earlier_usage"]`` (tokens and cost), so
    a judge's usage counts every call it paid for, not only the last.
    The judgment's ``created_at`` becomes the new attempt's time, so anything computed from the
    judgments before it can tell it is out of date. A judgment that is ok is left as it is
    (``created=False``); with none yet, this is ``judgment_submit``.
    """
    if assignment.rater_id != rater.pk:
        raise PermissionDenied("This assignment belongs to another rater.")
    if rater.is_human:
        raise PermissionDenied("Only a model's judgments are retried; a person's answer stands.")
    value = clean_value(assignment=assignment, value=value) if status == Judgment.Status.OK else None
    with transaction.atomic():
        existing = Judgment.objects.select_for_update().filter(assignment_id=assignment.pk).first()
        if existing is None:
            return judgment_submit(
                assignment=assignment,
                rater=rater,
                value=value,
                status=status,
                provenance=provenance,
                duration_ms=duration_ms,
            )
        if existing.status == Judgment.Status.OK:
            return Submitted(existing, created=False)
        earlier = list(existing.provenance.pop("earlier_attempts", []))
        spent = _spent_before(existing.provenance)
        earlier.append(
            {
                "status": existing.status,
                "value": existing.value,
                "created_at": existing.created_at.isoformat(),
                "duration_ms": existing.duration_ms,
                "provenance": existing.provenance,
            }
        )
        existing.status = status
        existing.value = value
        existing.duration_ms = duration_ms
        existing.provenance = {**(provenance or {}), "earlier_attempts": earlier, "earlier_usage": spent}
        existing.created_at = timezone.now()
        existing.save(update_fields=["status", "value", "duration_ms", "provenance", "created_at"])
    return Submitted(existing, created=True)
