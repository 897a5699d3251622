"""A protocol report as a workbook: a summary sheet, then one sheet per table, formula-safe."""

from __future__ import annotations

import re
from typing import IO

from openpyxl import Workbook
from openpyxl.styles import Font

from ..exports.safe_cells import xlsx_row
from ..reports import to_plain
from .base import ProtocolReport

BOLD = Font(bold=True)
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
    book = Workbook(write_only=True)
    used = {"summary"}
    summary = book.create_sheet("Summary")
    summary.append(xlsx_row(summary, [report.title], font=BOLD))
    summary.append(xlsx_row(summary, ["Study", report.study.name]))
    summary.append(xlsx_row(summary, ["Template", report.study.protocol]))
    summary.append([])
    for name, value in report.summary:
        summary.append(xlsx_row(summary, [name, to_plain(value)]))
    if report.notes:
        summary.append([])
        summary.append(xlsx_row(summary, ["Notes"], font=BOLD))
        for note in report.notes:
            summary.append(xlsx_row(summary, [note]))
    for table in report.tables():
        sheet = book.create_sheet(_sheet_name(table.title, used))
        sheet.append(xlsx_row(sheet, table.columns, font=BOLD))
        for row in table.rows:
            sheet.append(xlsx_row(sheet, [_cell(v) for v in row]))
        if table.note:
            sheet.append([])
            sheet.append(xlsx_row(sheet, [table.note]))
    book.save(stream)


def _cell(value):
    value = to_plain(value)
    if isinstance(value, (list, dict)):
        return ", ".join(map(str, value)) if isinstance(value, list) else str(value)
    return value
