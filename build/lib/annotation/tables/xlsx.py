"""XLSX workbooks: the archive is checked before openpyxl sees it, then the first sheet is read once.

An XLSX file is a zip of XML parts, and both layers can be turned into bombs:
a 249 KB upload whose shared strings inflate to 100 MB, a sheet that declares
a million rows by sixteen thousand columns, a DTD whose entities expand a
billion times or fetch a URL. ``check_xlsx`` refuses, from the archive's own
directory and one streaming pass over each part, any archive with too many
parts, a part or a total too large when inflated, a compression ratio no
spreadsheet has, or a DTD/ENTITY declaration anywhere (openpyxl also parses
through defusedxml when it is installed: ``openpyxl.DEFUSEDXML``). Then the
sheet's rows are read as the XML streams by, ignoring the sheet's declared
size, with caps on cells per row and characters per cell.
"""

from __future__ import annotations

import re
import zipfile
from collections.abc import Iterator
from typing import IO, Any

from .cells import canonical_value
from .problems import Problem, TableError
from .rows import MAX_COLUMNS, MAX_FIELD_CHARS, TableRow, is_blank

MAX_PARTS = 1_000
# Inflated size of one part (the shared strings or a sheet) and of the whole archive.
MAX_PART_BYTES = 64 * 1024 * 1024
MAX_TOTAL_BYTES = 256 * 1024 * 1024
# Spreadsheet XML compresses 5-30 times; a part inflating over this ratio is built to explode.
MAX_RATIO = 100
# Small parts (styles, an empty sheet) compress extremely well and cost nothing; the ratio applies above this.
RATIO_FLOOR_BYTES = 1024 * 1024
# openpyxl holds every shared string in memory (about 100 bytes each) before the first row is read.
MAX_SHARED_STRINGS = 1_000_000
# Cells one row element may hold (Excel's own column limit).
MAX_ROW_CELLS = 16_384
SCAN_CHUNK = 1024 * 1024
DECLARATION = re.compile(rb"<!\s*(DOCTYPE|ENTITY)", re.IGNORECASE)
NOT_A_WORKBOOK = "This is not a readable XLSX file"


def _megabytes(size: int) -> str:
    if size < 1_048_576:
        return f"{size / 1024:,.0f} KB"
    return f"{size / 1_048_576:,.1f} MB"


def _refuse(message: str, part: str | None = None) -> TableError:
    return TableError(Problem(f"The workbook's part {part!r} {message}" if part else message, part=part))


def check_xlsx(stream: IO[bytes]) -> int:
    """Refuse a workbook archive that is a bomb or declares XML entities; its inflated size when it is not."""
    try:
        archive = zipfile.ZipFile(stream)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, ValueError, EOFError) as exc:
        raise _refuse(f"{NOT_A_WORKBOOK} ({exc}).") from None
    with archive:
        parts = archive.infolist()
        if len(parts) > MAX_PARTS:
            raise _refuse(
                f"The workbook holds {len(parts):,} parts; an XLSX file has a few dozen (the limit is {MAX_PARTS:,})."
            )
        total = 0
        for info in parts:
            total += info.file_size
            if info.file_size > MAX_PART_BYTES:
                raise _refuse(
                    f"inflates to {_megabytes(info.file_size)}; the limit is {_megabytes(MAX_PART_BYTES)} per part.",
                    info.filename,
                )
            if info.file_size > RATIO_FLOOR_BYTES and info.file_size > MAX_RATIO * max(info.compress_size, 1):
                raise _refuse(
                    f"inflates {info.file_size // max(info.compress_size, 1):,} times "
                    f"({_megabytes(info.compress_size)} to {_megabytes(info.file_size)}); no spreadsheet compresses "
                    f"more than {MAX_RATIO} times, so the file is refused as a zip bomb.",
                    info.filename,
                )
        if total > MAX_TOTAL_BYTES:
            raise _refuse(
                f"The workbook inflates to {_megabytes(total)}; the limit is {_megabytes(MAX_TOTAL_BYTES)}. "
                "Split it into several files or save it as CSV."
            )
        strings = 0
        for info in parts:
            strings += _scan_part(archive, info)
            if strings > MAX_SHARED_STRINGS:
                raise _refuse(
                    f"holds more than {MAX_SHARED_STRINGS:,} shared strings; the limit is {MAX_SHARED_STRINGS:,}. "
                    "Split the workbook or save it as CSV.",
                    info.filename,
                )
    return total


def _scan_part(archive: zipfile.ZipFile, info: zipfile.ZipInfo) -> int:
    """One streaming pass over a part: no UTF-16 XML (the byte scan could not see its declarations), no DTD.

    Returns how many shared strings (``<si>`` elements) the part holds.
    """
    if info.is_dir():
        return 0
    tail = b""
    first = True
    strings = 0
    try:
        with archive.open(info) as part:
            while chunk := part.read(SCAN_CHUNK):
                if first:
                    first = False
                    if chunk.startswith((b"\xff\xfe", b"\xfe\xff", b"<\x00", b"\x00<")):
                        raise _refuse("is UTF-16 XML; save the workbook from a spreadsheet program.", info.filename)
                window = tail + chunk
                found = DECLARATION.search(window)
                if found:
                    raise _refuse(
                        f"declares {found.group(1).decode().upper()}; XML entity and DTD declarations are refused "
                        "(they can expand without end or reach other files). Save the sheet again from a "
                        "spreadsheet program.",
                        info.filename,
                    )
                strings += chunk.count(b"<si>") + chunk.count(b"<si ")
                tail = window[-16:]
    except TableError:
        raise
    except Exception as exc:  # noqa: BLE001 - a corrupt part (CRC, zlib.error, encryption) is not a server error
        raise _refuse(f"{NOT_A_WORKBOOK} (part {info.filename!r}: {exc}).") from None
    return strings


