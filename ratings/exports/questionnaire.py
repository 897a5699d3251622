# SPDX-License-Identifier: GPL-3.0-or-later
"""The raters' questionnaire answers and qualification results, long (a row per answer) and wide (a row per rater).

The questions are the study's (``annotation.rater_steps.study_questions``);
the answers are ``QuestionAnswer`` rows of counted raters' enrollments. Both
files are CSV meant for pandas, R or a spreadsheet: a text answer a
spreadsheet would read as a formula gets a leading apostrophe
(``safe_cells.csv_safe``), numbers stay numbers. Answers to qualification and
practice items are not here: they are not data of the study.
"""

from __future__ import annotations

import csv
from collections.abc import Callable, Iterable, Iterator
from typing import IO, Any

from annotation.models import HUMAN_KINDS, Enrollment, QualificationResult, QuestionAnswer
from annotation.privacy import study_pseudonyms
from annotation.rater_steps import study_questions

from .safe_cells import csv_safe

RATER_COLUMNS = ["study", "rater_id", "rater_kind", "rater_pseudonym", "rater_excluded", "screened_out"]
LONG_COLUMNS = [*RATER_COLUMNS, "phase", "question", "question_kind", "answer", "answer_label"]
QUALIFICATION_COLUMNS = ["qualification", "qualification_correct", "qualification_total", "qualification_passed"]


def _flag(value: bool | None) -> str:
    return "" if value is None else ("true" if value else "false")


def _cell(value: Any) -> Any:
    return "" if value is None else csv_safe(value)


def _enrollments(study, rater_subset: Iterable[int]) -> list[dict[str, Any]]:
    # People only (judges answer no questionnaire); a researcher's preview is not a kind of person here.
    found = Enrollment.objects.filter(study=study, rater__kind__in=HUMAN_KINDS)
    subset = sorted({int(pk) for pk in rater_subset})
    if subset:
        found = found.filter(rater_id__in=subset)
    rows = list(found.order_by("rater_id").values("pk", "rater_id", "rater__kind", "excluded", "screened_out_at"))
    # The participant's keyed pseudonym, as in every export (annotation.privacy), never their platform id.
    aliases = study_pseudonyms(study, [row["rater_id"] for row in rows])
    for row in rows:
        row["pseudonym"] = aliases[row["rater_id"]]
    return rows


def _rater_cells(study, e: dict[str, Any]) -> list[Any]:
    return [
        study.slug,
        e["rater_id"],
        e["rater__kind"],
        e["pseudonym"],
        _flag(e["excluded"]),
        _flag(e["screened_out_at"] is not None),
    ]


def _answers(enrollments: list[dict[str, Any]]) -> dict[int, dict[str, Any]]:
    by_enrollment: dict[int, dict[str, Any]] = {}
    rows = QuestionAnswer.objects.filter(enrollment_id__in=[e["pk"] for e in enrollments]).values_list(
        "enrollment_id", "key", "value"
    )
    for enrollment_id, key, value in rows.iterator(chunk_size=2000):
        by_enrollment.setdefault(enrollment_id, {})[key] = value
    return by_enrollment


def long_rows(study, *, rater_subset: Iterable[int] = ()) -> Iterator[list[Any]]:
    """One row per rater and question asked (an optional question left empty has an empty answer)."""
    questions = study_questions(study)
    enrollments = _enrollments(study, rater_subset)
    answers = _answers(enrollments)
    for e in enrollments:
        given = answers.get(e["pk"])
        if not given:
            continue
        for q in questions:
            if q.key not in given:
                continue
            value = given[q.key]
            label = q.label_of(value) if q.kind == "choice" else ""
            yield [*_rater_cells(study, e), q.phase, q.key, q.kind, _cell(value), _cell(label)]


def wide_columns(study) -> list[str]:
    return [*RATER_COLUMNS, *QUALIFICATION_COLUMNS, *(q.key for q in study_questions(study))]


def wide_rows(study, *, rater_subset: Iterable[int] = ()) -> Iterator[list[Any]]:
    """One row per enrolled rater: their qualification result (if the study has one), then a column per question."""
    questions = study_questions(study)
    enrollments = _enrollments(study, rater_subset)
    answers = _answers(enrollments)
    results: dict[int, QualificationResult] = {}
    if study.qualification_id is not None:
        found = QualificationResult.objects.filter(
            qualification_id=study.qualification_id, rater_id__in=[e["rater_id"] for e in enrollments]
        )
        results = {r.rater_id: r for r in found}
    name = study.qualification.name if study.qualification_id is not None else ""
    for e in enrollments:
        result = results.get(e["rater_id"])
        qualification = (
            [csv_safe(name), result.correct, result.total, _flag(result.passed)] if result else ["", "", "", ""]
        )
        given = answers.get(e["pk"], {})
        yield [*_rater_cells(study, e), *qualification, *(_cell(given.get(q.key)) for q in questions)]


Progress = Callable[[int], None]


def _write(header: list[str], rows: Iterator[list[Any]], out: IO[str], progress: Progress | None) -> int:
    writer = csv.writer(out)
    writer.writerow(header)
    n = 0
    for row in rows:
        writer.writerow(row)
        n += 1
    if progress is not None:
        progress(n)
    return n


class _Echo:
    def write(self, value: str) -> str:
        return value


def _stream(header: list[str], rows: Iterator[list[Any]]) -> Iterator[str]:
    writer = csv.writer(_Echo())
    yield writer.writerow(header)
    for row in rows:
        yield writer.writerow(row)


def write_long(study, out: IO[str], *, rater_subset: Iterable[int] = (), progress: Progress | None = None) -> int:
    return _write(LONG_COLUMNS, long_rows(study, rater_subset=rater_subset), out, progress)


def stream_long(study, *, rater_subset: Iterable[int] = ()) -> Iterator[str]:
    return _stream(LONG_COLUMNS, long_rows(study, rater_subset=rater_subset))


def write_wide(study, out: IO[str], *, rater_subset: Iterable[int] = (), progress: Progress | None = None) -> int:
    return _write(wide_columns(study), wide_rows(study, rater_subset=rater_subset), out, progress)


def stream_wide(study, *, rater_subset: Iterable[int] = ()) -> Iterator[str]:
    return _stream(wide_columns(study), wide_rows(study, rater_subset=rater_subset))
