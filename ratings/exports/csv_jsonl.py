# SPDX-License-Identifier: GPL-3.0-or-later
"""Flat exports of the long-format rows (``long_rows``): CSV for spreadsheets, raw CSV, JSON Lines.

* ``csv``: for opening in a spreadsheet. Text that a spreadsheet would run as
  a formula gets a leading apostrophe (``safe_cells.csv_safe``); JSON columns
  are JSON text.
* ``csv_raw``: for pandas, R and any other analysis tool. Every value exactly
  as stored, no apostrophes; otherwise the same columns and cells as ``csv``.
* ``jsonl``: one JSON object per judgment, JSON columns as nested JSON.

Each is written from a server-side cursor, row by row, so memory does not grow
with the study; ``stream_*`` give the same text as an iterator for a streaming
HTTP response.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Callable, Iterable, Iterator
from typing import IO, Any

from annotation.models import Study

from .long_rows import COLUMNS, JSON_COLUMNS, Cells, judgment_rows
from .safe_cells import csv_safe
from .study_data import CHUNK, load_study

__all__ = [
    "COLUMNS",
    "JSON_COLUMNS",
    "stream_csv",
    "stream_csv_raw",
    "stream_jsonl",
    "write_csv",
    "write_csv_raw",
    "write_jsonl",
]

Progress = Callable[[int], None]
# Rows handed to the csv module at once (writerows is a loop in C).
BATCH = 1000


def _json_text(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def _flag_text(value: bool | None) -> str:
    return "" if value is None else ("true" if value else "false")


def _text(value: Any) -> Any:
    """A single value as a CSV cell: JSON for objects and lists, true/false for flags."""
    if isinstance(value, bool):
        return _flag_text(value)
    if isinstance(value, dict | list):
        return _json_text(value)
    return value


def _safe_text(value: Any) -> Any:
    return csv_safe(_text(value))


SPREADSHEET_CELLS = Cells(
    scalar=_safe_text,
    json=lambda value: csv_safe(_json_text(value)),
    flag=_flag_text,
    when=lambda moment: moment.isoformat(),
    none="",
)
RAW_CELLS = Cells(scalar=_text, json=_json_text, flag=_flag_text, when=lambda moment: moment.isoformat(), none="")
JSONL_CELLS = Cells(
    scalar=lambda value: value, json=lambda value: value, flag=lambda value: value, when=lambda m: m.isoformat()
)


def _batches(rows: Iterator[tuple]) -> Iterator[list[tuple]]:
    batch: list[tuple] = []
    for row in rows:
        batch.append(row)
        if len(batch) == BATCH:
            yield batch
            batch = []
    if batch:
        yield batch


def _write_csv(cells: Cells, study: Study, out: IO[str], rater_subset: Iterable[int], progress: Progress | None) -> int:
    data = load_study(study, rater_subset=rater_subset)
    writer = csv.writer(out)
    writer.writerow(COLUMNS)
    n = 0
    for batch in _batches(judgment_rows(data, cells)):
        writer.writerows(batch)
        n += len(batch)
        if progress is not None and n % CHUNK == 0:
            progress(n)
    if progress is not None:
        progress(n)
    return n


def write_csv(study: Study, out: IO[str], *, rater_subset: Iterable[int] = (), progress: Progress | None = None) -> int:
    """Write the spreadsheet-safe long-format CSV to a text stream; return the number of judgments written."""
    return _write_csv(SPREADSHEET_CELLS, study, out, rater_subset, progress)


def write_csv_raw(
    study: Study, out: IO[str], *, rater_subset: Iterable[int] = (), progress: Progress | None = None
) -> int:
    """Write the analysis-grade CSV (values exactly as stored) to a text stream; return the rows written."""
    return _write_csv(RAW_CELLS, study, out, rater_subset, progress)


def _jsonl_lines(study: Study, rater_subset: Iterable[int]) -> Iterator[str]:
    data = load_study(study, rater_subset=rater_subset)
    dumps = json.JSONEncoder(ensure_ascii=False).encode
    for row in judgment_rows(data, JSONL_CELLS):
        yield dumps(dict(zip(COLUMNS, row, strict=True))) + "\n"


def write_jsonl(
    study: Study, out: IO[str], *, rater_subset: Iterable[int] = (), progress: Progress | None = None
) -> int:
    """Write one JSON object per judgment and line; return the number written."""
    n = 0
    for line in _jsonl_lines(study, rater_subset):
        out.write(line)
        n += 1
        if progress is not None and n % CHUNK == 0:
            progress(n)
    if progress is not None:
        progress(n)
    return n


class _Echo:
    """A file-like object whose write returns what it was given, for streaming CSV rows."""

    def write(self, value: str) -> str:
        return value


def _stream_csv(cells: Cells, study: Study, rater_subset: Iterable[int]) -> Iterator[str]:
    data = load_study(study, rater_subset=rater_subset)
    writer = csv.writer(_Echo())
    yield writer.writerow(COLUMNS)
    for batch in _batches(judgment_rows(data, cells)):
        yield "".join(writer.writerow(row) for row in batch)


def stream_csv(study: Study, *, rater_subset: Iterable[int] = ()) -> Iterator[str]:
    """The spreadsheet-safe CSV as an iterator of text, for a streaming HTTP response."""
    return _stream_csv(SPREADSHEET_CELLS, study, rater_subset)


def stream_csv_raw(study: Study, *, rater_subset: Iterable[int] = ()) -> Iterator[str]:
    """The analysis-grade CSV as an iterator of text."""
    return _stream_csv(RAW_CELLS, study, rater_subset)


def stream_jsonl(study: Study, *, rater_subset: Iterable[int] = ()) -> Iterator[str]:
    return _jsonl_lines(study, rater_subset)
