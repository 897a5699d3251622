# SPDX-License-Identifier: GPL-3.0-or-later
"""One XLSX workbook per study, written in openpyxl's write-only mode.

The human judgments are read once, item by item, in database chunks; while
they stream past, the "Ratings" rows are written, each rater's counts are
kept, and each item's figures are computed. Memory therefore grows with the
number of items and raters (and, for the agreement statistics, with an items ×
raters matrix that is skipped above ``MAX_MATRIX_CELLS``), not with the number
of judgments.

Sheets, always all of them (a sheet without data says so in one line):
Metadata, Items (JEST "Dataset A"), Ratings (JEST "Dataset B"), Rater stats,
Raters, LLM judgments, Agreement, Rankings.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from typing import IO, Any

import numpy as np
from openpyxl import Workbook
from openpyxl.styles import Font

from annotation.models import Candidate, Item, Study
from annotation.task_types import MATRIX_LEVELS, Level

from .item_figures import CandidateRef, figures_for
from .judge_sheets import Matches, write_llm_judgments, write_rankings
from .safe_cells import xlsx_cell, xlsx_row
from .study_data import CHUNK, StudyData, human_judgments, load_study
from .summary_sheets import write_agreement, write_metadata, write_raters

SHEETS = ("Metadata", "Items", "Ratings", "Rater stats", "Raters", "LLM judgments", "Agreement", "Rankings")
# Excel's column limit, less the item columns.
MAX_RATER_COLUMNS = 16_384 - 3
# Above this many items × raters cells the agreement statistics are left out (float64: 8 bytes a cell).
MAX_MATRIX_CELLS = 20_000_000
BOLD = Font(bold=True)

Progress = Callable[[int], None]


def write_workbook(
    study: Study,
    target: str | IO[bytes],
    *,
    rater_subset: Iterable[int] = (),
    progress: Progress | None = None,
) -> int:
    """Write the study's workbook to a path or binary file; return the number of judgments read."""
    data = load_study(study, rater_subset=rater_subset)
    wb = Workbook(write_only=True)
    sheets = {name: wb.create_sheet(name) for name in SHEETS}
    for name, widths in (("Items", {"A": 7, "B": 16, "C": 30, "D": 50}), ("Ratings", {"A": 16, "B": 30, "C": 50})):
        for column, width in widths.items():
            sheets[name].column_dimensions[column].width = width

    counter = _ProgressCounter(progress)
    pass_result = _human_pass(data, sheets["Ratings"], counter)
    _write_items(data, sheets["Items"], pass_result.figures)
    _write_rater_stats(data, sheets["Rater stats"], pass_result.per_rater)
    write_raters(data, sheets["Raters"])
    judge_matches = write_llm_judgments(data, sheets["LLM judgments"], counter)
    write_agreement(data, sheets["Agreement"], pass_result.matrix, pass_result.matrix_note)
    write_rankings(data, sheets["Rankings"], pass_result.matches, judge_matches)
    write_metadata(data, sheets["Metadata"], judgments_read=counter.rows, sort_note=pass_result.figures.sort_note)
    wb.save(target)
    counter.flush()
    return counter.rows


class _ProgressCounter:
    """Counts judgments read and reports progress every chunk."""

    def __init__(self, progress: Progress | None):
        self.progress = progress
        self.rows = 0
        self._reported = 0

    def add(self, n: int = 1) -> None:
        self.rows += n
        if self.progress is not None and self.rows - self._reported >= CHUNK:
            self.flush()

    def flush(self) -> None:
        if self.progress is not None:
            self.progress(self.rows)
            self._reported = self.rows


class _PassResult:
    def __init__(self, figures, per_rater, matrix, matrix_note, matches):
        self.figures = figures
        self.per_rater = per_rater
        self.matrix = matrix
        self.matrix_note = matrix_note
        self.matches = matches


def _items_with_judgments(data: StudyData, counter: _ProgressCounter) -> Iterator[tuple[tuple, dict[int, Any]]]:
    """Each regular item (id, external id, prompt, text) with its human values by rater, in listed order."""
    items = (
        Item.objects.filter(study=data.study, is_attention_check=False)
        .order_by("position", "id")
        .values_list("pk", "external_id", "prompt", "text")
        .iterator(chunk_size=CHUNK)
    )
    judgments = human_judgments(data)
    pending = next(judgments, None)
    for item in items:
        values: dict[int, Any] = {}
        while pending is not None and pending[0] == item[0]:
            values[pending[1]] = pending[2]
            counter.add()
            pending = next(judgments, None)
        yield item, values


