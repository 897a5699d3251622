"""A protocol's data file as a table of named columns: CSV, XLSX (first sheet) or JSON Lines.

Protocol importers read columns by name (``setup``, ``response``, ``rater``...),
so the header is normalised (trimmed, lower-case, spaces to underscores) and
every row keeps where it came from for messages. Decoding problems and
unreadable files are reported as the item importers report them.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from ..importers.cells import cell_text
from ..importers.files import check_size
from ..importers.items import FileProblem
from ..importers.readers import decode_utf8, detect_format, open_workbook, sniff_delimiter
from ..models import ItemImport


@dataclass
class Row:
    where: str
    cells: dict[str, Any]

    def text(self, column: str) -> str:
        """The cell as trimmed text ("" when absent or empty)."""
        value = self.cells.get(column)
        return "" if value is None else cell_text(value).strip()


@dataclass
class Table:
    columns: list[str]
    rows: list[Row] = field(default_factory=list)
    # Each column's header as the file wrote it (a wide sheet's rater names keep their case).
    headers: dict[str, str] = field(default_factory=dict)

    def header(self, column: str) -> str:
        return self.headers.get(column, column)

    def require(self, *names: str) -> None:
        missing = [n for n in names if n not in self.columns]
        if missing:
            found = ", ".join(self.columns) or "none"
            raise FileProblem(f"The file needs the column(s) {', '.join(missing)}; its columns are: {found}.")


def _written(name: Any) -> str:
    return " ".join(cell_text(name).split())


def normalise(name: Any) -> str:
    return "_".join(cell_text(name).strip().lower().split()) if name is not None else ""


def _from_cells(numbered: Iterator[tuple[int, list]]) -> Table:
    for _number, header in numbered:
        if any(cell_text(c).strip() for c in header if c is not None):
            columns = [normalise(c) for c in header]
            break
    else:
        raise FileProblem("The file is empty; the first row must name the columns.")
    named = [c for c in columns if c]
    duplicates = sorted({c for c in named if named.count(c) > 1})
    if duplicates:
        raise FileProblem(f"The header names these columns twice: {', '.join(duplicates)}.")
    table = Table(columns=named, headers={normalise(c): _written(c) for c in header if normalise(c)})
    for number, cells in numbered:
        if not any(c is not None and cell_text(c).strip() for c in cells):
            continue
        values = {col: cells[i] if i < len(cells) else None for i, col in enumerate(columns) if col}
        table.rows.append(Row(where=f"Row {number}", cells=values))
    return table


def _csv(data: bytes) -> Table:
    text = decode_utf8(data)
    csv.field_size_limit(max(csv.field_size_limit(), len(data) + 1))
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=sniff_delimiter(text))
    try:
        rows = list(enumerate(reader, start=1))
    except csv.Error as exc:
        raise FileProblem(f"Line {reader.line_num}: the file is not valid CSV ({exc}).") from None
    return _from_cells(iter(rows))


def _xlsx(data: bytes) -> Table:
    book = open_workbook(data, data_only=True)
    try:
        if not book.worksheets:
            raise FileProblem("The workbook has no sheets.")
        rows = [(n, list(r)) for n, r in enumerate(book.worksheets[0].iter_rows(values_only=True), start=1)]
    finally:
        book.close()
    return _from_cells(iter(rows))


def _jsonl(data: bytes) -> Table:
    text = decode_utf8(data)
    rows: list[Row] = []
    columns: list[str] = []
    headers: dict[str, str] = {}
    problems: list[str] = []
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            problems.append(f"Line {number}: not valid JSON ({exc.msg} at column {exc.colno}).")
            continue
        if not isinstance(obj, dict):
            problems.append(f"Line {number}: each line must be one JSON object.")
            continue
        cells = {normalise(k): v for k, v in obj.items()}
        for key in obj:
            headers.setdefault(normalise(key), _written(key))
        columns.extend(c for c in cells if c not in columns)
        rows.append(Row(where=f"Line {number}", cells=cells))
    if problems:
        raise FileProblem(problems)
    if not rows:
        raise FileProblem("The file holds no rows.")
    return Table(columns=columns, rows=rows, headers=headers)


def read_table(data: bytes, *, filename: str) -> Table:
    check_size(len(data))
    fmt = detect_format(filename)
    if fmt == ItemImport.Format.XLSX:
        return _xlsx(data)
    if fmt == ItemImport.Format.JSONL:
        return _jsonl(data)
    return _csv(data)
