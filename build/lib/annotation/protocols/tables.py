"""A protocol's data file as a table of named columns: CSV, XLSX (first sheet) or JSON Lines.

Protocol importers read columns by name (``setup``, ``response``, ``rater``...),
so the header is normalised (trimmed, lower-case, spaces to underscores) and
every row keeps where it came from for messages. The file itself is read by
the one table reader (``annotation.tables``): the same cell reads the same
here as in an item import or ``manage.py analyze``, and the same refusals
(bombs, unclosed quotes, bad bytes) apply.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import IO, Any

from .. import tables
from ..importers.files import check_size
from ..importers.items import FileProblem
from ..tables import cell_text


@dataclass
class Row:
    where: str
    cells: dict[str, Any]

    def text(self, column: str) -> str:
        """The cell as trimmed text ("" when absent or empty)."""
        value = self.cells.get(column)
        return cell_text(value)


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


def _from_rows(rows: Iterator[tables.TableRow]) -> Table:
    header, rows = tables.split_header(rows)
    if header is None:
        raise FileProblem("The file is empty; the first row must name the columns.")
    columns = [normalise(c) for c in header.values]
    named = [c for c in columns if c]
    duplicates = sorted({c for c in named if named.count(c) > 1})
    if duplicates:
        raise FileProblem(f"The header names these columns twice: {', '.join(duplicates)}.")
    table = Table(columns=named, headers={normalise(c): _written(c) for c in header.values if normalise(c)})
    problems = list(header.problems)
    for row in rows:
        problems.extend(row.problems)
        values = {col: row.values[i] if i < len(row.values) else None for i, col in enumerate(columns) if col}
        table.rows.append(Row(where=f"Row {row.number}", cells=values))
    if problems:
        raise FileProblem(problems)
    return table


def _from_lines(stream: IO[bytes]) -> Table:
    rows: list[Row] = []
    columns: list[str] = []
    headers: dict[str, str] = {}
    problems: list[str] = []
    for line in tables.read_json_lines(stream):
        where = f"Line {line.number}"
        if line.error is not None:
            problems.append(f"{where}: {line.error}")
            continue
        if not isinstance(line.value, dict):
            problems.append(f"{where}: each line must be one JSON object.")
            continue
        cells = {normalise(k): tables.canonical_value(v) for k, v in line.value.items()}
        for key in line.value:
            headers.setdefault(normalise(key), _written(key))
        columns.extend(c for c in cells if c not in columns)
        rows.append(Row(where=where, cells=cells))
    if problems:
        raise FileProblem(problems)
    if not rows:
        raise FileProblem("The file holds no rows.")
    return Table(columns=columns, rows=rows, headers=headers)


def read_table(data: bytes | IO[bytes], *, filename: str) -> Table:
    """The file (its bytes, or a seekable binary stream) as a table; FileProblem when it cannot be read."""
    stream = io.BytesIO(data) if isinstance(data, bytes | bytearray) else data
    size = stream.seek(0, io.SEEK_END)
    stream.seek(0)
    check_size(size)
    fmt = tables.detect_format(filename)
    if fmt == tables.JSONL:
        return _from_lines(stream)
    return _from_rows(tables.read_rows(stream, fmt=fmt))
