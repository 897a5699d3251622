"""SemEval-2020 Task 7: headlines made funny by a one-word edit, then graded 0–3 by five people.

Two templates. In the editing study an editor sees a headline with one token
marked (``<token/>``) and types the word to put in its place. In the grading
study each edited headline is an item (the original headline as its prompt,
the edited one as its text) graded 0 Not · 1 Slightly · 2 Moderately · 3 Funny
by five graders; its grade is the mean of the five. Two edits of the same
headline form the "which is funnier" pairs of the report.

The grading importer reads rows shaped like the published data (``id``,
``original`` with the token marked, ``edit``, and the grades as one string of
digits ``32100`` or as columns ``grade1``…``grade5``, optionally ``meanGrade``);
each digit becomes one imported judgment. :func:`grading_items_from_edits`
turns a finished editing study's answers into items of a grading study.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import ValidationError
from django.utils.translation import gettext_noop

from ..models import Judgment, Rater, Study
from ..services.imported_judgments import ImportedJudgment
from ..services.studies import ImportErrors, ItemSpec, items_create
from ..task_types.free_text import MARKED_TOKEN, ONE_WORD, MicroEdit, apply_edit, marked_token
from .base import ImportPlan, StudyTemplate, register_template
from .tables import Row, Table

PROTOCOL = "semeval2020t7"
EDITING = f"{PROTOCOL}-editing"
GRADING = f"{PROTOCOL}-grading"

GRADES = {
    "points": [0, 1, 2, 3],
    "labels": [
        gettext_noop("Not funny"),
        gettext_noop("Slightly funny"),
        gettext_noop("Moderately funny"),
        gettext_noop("Funny"),
    ],
}
GRADERS_PER_ITEM = 5
# The report's preset: the tails and bins of the task's extra analyses.
ANALYSES = {"tail_percents": [10, 20, 30, 40], "grade_bin_width": 0.2, "graders_per_item": GRADERS_PER_ITEM}
GRADE_COLUMNS = [f"grade{n}" for n in range(1, 10)]
GRADE_TEXT = re.compile(r"^[0-9]+$")
MEAN_TOLERANCE = 0.051  # the published meanGrade is rounded to one decimal

EDITING_CONSENT = (
    "You are invited to take part in a study on what makes news headlines funny. You will be shown "
    "real or realistic headlines and asked to change one marked word so that the headline becomes "
    "funny. Please keep your edits free of slurs and personal attacks. We record only your edits and "
    "when you gave them; you can stop at any time without giving a reason."
)
EDITING_INSTRUCTIONS = (
    "Each headline has one word or name marked. Think of a single word that, put in its place, turns "
    "the headline into something funny, and type it. Use exactly one word (no spaces), different from "
    "the marked one; the rest of the headline stays as it is. Funny beats shocking: an edit that only "
    "makes the headline offensive is not what we are after."
)
GRADING_CONSENT = (
    "You are invited to take part in a study on humour in news headlines. You will read headlines in "
    "which one word was changed and say how funny each changed headline is. Some headlines mention "
    "real people and events. We record only your grades and when you gave them; you can stop at any "
    "time without giving a reason."
)
GRADING_INSTRUCTIONS = (
    "You will see the original headline and, below it, the same headline with one word replaced. "
    "Grade how funny the edited headline is: 0 Not funny, 1 Slightly funny, 2 Moderately funny, "
    "3 Funny (keys 0-3). Grade the edited headline as a reader of the news would, whether or not the "
    "topic appeals to you. Now and then a check item tells you which grade to give; please follow it."
)

EDITING_COLUMNS = "id, original (the headline with the replaceable token marked as <token/>)"
GRADING_COLUMNS = (
    "id, original (headline with the replaced token marked as <token/>), edit (the new word), "
    "grades (one digit per grader, e.g. 32100) or grade1..grade5, optional meanGrade, optional headline_id"
)


# -- rows ---------------------------------------------------------------------------------------


@dataclass
class EditedHeadline:
    """One row of the grading file, checked: the item it makes and the grades it holds."""

    item: ItemSpec
    grades: list[int]


def _headline_problems(row: Row, original: str) -> tuple[str, list[str]]:
    if not original:
        return "", [f"{row.where}: the original headline is empty."]
    try:
        return marked_token(original), []
    except ValidationError:
        found = len(MARKED_TOKEN.findall(original))
        return "", [f"{row.where}: the original headline must mark exactly one token as <token/>; it marks {found}."]


def _grades(row: Row, table: Table, study: Study) -> tuple[list[int], list[str]]:
    """The row's grades from ``grades`` ("32100") or ``grade1``…; problems named by row."""
    if "grades" in table.columns and row.text("grades"):
        raw = row.cells.get("grades")
        text = row.text("grades")
        if isinstance(raw, (int, float)) and not isinstance(raw, bool):
            # A number (a JSON number, a spreadsheet's number cell) has no leading zeros: 1223 may be four grades
            # or "01223" with a zero lost. Only a number with one digit per grader is unambiguous; guessing the
            # rest would invent grades.
            text = str(int(raw)) if float(raw).is_integer() else str(raw)
            if GRADE_TEXT.match(text) and len(text) != study.quota_per_item:
                return [], [
                    f"{row.where}: grades is the number {text}, not text: {len(text)} digit(s) where "
                    f"{study.quota_per_item} graders are expected, so leading zero grades may have been lost. "
                    f'Write grades as text ("0{text}" if a zero was lost) or use the columns grade1…grade5.'
                ]
        if not GRADE_TEXT.match(text):
            return [], [f"{row.where}: grades {text!r} must be digits, one per grader (e.g. 32100)."]
        digits = [int(d) for d in text]
    else:
        digits, problems = [], []
        for column in GRADE_COLUMNS:
            if column not in table.columns or not row.text(column):
                continue
            try:
                value = float(row.text(column))
            except ValueError:
                value = float("nan")
            if not value.is_integer():
                problems.append(f"{row.where}: {column} {row.text(column)!r} is not a whole number.")
                continue
            digits.append(int(value))
        if problems:
            return [], problems
    points = GRADES["points"]
    bad = sorted({d for d in digits if d not in points})
    if bad:
        return [], [f"{row.where}: grade(s) {', '.join(map(str, bad))} outside the scale 0-3."]
    return digits, []