def inflated_size(stream: IO[bytes]) -> int:
    """The declared inflated size of a workbook archive (its directory only; 0 when it is not one)."""
    try:
        with zipfile.ZipFile(stream) as archive:
            return sum(info.file_size for info in archive.infolist())
    except (zipfile.BadZipFile, OSError, ValueError, EOFError):
        return 0
    finally:
        stream.seek(0)


def _sheet_parser_class():
    # openpyxl is slow to import; only workbooks pay for it. Its sheet parser is the
    # one piece reused: the cell decoding (shared strings, dates, booleans) is its job.
    from openpyxl.worksheet._reader import FORMULA_TAG, WorkSheetParser

    class SheetParser(WorkSheetParser):
        """openpyxl's parser reading saved values, noting formulas that have none, keeping no row metadata."""

        def parse_row(self, row):
            if "r" in row.attrib:
                self.row_counter = int(row.attrib["r"])
            else:
                self.row_counter += 1
            self.col_counter = 0
            if len(row) > MAX_ROW_CELLS:
                raise _CellLimit(f"the row holds {len(row):,} cells; the limit is {MAX_ROW_CELLS:,}.")
            return self.row_counter, [self.parse_cell(element) for element in row]

        def parse_cell(self, element):
            cell = super().parse_cell(element)
            if cell["value"] is None and element.find(FORMULA_TAG) is not None:
                cell["formula"] = element.findtext(FORMULA_TAG) or ""
            return cell

    return SheetParser


class _CellLimit(ValueError):
    pass


def read_xlsx(stream: IO[bytes]) -> Iterator[TableRow]:
    """The non-blank rows of the first sheet, numbered as Excel shows them, values as Excel last saved them.

    Text that merely looks like a formula ("=...") is text; a formula cell the
    file holds no saved value for (a sheet written by a program and never
    opened in Excel) is a row problem rather than a silent blank.
    """
    check_xlsx(stream)
    stream.seek(0)
    from openpyxl import load_workbook

    try:
        book = load_workbook(stream, read_only=True, data_only=True)
    except Exception as exc:  # noqa: BLE001 - openpyxl raises many types for a malformed workbook
        raise _refuse(f"{NOT_A_WORKBOOK} ({type(exc).__name__}: {exc}).") from None
    try:
        if not book.worksheets:
            raise _refuse("The workbook has no sheets.")
        sheet = book.worksheets[0]
        parser_class = _sheet_parser_class()
        with sheet._get_source() as source:
            parser = parser_class(
                source,
                sheet._shared_strings,
                data_only=True,
                epoch=book.epoch,
                date_formats=book._date_formats,
                timedelta_formats=book._timedelta_formats,
            )
            yield from _rows(parser.parse(), part=sheet._worksheet_path)
    finally:
        book.close()


def _rows(parsed: Iterator[tuple[int, list[dict[str, Any]]]], *, part: str) -> Iterator[TableRow]:
    from openpyxl.utils import get_column_letter

    number = 0
    while True:
        try:
            number, cells = next(parsed)
        except StopIteration:
            return
        except _CellLimit as exc:
            raise TableError(Problem(str(exc), row=number + 1, part=part)) from None
        except Exception as exc:  # noqa: BLE001 - a malformed sheet (bad coordinates, a missing shared string)
            raise _refuse(
                f"{NOT_A_WORKBOOK} (sheet {part!r} after row {number}: {type(exc).__name__}: {exc})."
            ) from None
        values: list[Any] = []
        uncomputed: list[str] = []
        first_uncomputed = None
        for cell in cells:
            value, column = cell["value"], cell["column"]
            if value is None and "formula" not in cell:
                continue  # an empty (perhaps formatted) cell, wherever it sits
            if column < 1:
                raise _refuse(f"{NOT_A_WORKBOOK} (sheet {part!r}, row {number}: a cell has no valid column).")
            coordinate = f"{get_column_letter(column)}{number}" if 0 < column <= 16_384 else f"column {column}"
            if column > MAX_COLUMNS:
                raise TableError(
                    Problem(
                        f"cell {coordinate} is beyond column {MAX_COLUMNS:,}; the limit is {MAX_COLUMNS:,} columns.",
                        row=number,
                        column=coordinate,
                        part=part,
                    )
                )
            if isinstance(value, str) and len(value) > MAX_FIELD_CHARS:
                raise TableError(
                    Problem(
                        f"cell {coordinate} holds {len(value):,} characters; the limit is {MAX_FIELD_CHARS:,}.",
                        row=number,
                        column=coordinate,
                        part=part,
                    )
                )
            if column > len(values):
                values.extend([None] * (column - len(values)))
            values[column - 1] = canonical_value(value)
            if "formula" in cell:
                formula = cell["formula"]
                first_uncomputed = first_uncomputed or coordinate
                uncomputed.append(f"{coordinate} (={formula})" if formula else coordinate)
        problems = ()
        if uncomputed:
            problems = (
                Problem(
                    f"the formula in {', '.join(uncomputed)} has no saved value; "
                    "open and save the file in Excel, or paste the values instead of formulas.",
                    row=number,
                    column=first_uncomputed,
                ),
            )
        row = TableRow(number=number, values=values, problems=problems)
        if not is_blank(row):
            yield row