def _human_pass(data: StudyData, sheet, counter: _ProgressCounter) -> _PassResult:
    humans = data.humans
    consensus_ids = [r.pk for r in data.consensus_raters]
    included = [r.pk for r in data.included]
    column_of = {pk: i for i, pk in enumerate(included)}
    figures = figures_for(data)
    per_rater: dict[int, Counter] = {r.pk: Counter() for r in humans}
    # Written answers, votes and best–worst picks have no single number per judgment.
    text_level = data.level not in MATRIX_LEVELS

    matrix = None
    matrix_note = ""
    if text_level:
        matrix_note = (
            "Agreement statistics need ratings or labels; this task type collects "
            f"{data.task_type.title.lower()} answers (see the study's analysis page)."
        )
    elif len(included) < 2:
        matrix_note = "Agreement needs at least two included human raters."
    elif len(data.item_ids) * len(included) > MAX_MATRIX_CELLS:
        matrix_note = (
            f"{len(data.item_ids)} items × {len(included)} raters is too large a matrix for the workbook; "
            "compute agreement from the long-format CSV."
        )
    else:
        matrix = np.full((len(data.item_ids), len(included)), np.nan)

    wide = 0 < len(humans) <= MAX_RATER_COLUMNS
    if not humans:
        sheet.append(xlsx_row(sheet, ["No human raters have judged this study yet."]))
    elif not wide:
        sheet.append(
            xlsx_row(sheet, [f"{len(humans)} human raters are more than a sheet's columns; use the CSV export."])
        )
    else:
        sheet.append(xlsx_row(sheet, ["Item", "Prompt", "Text", *[r.label for r in humans]], font=BOLD))

    matches = Matches() if data.level == Level.PAIRWISE else None
    for row, ((item_id, external_id, prompt, text), values) in enumerate(_items_with_judgments(data, counter)):
        if wide:
            cells = [external_id, prompt, text, *[data.label(values.get(r.pk)) for r in humans]]
            sheet.append(xlsx_row(sheet, cells))
        for rater_id, value in values.items():
            if rater_id in per_rater:
                per_rater[rater_id][_rater_stat_key(data, item_id, value, text_level)] += 1
            if matrix is not None and rater_id in column_of:
                number = data.number(item_id, value)
                if number is not None:
                    matrix[row, column_of[rater_id]] = number
        chosen = [values[pk] for pk in consensus_ids if pk in values]
        figures.add(item_id, chosen)
        if matches is not None:
            matches.add_item(data, item_id, chosen)
    return _PassResult(figures, per_rater, matrix, matrix_note, matches)


def _rater_stat_key(data: StudyData, item_id: int, value: Any, text_level: bool) -> Any:
    if text_level:
        return "answer"
    return data.number(item_id, value)


def _write_items(data: StudyData, sheet, figures) -> None:
    header = ["Rank", "Item", "Prompt", "Text", *figures.columns]
    sheet.append(xlsx_row(sheet, header, font=BOLD))
    rows = figures.sorted_rows()
    if not data.item_ids:
        sheet.append(xlsx_row(sheet, ["This study has no items yet."]))
        return
    rank = 0
    while True:
        chunk = [row for _, row in zip(range(2000), rows, strict=False)]
        if not chunk:
            break
        ids = [item_id for item_id, _ in chunk]
        items = {
            pk: (external_id, prompt, text)
            for pk, external_id, prompt, text in Item.objects.filter(pk__in=ids).values_list(
                "pk", "external_id", "prompt", "text"
            )
        }
        texts = _candidate_texts(chunk)
        for item_id, cells in chunk:
            rank += 1
            resolved = [texts.get(c) if isinstance(c, CandidateRef) else c for c in cells]
            sheet.append(xlsx_row(sheet, [rank, *items[item_id], *resolved]))


def _candidate_texts(chunk: list[tuple[int, list[Any]]]) -> dict[CandidateRef, str]:
    refs = {c for _, cells in chunk for c in cells if isinstance(c, CandidateRef)}
    if not refs:
        return {}
    rows = Candidate.objects.filter(item_id__in={r.item_id for r in refs}).values_list("item_id", "key", "text")
    return {CandidateRef(item_id, key): text for item_id, key, text in rows}


def _write_rater_stats(data: StudyData, sheet, per_rater: dict[int, Counter]) -> None:
    humans = data.humans
    if not humans:
        sheet.append(xlsx_row(sheet, ["No human raters have judged this study yet."]))
        return
    numeric = data.level in MATRIX_LEVELS
    points: list[float] = []
    if numeric:
        seen = {k for counts in per_rater.values() for k in counts if k is not None}
        points = sorted(seen | set(data.scale_points()))
    header = ["Rater", "Kind", "Excluded", "In subset", "Judgments (n)"]
    if numeric:
        header += ["Mean", "SD", "Median", *[f"n at {_point_name(p)}" for p in points]]
    sheet.append(xlsx_row(sheet, header, font=BOLD))
    for rater in humans:
        counts = per_rater[rater.pk]
        n = sum(counts.values())
        subset = ("yes" if rater.in_subset else "no") if data.subset else None
        row: list[Any] = [rater.label, rater.kind, "yes" if rater.excluded else "no", subset, n]
        if numeric:
            row += [*_describe(counts), *[counts.get(p, 0) for p in points]]
        sheet.append(xlsx_row(sheet, row))
    if numeric and data.level != Level.ORDINAL:
        sheet.append([])
        sheet.append(xlsx_row(sheet, [_coding_note(data)]))


def _point_name(point: float) -> Any:
    return int(point) if float(point).is_integer() else point


def _coding_note(data: StudyData) -> str:
    return data.task_type.coding_note(data.config)


def _describe(counts: Counter) -> list[float | None]:
    """Mean, sample SD and median of a rater's values, from their counts."""
    values = np.repeat(
        np.array([k for k in counts if k is not None], dtype=float),
        [counts[k] for k in counts if k is not None],
    )
    if values.size == 0:
        return [None, None, None]
    sd = float(np.std(values, ddof=1)) if values.size >= 2 else None
    return [float(values.mean()), sd, float(np.median(values))]


__all__ = ["SHEETS", "write_workbook", "xlsx_cell"]
