# SPDX-License-Identifier: GPL-3.0-or-later
"""Long-format exports: one row (CSV) or one object (JSON Lines) per judgment.

Every judgment of the study is written, human or model, usable or not, on
regular items and attention checks, with what is needed to analyse it
elsewhere: the item, the rater, the value (JSON text in CSV), its numeric
coding, the order candidates were shown in, timing and flags, and the
provenance of the candidate(s) the value chose. CSV text is made inert for
spreadsheets (see ``safe_cells``); JSON Lines keeps values exactly as stored.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Callable, Iterable, Iterator
from typing import IO, Any

from annotation.models import Judgment, Study, counted_raters, trial_as_set

from .safe_cells import csv_safe, scrub_provenance
from .study_data import CHUNK, StudyData, load_study

COLUMNS = [
    "study",
    "judgment_id",
    "item",
    "item_is_attention_check",
    "rater_id",
    "rater_kind",
    "rater_external_id",
    "rater_name",
    "rater_excluded",
    "trial",
    "status",
    "value",
    "value_label",
    "numeric",
    "chosen_candidates",
    "chosen_candidate_provenance",
    "shown_order",
    "duration_ms",
    "too_fast",
    "attention_passed",
    "created_at",
    "provenance",
]
JSON_COLUMNS = ("value", "chosen_candidates", "chosen_candidate_provenance", "shown_order", "provenance")

Progress = Callable[[int], None]


def judgment_records(data: StudyData) -> Iterator[dict[str, Any]]:
    """Each judgment of the study as a flat record, item by item."""
    rows = (
        Judgment.objects.filter(counted_raters(), study=data.study)
        .order_by("item__position", "item_id", "rater_id", "assignment__trial", "id")
        .values_list(
            "pk",
            "item_id",
            "item__external_id",
            "item__is_attention_check",
            "rater_id",
            "assignment__trial",
            "status",
            "value",
            "shown_order",
            "duration_ms",
            "too_fast",
            "attention_passed",
            "created_at",
            "provenance",
        )
    )
    slug = data.study.slug
    for (
        pk,
        item_id,
        external_id,
        is_check,
        rater_id,
        trial,
        status,
        value,
        shown_order,
        duration_ms,
        too_fast,
        attention_passed,
        created_at,
        provenance,
    ) in rows.iterator(chunk_size=CHUNK):
        rater = data.raters[rater_id]
        chosen = data.chosen_keys(value)
        yield {
            "study": slug,
            "judgment_id": pk,
            "item": external_id,
            "item_is_attention_check": is_check,
            "rater_id": rater_id,
            "rater_kind": rater.kind,
            "rater_external_id": rater.external_id,
            "rater_name": rater.name,
            "rater_excluded": rater.excluded,
            "trial": trial_as_set(trial),
            "status": status,
            "value": value,
            "value_label": data.label(value) if value is not None else None,
            "numeric": data.number(item_id, value) if status == Judgment.Status.OK else None,
            "chosen_candidates": chosen,
            "chosen_candidate_provenance": {k: data.candidate_provenance.get((item_id, k), {}) for k in chosen},
            "shown_order": shown_order,
            "duration_ms": duration_ms,
            "too_fast": too_fast,
            "attention_passed": attention_passed,
            "created_at": created_at.isoformat(),
            "provenance": scrub_provenance(provenance),
        }


def _csv_cell(name: str, value: Any) -> Any:
    if value is None:
        return ""
    if name in JSON_COLUMNS:
        return csv_safe(json.dumps(value, ensure_ascii=False, sort_keys=True))
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict | list):
        return csv_safe(json.dumps(value, ensure_ascii=False, sort_keys=True))
    return csv_safe(value)


def _tick(progress: Progress | None, n: int) -> None:
    if progress is not None and n % CHUNK == 0:
        progress(n)


def write_csv(study: Study, out: IO[str], *, rater_subset: Iterable[int] = (), progress: Progress | None = None) -> int:
    """Write the long-format CSV to a text stream; return the number of judgments written."""
    data = load_study(study, rater_subset=rater_subset)
    writer = csv.writer(out)
    writer.writerow(COLUMNS)
    n = 0
    for record in judgment_records(data):
        writer.writerow([_csv_cell(name, record[name]) for name in COLUMNS])
        n += 1
        _tick(progress, n)
    if progress is not None:
        progress(n)
    return n


def write_jsonl(
    study: Study, out: IO[str], *, rater_subset: Iterable[int] = (), progress: Progress | None = None
) -> int:
    """Write one JSON object per judgment and line; return the number written."""
    data = load_study(study, rater_subset=rater_subset)
    n = 0
    for record in judgment_records(data):
        out.write(json.dumps(record, ensure_ascii=False))
        out.write("\n")
        n += 1
        _tick(progress, n)
    if progress is not None:
        progress(n)
    return n


class _Echo:
    """A file-like object whose write returns what it was given, for streaming CSV rows."""

    def write(self, value: str) -> str:
        return value


def stream_csv(study: Study, *, rater_subset: Iterable[int] = ()) -> Iterator[str]:
    """The CSV as an iterator of lines, for a streaming HTTP response."""
    data = load_study(study, rater_subset=rater_subset)
    writer = csv.writer(_Echo())
    yield writer.writerow(COLUMNS)
    for record in judgment_records(data):
        yield writer.writerow([_csv_cell(name, record[name]) for name in COLUMNS])


def stream_jsonl(study: Study, *, rater_subset: Iterable[int] = ()) -> Iterator[str]:
    data = load_study(study, rater_subset=rater_subset)
    for record in judgment_records(data):
        yield json.dumps(record, ensure_ascii=False) + "\n"
