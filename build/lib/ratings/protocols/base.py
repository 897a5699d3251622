"""A protocol report: the tables and figures a paper reports, computed from our database.

A report is plain data — sections of tables (named columns, rows of values)
and figures (PNG/SVG from ``ratings.plots``) — so one report feeds the page,
the workbook (one sheet per table) and ``manage.py protocol report --json``.
Each protocol module registers a builder per study template key
(``Study.protocol``); the builder reads judgments through the selectors and
computes with ``ratings.stats``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from annotation.models import Study

from ..plots import Plot
from ..reports import to_plain


@dataclass
class Table:
    key: str  # unique within the report; becomes the sheet name and the JSON key
    title: str
    columns: list[str]
    rows: list[list[Any]] = field(default_factory=list)
    note: str = ""

    def as_records(self) -> list[dict[str, Any]]:
        return [dict(zip(self.columns, row, strict=False)) for row in self.rows]


@dataclass
class Figure:
    key: str
    title: str
    plot: Plot


@dataclass
class Section:
    title: str
    text: str = ""
    tables: list[Table] = field(default_factory=list)
    figures: list[Figure] = field(default_factory=list)


@dataclass
class ProtocolReport:
    study: Study
    title: str
    # Headline figures: (name, value) in reading order, e.g. ("Krippendorff's α (ordinal), all raters", 0.40).
    summary: list[tuple[str, Any]] = field(default_factory=list)
    sections: list[Section] = field(default_factory=list)
    # What the reader must know: too few judgments, judges missing, items skipped and why.
    notes: list[str] = field(default_factory=list)

    def tables(self) -> list[Table]:
        return [t for s in self.sections for t in s.tables]

    def figures(self) -> list[Figure]:
        return [f for s in self.sections for f in s.figures]

    def figure(self, key: str) -> Figure | None:
        return next((f for f in self.figures() if f.key == key), None)


class NoProtocolReport(LookupError):
    """The study follows no protocol template that has a report."""


Builder = Callable[[Study], ProtocolReport]
BUILDERS: dict[str, Builder] = {}


def register_report(*template_keys: str) -> Callable[[Builder], Builder]:
    def decorate(builder: Builder) -> Builder:
        for key in template_keys:
            if key in BUILDERS and BUILDERS[key] is not builder:
                raise ValueError(f"A report for template {key!r} is registered twice.")
            BUILDERS[key] = builder
        return builder

    return decorate


def has_report(study: Study) -> bool:
    return study.protocol in BUILDERS


def protocol_report(*, study: Study) -> ProtocolReport:
    try:
        builder = BUILDERS[study.protocol]
    except KeyError:
        raise NoProtocolReport(f"Study {study.slug!r} follows no protocol template with a report.") from None
    return builder(study)


def rounded(value: Any, digits: int = 3) -> float | None:
    """A number for a table cell: rounded, and None for a missing or undefined (NaN, inf) value."""
    if value is None:
        return None
    value = float(value)
    return round(value, digits) if math.isfinite(value) else None


def report_json(report: ProtocolReport) -> dict[str, Any]:
    return {
        "study": report.study.slug,
        "protocol": report.study.protocol,
        "title": report.title,
        "summary": {name: to_plain(value) for name, value in report.summary},
        "tables": {
            t.key: {"title": t.title, "columns": t.columns, "rows": to_plain(t.rows), "note": t.note}
            for t in report.tables()
        },
        "figures": [f.key for f in report.figures()],
        "notes": report.notes,
    }
