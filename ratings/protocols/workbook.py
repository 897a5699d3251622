"""A protocol report as a workbook: a summary sheet, then one sheet per table, formula-safe."""

from __future__ import annotations

import re
from typing import IO

from ..exports.xlsx_book import Book
from ..reports import to_plain
from .base import ProtocolReport

SHEET_NAME_MAX = 31
_FORBIDDEN = re.compile(r"[\[\]\*\?/\\:]")


def _sheet_name(title: str, used: set[str]) -> str:
    base = _FORBIDDEN.sub(" ", title).strip()[:SHEET_NAME_MAX] or "Table"
    name, n = base, 2
    while name.lower() in used:
        suffix = f" ({n})"
        name, n = base[: SHEET_NAME_MAX - len(suffix)] + suffix, n + 1
    used.add(name.lower())
    return name


def write_report_workbook(report: ProtocolReport, stream: IO[bytes]) -> None:
    book = Book(stream)
    used = {"summary"}
    summary = book.sheet("Summary")
    summary.append([report.title], bold=True)
    summary.append(["Study", report.study.name])
    summary.append(["Template", report.study.protocol])
    summary.append([])
    for name, value in report.summary:
        summary.append([name, to_plain(value)])
    if report.notes:
        summary.append([])
        summary.append(["Notes"], bold=True)
        for note in report.notes:
            summary.append([note])
    for table in report.tables():
        sheet = book.sheet(_sheet_name(table.title, used))
        sheet.append(table.columns, bold=True)
        for row in table.rows:
            sheet.append([_cell(v) for v in row])
        if table.note:
            sheet.append([])
            sheet.append([table.note])
    book.close()


def _cell(value):
    value = to_plain(value)
    if isinstance(value, (list, dict)):
        return ", ".join(map(str, value)) if isinstance(value, list) else str(value)
    return value
