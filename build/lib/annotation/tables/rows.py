"""A row as every reader yields it, and the limits every format shares."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from .cells import cell_text
from .problems import Problem

# A cell longer than this is refused outright (the csv module's own default
# limit); item imports refuse far shorter texts row by row (MAX_FIELD_CHARS there).
MAX_FIELD_CHARS = 131_072
# Columns a row may have; wide protocol sheets (one column per rater) stay far below it.
MAX_COLUMNS = 1_024


@dataclass(frozen=True)
class TableRow:
    """One row of a table: its number as a spreadsheet shows it, its cells, and what is wrong with them.

    ``values`` are what the file holds: text for CSV, typed values for a
    workbook (see ``cells.canonical_value``). ``text(i)`` is the one reading
    every consumer uses. ``problems`` are row-level (a formula without a
    saved value); a consumer reports them with its other row messages.
    """

    number: int
    values: list[Any]
    problems: tuple[Problem, ...] = field(default=())

    def text(self, index: int) -> str:
        return cell_text(self.values[index]) if index < len(self.values) else ""

    def texts(self) -> list[str]:
        return [cell_text(v) for v in self.values]


def is_blank(row: TableRow) -> bool:
    return not row.problems and not any(cell_text(v) for v in row.values)


def split_header(rows: Iterable[TableRow]) -> tuple[TableRow | None, Iterator[TableRow]]:
    """The first row (the header; readers skip blank rows) and an iterator over the rest."""
    iterator = iter(rows)
    return next(iterator, None), iterator
