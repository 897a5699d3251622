"""Item files as items: the table reader's rows (CSV, XLSX) and lines (JSON Lines) turned into RowResults.

Reading, decoding and every limit live in ``annotation.tables``; this module
only maps a row to an item. Problems with one row are attached to that row so
every problem in the file is reported at once; a problem with the file as a
whole (undecodable bytes, no ``id`` column, not an XLSX file, a zip bomb)
raises ``FileProblem``.
"""

from collections.abc import Iterator
from typing import IO

from .. import tables
from ..task_types import TaskType
from .items import Columns, FileProblem, RowResult, item_from_cells, item_from_object

detect_format = tables.detect_format


def _rows_from_table(rows: Iterator[tables.TableRow], *, task_type: TaskType) -> Iterator[RowResult]:
    header, rows = tables.split_header(rows)
    if header is None:
        raise FileProblem("The file is empty; the first row must name the columns (at least 'id').")
    if header.problems:
        yield RowResult(where=f"Row {header.number}", spec=None, errors=[str(p) for p in header.problems])
    columns = Columns.from_header(header.values)
    for row in rows:
        result = item_from_cells(row.values, columns=columns, where=f"Row {row.number}", task_type=task_type)
        result.errors[:0] = [str(p) for p in row.problems]
        yield result


def _items_from_lines(stream: IO[bytes], *, task_type: TaskType) -> Iterator[RowResult]:
    for line in tables.read_json_lines(stream):
        where = f"Line {line.number}"
        if line.error is not None:
            yield RowResult(where=where, spec=None, errors=[f"{where}: {line.error}"])
        else:
            yield item_from_object(line.value, where=where, task_type=task_type)


def read_rows(stream: IO[bytes], *, fmt: str, task_type: TaskType) -> Iterator[RowResult]:
    """Every row or line of an item file as a RowResult, read as a stream (the file is opened once)."""
    if fmt == tables.JSONL:
        return _items_from_lines(stream, task_type=task_type)
    return _rows_from_table(tables.read_rows(stream, fmt=fmt), task_type=task_type)
