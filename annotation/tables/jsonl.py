"""JSON Lines, one value per line, each read within the limits of ``annotation.json_limits``.

A line that goes past a limit (nested too deep, an enormous number or text),
holds a lone surrogate (which the database cannot store), writes NaN or
Infinity, or repeats a key refuses the file with a message naming the line and
the field (``Line 2: metadata.note: an unpaired UTF-16 surrogate ...``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO, Any

from .problems import Problem, TableError
from .text import text_lines


@dataclass(frozen=True)
class JsonLine:
    """A non-blank line: its value, or why it is not JSON (``error``, a row-level message)."""

    number: int
    value: Any = None
    error: str | None = None


def read_json_lines(stream: IO[bytes]) -> Iterator[JsonLine]:
    """Every non-blank line of a UTF-8 JSON Lines file, in order.

    A line that is not JSON is yielded with its error so every such line is
    reported; a line the hostile-input guard refuses refuses the file (TableError naming it).
    """
    # Imported here: the rest of the table reader stays free of Django and PyYAML for
    # ``funnybone analyze``, which reads no JSON Lines.
    from ..json_limits import DataTooComplex, load_json

    for number, line in text_lines(stream):
        if not line.strip():
            continue
        try:
            # A NUL is left to the rows, which name the item and field of every one (importers.cells).
            yield JsonLine(number=number, value=load_json(line, nul=False))
        except DataTooComplex as exc:
            message = f"{exc.path}: {exc.problem}" if exc.path else exc.problem
            raise TableError(Problem(message, row=number, unit="Line")) from None
        except json.JSONDecodeError as exc:
            yield JsonLine(number=number, error=f"not valid JSON ({exc.msg} at column {exc.colno}).")