def _mean_problem(row: Row, grades: list[int]) -> str:
    text = row.text("meangrade")
    if not text:
        return ""
    try:
        published = float(text)
    except ValueError:
        return f"{row.where}: meanGrade {text!r} is not a number."
    if not grades:
        return f"{row.where}: meanGrade is given but no grades are."
    mean = sum(grades) / len(grades)
    if abs(mean - published) > MEAN_TOLERANCE:
        return f"{row.where}: meanGrade {published:g} does not match the grades, whose mean is {mean:.2f}."
    return ""


def _edited_headline(row: Row, table: Table, study: Study, seen: dict[str, str]) -> tuple[EditedHeadline, list[str]]:
    item_id, original, edit = row.text("id"), row.text("original"), row.text("edit")
    token, problems = _headline_problems(row, original)
    if not item_id:
        problems.append(f"{row.where}: the id is empty.")
    elif item_id in seen:
        problems.append(f"{row.where}: the id {item_id!r} is used twice ({seen[item_id]} has it too).")
    else:
        seen[item_id] = row.where
    if not edit:
        problems.append(f"{row.where}: the edit (the new word) is empty.")
    elif not ONE_WORD.match(edit):
        problems.append(f"{row.where}: the edit {edit!r} must be one word, without spaces or angle brackets.")
    elif token and edit.casefold() == token.strip().casefold():
        problems.append(f"{row.where}: the edit {edit!r} is the replaced token itself.")
    grades, grade_problems = _grades(row, table, study)
    problems.extend(grade_problems)
    if len(grades) > study.quota_per_item:
        problems.append(
            f"{row.where}: {len(grades)} grades, but the study asks for {study.quota_per_item} per headline."
        )
    if not grade_problems and (mean := _mean_problem(row, grades)):
        problems.append(mean)
    plain = apply_edit(original, token) if token else original
    metadata: dict[str, Any] = {
        "headline_id": row.text("headline_id") or plain,
        "original_word": token,
        "replacement": edit,
    }
    if row.text("meangrade"):
        metadata["published_mean_grade"] = row.text("meangrade")
    spec = ItemSpec(
        external_id=item_id,
        prompt=plain,
        text=apply_edit(original, edit) if token and edit else original,
        metadata=metadata,
        row=row.where,
    )
    return EditedHeadline(item=spec, grades=grades), problems


# -- importers ----------------------------------------------------------------------------------


def import_headlines(table: Table, study: Study) -> ImportPlan:
    """Editing study: one item per headline, its replaceable token marked."""
    table.require("id", "original")
    problems: list[str] = []
    seen: dict[str, str] = {}
    items = []
    for row in table.rows:
        item_id, original = row.text("id"), row.text("original")
        _token, row_problems = _headline_problems(row, original)
        if not item_id:
            row_problems.append(f"{row.where}: the id is empty.")
        elif item_id in seen:
            row_problems.append(f"{row.where}: the id {item_id!r} is used twice ({seen[item_id]} has it too).")
        else:
            seen[item_id] = row.where
        problems.extend(row_problems)
        items.append(ItemSpec(external_id=item_id, text=original, row=row.where))
    if problems:
        raise ImportErrors(problems)
    return ImportPlan(items=items)


def grader_name(position: int) -> str:
    # The published data lists each headline's five grades without saying who gave them.
    return f"grader {position}"


