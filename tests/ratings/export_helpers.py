"""Building judged studies for the export tests."""

from __future__ import annotations

from typing import Any

from django.utils import timezone

from annotation.models import Assignment, Item, Judgment, Rater
from annotation.services.assignment import next_assignment
from annotation.services.enrollment import enroll_crowdworker
from annotation.services.judgments import judgment_submit


def rate_as_crowd(study, answers: dict[str, dict[str, Any]]) -> dict[str, Rater]:
    """Each participant answers the items they are handed with the value given for that item id."""
    raters = {}
    for participant, by_item in answers.items():
        enrollment = enroll_crowdworker(study=study, participant_id=participant)
        raters[participant] = enrollment.rater
        while (nxt := next_assignment(enrollment=enrollment)).assignment:
            value = by_item[nxt.assignment.item.external_id]
            judgment_submit(assignment=nxt.assignment, rater=enrollment.rater, value=value, duration_ms=4000)
    return raters


def judge_directly(
    study, rater: Rater, item: Item, *, value, status="ok", provenance=None, trial=0, attention_passed=None
) -> Judgment:
    """An LLM judge's judgment written the way a judging run stores it."""
    now = timezone.now()
    keys = list(item.candidates.order_by("position").values_list("key", flat=True))
    assignment = Assignment.objects.create(
        study=study,
        item=item,
        rater=rater,
        trial=trial,
        state=Assignment.State.DONE,
        shown_order=keys,
        leased_at=now,
        lease_expires_at=now,
    )
    return Judgment.objects.create(
        assignment=assignment,
        study=study,
        item=item,
        rater=rater,
        status=status,
        value=value,
        shown_order=keys,
        duration_ms=1200,
        provenance=provenance or {},
        attention_passed=attention_passed,
    )


def include_export_urls(base: list) -> list:
    """The project's URLs plus the export URLs, unless the project already includes them."""
    from django.urls import include, path

    if any(getattr(p, "namespace", None) == "exports" for p in base):
        return list(base)
    return [*base, path("exports/", include("ratings.export_urls"))]
