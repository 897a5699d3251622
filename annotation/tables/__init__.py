"""The one table reader: CSV, XLSX (first sheet) and JSON Lines, for item imports, protocol imports and analyze.

Django-free on purpose (``ratings.io`` feeds ``manage.py analyze`` and must
stay importable without settings), and the lowest layer, so annotation,
ratings and judging can all use it. A file is opened once and read as a
stream: rows come out as they are read, memory stays bounded by the longest
row (a workbook's shared strings excepted, which the archive checks bound).

- ``detect_format(name)`` → ``"csv"``, ``"xlsx"`` or ``"jsonl"``.
- ``check_file(stream, fmt=...)`` refuses what must never be read (an XLSX
  zip bomb, XML entities) before the upload is stored; returns the bytes
  that reading will process (a workbook's inflated size).
- ``read_rows(stream, fmt=...)`` yields the non-blank ``TableRow``s of a CSV
  file or a workbook's first sheet; ``read_json_lines(stream)`` the lines
  of a JSON Lines file.
- ``quick_csv_texts(stream)``: the same rows' texts in one go for a plain CSV
  file (no quotes, valid UTF-8), or None when it needs ``read_rows``; for
  callers that want the whole table at once (``manage.py analyze``).
- ``workload(stream, fmt=..., size=...)``: the same figure from the archive
  directory alone, to decide between reading now and a worker.
- ``cell_text(value)`` is the one reading of a cell (rules in ``cells``).

A file that cannot be read raises ``TableError`` whose ``problems`` carry
row, column, part and message as data.
"""

from pathlib import PurePath
from typing import IO

from .cells import canonical_value, cell_number, cell_text
from .jsonl import JsonLine, read_json_lines
from .problems import Problem, TableError
from .rows import MAX_COLUMNS, MAX_FIELD_CHARS, TableRow, split_header
from .text import quick_csv_texts, read_csv
from .xlsx import check_xlsx, inflated_size, read_xlsx

CSV, XLSX, JSONL = "csv", "xlsx", "jsonl"
EXTENSIONS = {
    ".csv": CSV,
    ".tsv": CSV,
    ".txt": CSV,
    ".xlsx": XLSX,
    ".jsonl": JSONL,
    ".ndjson": JSONL,
}

__all__ = [
    "CSV",
    "JSONL",
    "MAX_COLUMNS",
    "MAX_FIELD_CHARS",
    "XLSX",
    "JsonLine",
    "Problem",
    "TableError",
    "TableRow",
    "canonical_value",
    "cell_number",
    "cell_text",
    "check_file",
    "detect_format",
    "quick_csv_texts",
    "read_json_lines",
    "read_rows",
    "split_header",
    "workload",
]


def detect_format(name: str) -> str:
    """The format a file name says; a TableError with advice for files that are no table."""
    suffix = PurePath(name).suffix.lower()
    if suffix in EXTENSIONS:
        return EXTENSIONS[suffix]
    if suffix == ".xls":
        raise TableError("Old Excel files (.xls) cannot be read; save the sheet as .xlsx or as CSV UTF-8.")
    if suffix == ".json":
        raise TableError(
            "A .json file is not an item file; write one item object per line as .jsonl, "
            "or load a whole study file with `manage.py load_study`."
        )
    raise TableError(f"Unsupported file type {suffix or '(none)'!r}; upload a .csv, .xlsx or .jsonl file.")


def check_file(stream: IO[bytes], *, fmt: str, size: int) -> int:
    """Refuse a file that must not be read at all; the bytes reading it will process. The stream is rewound."""
    if fmt != XLSX:
        return size
    try:
        return check_xlsx(stream)
    finally:
        stream.seek(0)


def workload(stream: IO[bytes], *, fmt: str, size: int) -> int:
    """The bytes reading will process, from the archive directory alone (cheap; no checks). Rewinds."""
    return inflated_size(stream) if fmt == XLSX else size


def read_rows(stream: IO[bytes], *, fmt: str):
    """The non-blank rows of a CSV file or of a workbook's first sheet (a seekable stream)."""
    if fmt == XLSX:
        return read_xlsx(stream)
    if fmt == CSV:
        return read_csv(stream)
    raise TableError(f"Unknown table format {fmt!r}.")