def import_graded_edits(table: Table, study: Study) -> ImportPlan:
    """Grading study: one item per edited headline, and one judgment per grade given."""
    table.require("id", "original", "edit")
    problems: list[str] = []
    seen: dict[str, str] = {}
    plan = ImportPlan()
    for row in table.rows:
        edited, row_problems = _edited_headline(row, table, study, seen)
        problems.extend(row_problems)
        plan.items.append(edited.item)
        plan.judgments.extend(
            ImportedJudgment(
                rater=grader_name(n),
                item=edited.item.external_id,
                value={"rating": grade},
                kind=Rater.Kind.CROWD,
                row=row.where,
            )
            for n, grade in enumerate(edited.grades, start=1)
        )
    if problems:
        raise ImportErrors(problems)
    return ImportPlan(items=plan.items, judgments=plan.judgments)


# -- editing study → grading study --------------------------------------------------------------


def grading_items_from_edits(*, editing: Study, grading: Study, actor: AbstractBaseUser | None = None) -> int:
    """Add every edit the editing study collected as an item of the grading study; returns how many.

    Each distinct word written for a headline becomes one edited headline (two
    editors who typed the same word give one item). Edits already in the
    grading study are left alone, so this can run again as more edits arrive.
    """
    if editing.protocol != EDITING or editing.task_type != MicroEdit.name:
        raise ValidationError("The edits must come from a SemEval-2020 Task 7 editing study.")
    if grading.protocol != GRADING:
        raise ValidationError("The edited headlines must go to a SemEval-2020 Task 7 grading study.")
    existing = set(grading.items.values_list("external_id", flat=True))
    answers = (
        Judgment.objects.filter(
            study=editing,
            status=Judgment.Status.OK,
            item__is_attention_check=False,
            rater__kind__in=[Rater.Kind.EXPERT, Rater.Kind.CROWD],
        )
        .exclude(attention_passed=False)
        .select_related("item")
        .order_by("item__position", "pk")
    )
    specs: list[ItemSpec] = []
    for answer in answers:
        headline, word = answer.item, str(answer.value.get("replacement", "")).strip()
        external_id = f"{headline.external_id}:{word.casefold()}"
        if not word or external_id in existing:
            continue
        existing.add(external_id)
        token = marked_token(headline.text)
        specs.append(
            ItemSpec(
                external_id=external_id,
                prompt=apply_edit(headline.text, token),
                text=apply_edit(headline.text, word),
                metadata={
                    "headline_id": headline.external_id,
                    "original_word": token,
                    "replacement": word,
                    "editor_rater_id": answer.rater_id,
                },
                row=f"edit {word!r} of headline {headline.external_id}",
            )
        )
    if not specs:
        return 0
    return items_create(study=grading, items=specs, actor=actor)


# -- templates ----------------------------------------------------------------------------------

register_template(
    StudyTemplate(
        key=EDITING,
        protocol=PROTOCOL,
        title="SemEval-2020 Task 7 — make a headline funny with one word",
        description=(
            "Editors see a news headline with one token marked and type a single replacement word that "
            "makes it funny. Their edits become the items of the grading study."
        ),
        task_type="micro_edit",
        config={"max_length": 30},
        settings={
            "quota_per_item": 3,
            "item_order": Study.ItemOrder.RANDOM_PER_RATER,
            "attention_check_rate": 0.0,
            "consent_text": EDITING_CONSENT,
            "instructions_text": EDITING_INSTRUCTIONS,
        },
        analyses={"edits_per_headline": 3},
        importer=import_headlines,
        columns=EDITING_COLUMNS,
    )
)

register_template(
    StudyTemplate(
        key=GRADING,
        protocol=PROTOCOL,
        title="SemEval-2020 Task 7 — grade edited headlines 0–3",
        description=(
            "Five graders rate each edited headline 0 Not funny to 3 Funny; its grade is the mean of the "
            "five. Judges are scored on predicting the mean grade (RMSE) and on telling which of two edits "
            "of one headline is funnier (accuracy, reward)."
        ),
        task_type="ordinal",
        config=GRADES,
        settings={
            "quota_per_item": GRADERS_PER_ITEM,
            "item_order": Study.ItemOrder.RANDOM_PER_RATER,
            "attention_check_rate": 0.05,
            "attention_check_policy": Study.AttentionPolicy.FLAG,
            "attention_check_max_failures": 2,
            "consent_text": GRADING_CONSENT,
            "instructions_text": GRADING_INSTRUCTIONS,
        },
        analyses=ANALYSES,
        importer=import_graded_edits,
        item_parts={"prompt": gettext_noop("Original headline"), "text": gettext_noop("Edited headline")},
        marks_edit=True,
        judge_template="edited-headline-grade",
        columns=GRADING_COLUMNS,
    )
)
