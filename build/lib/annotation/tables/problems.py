"""What the table reader says when a file cannot be read: structured, so nobody parses messages."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a file, and where.

    ``row`` is the row as a spreadsheet shows it (CSV record, sheet row) or the
    line of a text file (``unit="Line"``); ``None`` means the file as a whole.
    ``column`` names the column or cell when there is one, ``part`` the
    member of an XLSX archive, ``offset`` a byte offset in the file. The
    message is written to be read on its own after the location.
    """

    message: str
    row: int | None = None
    column: str | None = None
    unit: str = "Row"
    offset: int | None = None
    part: str | None = None

    @property
    def where(self) -> str:
        if self.row is None:
            return ""
        where = f"{self.unit} {self.row}"
        if self.offset is not None:
            where += f", byte offset {self.offset}"
        return where

    def __str__(self) -> str:
        return f"{self.where}: {self.message}" if self.where else self.message


class TableError(ValueError):
    """The file as a whole cannot be read; ``problems`` say where and why (at least one)."""

    def __init__(self, problems: str | Problem | Iterable[str | Problem]):
        if isinstance(problems, str | Problem):
            problems = [problems]
        self.problems = [p if isinstance(p, Problem) else Problem(p) for p in problems]
        super().__init__("; ".join(self.messages))

    @property
    def messages(self) -> list[str]:
        return [str(p) for p in self.problems]
