# SPDX-License-Identifier: GPL-3.0-or-later
"""Workbooks written row by row in constant memory (xlsxwriter), every cell formula-safe.

Every workbook Funnybone writes (the study export, protocol reports) goes
through :class:`Book` and :class:`Sheet`: rows are appended in order and
flushed to a temporary file as soon as the next row starts, so a sheet of a
million rows costs the memory of one row. The cell rules live here and in
``safe_cells``:

* text is always written as a string cell (``write_string``), never through
  xlsxwriter's ``write()``, which turns text starting with ``=`` into a formula;
  the text is cleaned by ``safe_cells.xlsx_text`` (no XML control characters,
  Excel's cell limit);
* dates and times are real date cells with a format wide enough to show them
  (timezones dropped: every time in an export is UTC, as the Metadata sheet says);
* every sheet gets column widths: fixed ones where a sheet sets them, otherwise
  fitted to the header and the first rows (bounded, so long texts wrap less
  than they would in a fitted-to-everything sheet, but no column shows ``###``);
* a sheet's first bold row of several cells is its header: the panes are frozen
  under it (and right of the first column on a wide sheet), it gets an auto
  filter over every row written, and it is repeated on each printed page;
* numbers that are not whole show three decimals at most (``0.0##``: an SD of
  0.8164965809277261 reads 0.816; the cell keeps every digit), and tiny ones
  in scientific notation, so a p-value of 2e-9 does not read 0;
* every sheet prints landscape on A4, fitted to one page wide, with its
  gridlines and the sheet's name and page number in the footer.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from datetime import date, datetime
from typing import IO, Any

import xlsxwriter

from .safe_cells import XLSX_MAX_CHARS, xlsx_text, xlsx_value

DATETIME_FORMAT = "yyyy-mm-dd hh:mm:ss"
DATE_FORMAT = "yyyy-mm-dd"
# Characters a date-time cell needs (19) plus a margin for the cell's padding.
DATETIME_WIDTH = 20
DATE_WIDTH = 12
# Text that xlsx_text would change: control characters (a carriage return among them).
_NEEDS_CLEANING = re.compile(r"[\000-\010\013-\014\016-\037\r]")
DECIMAL_FORMAT = "0.0##"
SMALL_FORMAT = "0.00E+00"
# Below this (and above 0) a number is shown in scientific notation.
SMALL_NUMBER = 0.001
# A sheet this wide (columns) keeps its first column in view as well as its header row.
FREEZE_FIRST_COLUMN_FROM = 6
A4_PAPER = 9
PRINT_MARGIN_INCHES = 0.4
MIN_WIDTH = 6
MAX_WIDTH = 60
# Rows looked at to fit column widths: a sheet's first rows say what its columns hold.
WIDTH_SAMPLE_ROWS = 500


class Book:
    """An XLSX workbook being written to a path or a binary stream."""

    def __init__(self, target: str | IO[bytes]) -> None:
        # constant_memory: each row goes to a temporary file once the next one starts.
        # strings_to_*: never let xlsxwriter reinterpret text (write_string is used anyway).
        self._book = xlsxwriter.Workbook(
            target,
            {
                "constant_memory": True,
                "strings_to_formulas": False,
                "strings_to_numbers": False,
                "strings_to_urls": False,
                "remove_timezone": True,
            },
        )
        self.bold = self._book.add_format({"bold": True})
        self.datetime = self._book.add_format({"num_format": DATETIME_FORMAT})
        self.date = self._book.add_format({"num_format": DATE_FORMAT})
        self.bold_datetime = self._book.add_format({"bold": True, "num_format": DATETIME_FORMAT})
        self.bold_date = self._book.add_format({"bold": True, "num_format": DATE_FORMAT})
        self.decimal = self._book.add_format({"num_format": DECIMAL_FORMAT})
        self.small = self._book.add_format({"num_format": SMALL_FORMAT})
        self.bold_decimal = self._book.add_format({"bold": True, "num_format": DECIMAL_FORMAT})
        self.bold_small = self._book.add_format({"bold": True, "num_format": SMALL_FORMAT})
        self._sheets: list[Sheet] = []

    def sheet(self, name: str) -> Sheet:
        sheet = Sheet(self, self._book.add_worksheet(name))
        self._sheets.append(sheet)
        return sheet

    def close(self) -> None:
        for sheet in self._sheets:
            sheet.apply_widths()
            sheet.apply_layout()
        self._book.close()


class Sheet:
    """One worksheet: ``append`` a row of Python values; widths fitted unless set."""

    def __init__(self, book: Book, worksheet) -> None:
        self._book = book
        self._ws = worksheet
        self.rows = 0
        self._fixed: dict[int, float] = {}
        self._fitted: dict[int, int] = {}
        # The header: its row and how many columns it names (None until a bold row of several cells).
        self.header_row: int | None = None
        self.header_columns = 0

    @property
    def name(self) -> str:
        return self._ws.name

    def widths(self, widths: dict[int, float]) -> None:
        """Fix the width of columns (0-based index → width in characters)."""
        self._fixed.update(widths)

    def append(self, values: Sequence[Any] = (), *, bold: bool = False) -> None:
        """Write the next row; an empty sequence leaves an empty row."""
        row = self.rows
        self.rows += 1
        if bold and self.header_row is None and len(values) > 1:
            self.header_row, self.header_columns = row, len(values)
        write = self.write
        if row >= WIDTH_SAMPLE_ROWS:
            for column, value in enumerate(values):
                write(row, column, value, bold=bold)
            return
        fitted = self._fitted
        for column, value in enumerate(values):
            width = _width(write(row, column, value, bold=bold))
            if width > fitted.get(column, 0):
                fitted[column] = width

    def write(self, row: int, column: int, value: Any, *, bold: bool = False) -> Any:
        """Write one cell by the rules above; return the value as written (None for an empty cell)."""
        book, ws = self._book, self._ws
        kind = type(value)
        # The common cases first: plain text and numbers.
        if kind is str:
            if _NEEDS_CLEANING.search(value) or len(value) > XLSX_MAX_CHARS:
                value = xlsx_text(value)
            ws.write_string(row, column, value, book.bold if bold else None)
            return value
        if kind is int:
            ws.write_number(row, column, value, book.bold if bold else None)
            return value
        if kind is float:
            if not math.isfinite(value):
                return None
            ws.write_number(row, column, value, _number_format(book, value, bold))
            return value
        value = xlsx_value(value)
        if value is None:
            if bold:
                ws.write_blank(row, column, None, book.bold)
            return None
        if isinstance(value, str):
            value = xlsx_text(value)
            ws.write_string(row, column, value, book.bold if bold else None)
        elif isinstance(value, bool):
            ws.write_boolean(row, column, value, book.bold if bold else None)
        elif isinstance(value, int):
            ws.write_number(row, column, value, book.bold if bold else None)
        elif isinstance(value, float):
            ws.write_number(row, column, value, _number_format(book, value, bold))
        elif isinstance(value, datetime):
            ws.write_datetime(row, column, value, book.bold_datetime if bold else book.datetime)
        elif isinstance(value, date):
            ws.write_datetime(row, column, value, book.bold_date if bold else book.date)
        else:
            value = xlsx_text(str(value))
            ws.write_string(row, column, value, book.bold if bold else None)
        return value

    def apply_widths(self) -> None:
        for column, width in self._fitted.items():
            if column not in self._fixed:
                self._ws.set_column(column, column, min(max(width + 2, MIN_WIDTH), MAX_WIDTH))
        for column, width in self._fixed.items():
            self._ws.set_column(column, column, width)

    def apply_layout(self) -> None:
        """Freeze and filter under the header; print landscape, one page wide, the header on every page."""
        ws = self._ws
        if self.header_row is not None:
            body = self.header_row + 1
            ws.freeze_panes(body, 1 if self.header_columns >= FREEZE_FIRST_COLUMN_FROM else 0)
            ws.autofilter(self.header_row, 0, max(self.rows - 1, self.header_row), self.header_columns - 1)
            ws.repeat_rows(self.header_row)
        ws.set_landscape()
        ws.set_paper(A4_PAPER)
        ws.fit_to_pages(1, 0)
        ws.set_margins(left=PRINT_MARGIN_INCHES, right=PRINT_MARGIN_INCHES, top=0.5, bottom=0.5)
        ws.hide_gridlines(0)
        ws.set_footer("&L&A&RPage &P of &N")


def _number_format(book: Book, value: float, bold: bool) -> Any:
    """A number that is not whole shows three decimals at most; a tiny one, scientific notation."""
    if value.is_integer():
        return book.bold if bold else None
    if abs(value) < SMALL_NUMBER:
        return book.bold_small if bold else book.small
    return book.bold_decimal if bold else book.decimal


def _width(value: Any) -> int:
    """Characters a written value needs to be seen whole (long text is wrapped at MAX_WIDTH)."""
    if value is None:
        return 0
    if isinstance(value, str):
        if len(value) >= 2 * MAX_WIDTH:
            return MAX_WIDTH
        return max((len(line) for line in value.split("\n")), default=0)
    if isinstance(value, bool):
        return 5
    if isinstance(value, datetime):
        return DATETIME_WIDTH
    if isinstance(value, date):
        return DATE_WIDTH
    if isinstance(value, float) and not value.is_integer():
        # As shown (DECIMAL_FORMAT / SMALL_FORMAT), not every digit the cell keeps.
        return len(f"{value:.2E}") if abs(value) < SMALL_NUMBER else len(f"{value:.3f}")
    return len(repr(value))


__all__ = ["Book", "Sheet"]
