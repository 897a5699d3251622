"""Judgments collected elsewhere (a published data set, a spreadsheet of expert ratings) stored as ours.

An imported judgment has the same shape as one given in the annotator: a rater
(named as in the file, kind expert or crowd), an assignment marked done, and a
judgment whose value the study's task type validated. Imported raters are
scoped to their study (``external_id`` = ``import:<study slug>:<name>``), so two
files that both call a rater "R1" never merge two people. Everything is checked
first and written in one transaction: one bad row writes nothing.
"""

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from ..allocation.state import arms_recount, study_policy
from ..models import Assignment, Enrollment, Item, Judgment, Rater, Study
from ..task_types import get_task_type
from .judgments import apply_attention_policy
from .places import places_add
from .studies import ImportErrors

IMPORTED_KINDS = (Rater.Kind.EXPERT, Rater.Kind.CROWD)


@dataclass
class ImportedJudgment:
    """One answer as a file gave it; ``row`` names where it came from for messages."""

    rater: str
    item: str  # the item's external id
    value: Any
    kind: str = Rater.Kind.EXPERT
    shown_order: list[str] = field(default_factory=list)
    trial: int = 0
    provenance: dict[str, Any] = field(default_factory=dict)
    row: str = ""


def imported_rater_id(study: Study, name: str) -> str:
    return f"import:{study.slug}:{name}"


def _check(study: Study, rows: list[ImportedJudgment], items: dict[str, Item]) -> tuple[list[str], list[Any]]:
    task_type = get_task_type(study.task_type)
    config = task_type.config(study.config)
    problems: list[str] = []
    cleaned: list[Any] = []
    seen: dict[tuple[str, str, int], str] = {}
    for row in rows:
        where = row.row or f"{row.rater} on {row.item}"
        value = None
        if not row.rater.strip():
            problems.append(f"{where}: the rater has no name.")
        if row.kind not in IMPORTED_KINDS:
            problems.append(f"{where}: an imported rater is an expert or a crowdworker, not {row.kind!r}.")
        item = items.get(row.item)
        if item is None:
            problems.append(f"{where}: there is no item {row.item!r} in this study.")
        else:
            keys = [c.key for c in item.candidates.all()]
            if row.shown_order and sorted(row.shown_order) != sorted(keys):
                problems.append(f"{where}: the shown order {row.shown_order} does not list the item's candidates.")
            try:
                value = task_type.validate(row.value, candidate_keys=keys, config=config, item_text=item.text)
            except ValidationError as exc:
                problems.extend(f"{where}: {m}" for m in exc.messages)
        key = (row.rater, row.item, row.trial)
        if key in seen:
            problems.append(f"{where}: {row.rater!r} already judged {row.item!r} ({seen[key]}).")
        else:
            seen[key] = where
        cleaned.append(value)
    return problems, cleaned


def judgments_import(*, study: Study, judgments: Iterable[ImportedJudgment]) -> int:
    """Store answers given outside the platform; returns how many were written.

    A rater who already judged an item in this study (from an earlier import)
    is a row error, never a silent overwrite.
    """
    rows = list(judgments)
    if not rows:
        return 0
    with transaction.atomic():
        items = {item.external_id: item for item in study.items.prefetch_related("candidates")}
        problems, values = _check(study, rows, items)
        raters = _raters(study, {(r.rater, r.kind) for r in rows if r.rater.strip()}, problems)
        if not problems:
            existing = set(
                Assignment.objects.filter(study=study, rater__in=raters.values()).values_list(
                    "rater_id", "item_id", "trial"
                )
            )
            for row in rows:
                rater = raters[row.rater]
                if (rater.pk, items[row.item].pk, row.trial) in existing:
                    problems.append(f"{row.row or row.rater}: {row.rater!r} already has an answer for {row.item!r}.")
        if problems:
            raise ImportErrors(problems)
        now = timezone.now()
        Enrollment.objects.bulk_create(
            [
                Enrollment(study=study, rater=rater, consented_at=now, instructed_at=now, completed_at=now)
                for rater in raters.values()
            ],
            ignore_conflicts=True,
        )
        assignments = Assignment.objects.bulk_create(
            Assignment(
                study=study,
                item=items[row.item],
                rater=raters[row.rater],
                trial=row.trial,
                sequence=n,
                state=Assignment.State.DONE,
                shown_order=row.shown_order,
                leased_at=now,
                lease_expires_at=now,
            )
            for n, row in enumerate(rows)
        )
        places_add(assignments)
        passed = [_attention(study, a.item, v) for a, v in zip(assignments, values, strict=True)]
        Judgment.objects.bulk_create(
            Judgment(
                assignment=assignment,
                study=study,
                item=assignment.item,
                rater=assignment.rater,
                value=value,
                shown_order=row.shown_order,
                provenance={"imported": True, **row.provenance},
                attention_passed=attention,
            )
            for assignment, row, value, attention in zip(assignments, rows, values, passed, strict=True)
        )
        # Imported answers to attention checks count as answers given here: the study's
        # policy flags (excludes) a rater who failed more than it allows.
        failed = {a.rater_id for a, attention in zip(assignments, passed, strict=True) if attention is False}
        for enrollment in Enrollment.objects.filter(study=study, rater_id__in=failed).select_related("study"):
            apply_attention_policy(enrollment)
        if study_policy(study) is not None:
            # An adaptive study's per-item state counts the imported answers too (annotation/allocation).
            arms_recount(study=study)
    return len(rows)


def _attention(study: Study, item: Item, value: Any) -> bool | None:
    if not item.is_attention_check:
        return None
    task_type = get_task_type(study.task_type)
    return task_type.matches_gold(value, item.gold, config=task_type.config(study.config))


def _raters(study: Study, wanted: set[tuple[str, str]], problems: list[str]) -> dict[str, Rater]:
    kinds: dict[str, str] = {}
    for name, kind in wanted:
        if kinds.setdefault(name, kind) != kind:
            problems.append(f"Rater {name!r} is listed both as an expert and as a crowdworker.")
    raters: dict[str, Rater] = {}
    for name, kind in kinds.items():
        if kind not in IMPORTED_KINDS:
            continue
        rater, _ = Rater.objects.get_or_create(
            kind=kind, external_id=imported_rater_id(study, name), defaults={"name": name}
        )
        raters[name] = rater
    return raters
