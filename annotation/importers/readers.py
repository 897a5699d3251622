"""Reading item files: CSV (UTF-8, with or without BOM; comma, semicolon or tab),
XLSX (first sheet, values as last computed) and JSON Lines.

Each reader yields ``RowResult``s in file order. Problems with one row are
attached to that row so every problem in the file is reported at once; a
problem with the file as a whole (undecodable bytes, no ``id`` column, not an
XLSX file) raises ``FileProblem``.
"""

import csv
import io
import json
import zipfile
from collections.abc import Iterator
from pathlib import PurePath
from typing import IO

from ..models import ItemImport
from ..task_types import TaskType
from .cells import cell_text
from .items import Columns, FileProblem, RowResult, item_from_cells, item_from_object

EXTENSIONS = {
    ".csv": ItemImport.Format.CSV,
    ".tsv": ItemImport.Format.CSV,
    ".txt": ItemImport.Format.CSV,
    ".xlsx": ItemImport.Format.XLSX,
    ".jsonl": ItemImport.Format.JSONL,
    ".ndjson": ItemImport.Format.JSONL,
}
UTF8_BOM = b"\xef\xbb\xbf"
# Shown for the first few undecodable lines; a wrongly encoded file has them everywhere.
MAX_ENCODING_MESSAGES = 10


def detect_format(name: str) -> str:
    suffix = PurePath(name).suffix.lower()
    if suffix in EXTENSIONS:
        return EXTENSIONS[suffix]
    if suffix == ".xls":
        raise FileProblem("Old Excel files (.xls) cannot be read; save the sheet as .xlsx or as CSV UTF-8.")
    if suffix == ".json":
        raise FileProblem(
            "A .json file is not an item file; write one item object per line as .jsonl, "
            "or load a whole study file with `manage.py load_study`."
        )
    raise FileProblem(f"Unsupported file type {suffix or '(none)'!r}; upload a .csv, .xlsx or .jsonl file.")


def decode_utf8(data: bytes) -> str:
    """The file's text; a UTF-8 byte order mark is dropped, undecodable bytes named by line and offset."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise FileProblem("The file is UTF-16 encoded; save it as UTF-8 (in Excel: 'CSV UTF-8').")
    if data.startswith(UTF8_BOM):
        data = data[len(UTF8_BOM) :]
        offset_shift = len(UTF8_BOM)
    else:
        offset_shift = 0
    nul = data.find(b"\x00")
    if nul >= 0:
        # Text files never hold NUL bytes; UTF-16 without a byte order mark is full of them.
        line_number = data.count(b"\n", 0, nul) + 1
        raise FileProblem(
            f"Line {line_number}, byte offset {offset_shift + nul}: the file holds a NUL byte (0x00), so it is "
            "not UTF-8 text (perhaps UTF-16 without a byte order mark); save it as UTF-8 and upload it again."
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        pass
    problems: list[str] = []
    start = 0
    for line_number, line in enumerate(data.split(b"\n"), start=1):
        try:
            line.decode("utf-8")
        except UnicodeDecodeError as exc:
            if len(problems) < MAX_ENCODING_MESSAGES:
                offset = offset_shift + start + exc.start
                problems.append(
                    f"Line {line_number}, byte offset {offset}: byte 0x{line[exc.start]:02x} is not valid UTF-8."
                )
            else:
                problems.append("... and more lines like these.")
                break
        start += len(line) + 1
    problems.append("Save the file as UTF-8 (in Excel: 'CSV UTF-8') and upload it again.")
    raise FileProblem(problems)


def sniff_delimiter(text: str) -> str:
    """The header line's most frequent separator among comma, semicolon and tab."""
    header = text.split("\n", 1)[0]
    counts = {delimiter: header.count(delimiter) for delimiter in (",", ";", "\t")}
    best = max(counts, key=lambda d: counts[d])
    return best if counts[best] else ","


def _is_blank(cells: list) -> bool:
    return not any(cell_text(c) for c in cells)


def _rows_from_table(rows: Iterator[tuple[int, list]], *, task_type: TaskType) -> Iterator[RowResult]:
    for _number, header in rows:
        if _is_blank(header):
            continue
        columns = Columns.from_header(header)
        break
    else:
        raise FileProblem("The file is empty; the first row must name the columns (at least 'id').")
    for number, cells in rows:
        if _is_blank(cells):
            continue
        yield item_from_cells(cells, columns=columns, where=f"Row {number}", task_type=task_type)


def read_csv(data: bytes, *, task_type: TaskType) -> Iterator[RowResult]:
    text = decode_utf8(data)
    # A cell is limited by the row check, not by the csv module's default field limit.
    csv.field_size_limit(max(csv.field_size_limit(), len(data) + 1))
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=sniff_delimiter(text))
    numbered = enumerate(reader, start=1)

    def rows() -> Iterator[tuple[int, list]]:
        try:
            yield from numbered
        except csv.Error as exc:
            raise FileProblem(f"Line {reader.line_num}: the file is not valid CSV ({exc}).") from None

    return _rows_from_table(rows(), task_type=task_type)


def open_workbook(data: bytes, *, data_only: bool):
    # openpyxl is slow to import; only XLSX uploads pay for it.
    from openpyxl import load_workbook
    from openpyxl.utils.exceptions import InvalidFileException

    try:
        return load_workbook(io.BytesIO(data), read_only=True, data_only=data_only)
    except (zipfile.BadZipFile, InvalidFileException, KeyError, OSError, ValueError) as exc:
        raise FileProblem(f"This is not a readable XLSX file ({exc}).") from None


def read_xlsx(data: bytes, *, task_type: TaskType) -> Iterator[RowResult]:
    """Rows of the first sheet, numbered as Excel shows them.

    Values are what Excel last computed (``data_only``); text that merely looks
    like a formula ("=...") is kept as the text it is and never evaluated. A
    formula cell the file holds no computed value for (a sheet written by a
    program, never opened in Excel) is a row error rather than a silent blank.
    """
    values_book = open_workbook(data, data_only=True)
    formulas_book = open_workbook(data, data_only=False)
    try:
        if not values_book.worksheets:
            raise FileProblem("The workbook has no sheets.")
        values = values_book.worksheets[0].iter_rows(min_row=1, values_only=True)
        formulas = formulas_book.worksheets[0].iter_rows(min_row=1)
        uncomputed: dict[int, list[str]] = {}

        def rows() -> Iterator[tuple[int, list]]:
            for number, (row, cells) in enumerate(zip(values, formulas, strict=False), start=1):
                missing = [
                    f"{cell.coordinate} ({cell.value})"
                    for value, cell in zip(row, cells, strict=False)
                    if value is None and getattr(cell, "data_type", None) == "f"
                ]
                if missing:
                    uncomputed[number] = missing
                yield number, list(row)

        for result in _rows_from_table(rows(), task_type=task_type):
            number = int(result.where.removeprefix("Row "))
            if number in uncomputed:
                cells = ", ".join(uncomputed.pop(number))
                result.errors.append(
                    f"{result.where}: the formula in {cells} has no saved value; "
                    "open and save the file in Excel, or paste the values instead of formulas."
                )
            yield result
    finally:
        values_book.close()
        formulas_book.close()


def read_jsonl(data: bytes, *, task_type: TaskType) -> Iterator[RowResult]:
    text = decode_utf8(data)
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        where = f"Line {number}"
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            yield RowResult(
                where=where, spec=None, errors=[f"{where}: not valid JSON ({exc.msg} at column {exc.colno})."]
            )
            continue
        yield item_from_object(obj, where=where, task_type=task_type)


def read_rows(stream: IO[bytes], *, fmt: str, task_type: TaskType) -> Iterator[RowResult]:
    data = stream.read()
    if fmt == ItemImport.Format.XLSX:
        return read_xlsx(data, task_type=task_type)
    if fmt == ItemImport.Format.CSV:
        return read_csv(data, task_type=task_type)
    if fmt == ItemImport.Format.JSONL:
        return read_jsonl(data, task_type=task_type)
    raise FileProblem(f"Unknown item file format {fmt!r}.")
