"""One value for one cell, whichever file it came from and whoever reads it.

The rules (also in docs/study-files.md, "How cells are read"):

- Empty: a missing cell, an empty one and one holding only spaces are all
  the empty text ``""``; a row whose cells are all empty is skipped.
- Text is trimmed of surrounding whitespace (``" 2 "`` reads as ``"2"``).
  Text is never reinterpreted: a CSV cell ``TRUE`` or ``3.0`` stays that text.
- Numbers a workbook stores: a whole number reads without a decimal point
  (``3.0`` → ``"3"``), others with up to 15 significant digits as Excel shows
  them (``0.1`` → ``"0.1"``).
- Yes/no cells a workbook stores read ``"TRUE"`` / ``"FALSE"``, the way Excel
  writes them into a CSV, so a sheet saved either way reads the same.
- Dates a workbook stores read as ISO 8601: ``"2024-03-01"`` for a date (a
  time of midnight is dropped), ``"2024-03-01T14:30:00"`` with a time,
  ``"14:30:00"`` for a time of day.
- Where a number is expected (``manage.py analyze``), ``cell_number`` reads
  ``"3"``, ``"3.0"``, ``"3,5"`` (decimal comma) and ``TRUE``/``FALSE`` (1 and 0).

The typed value (``canonical_value``) is kept alongside for the one place
that wants it: item metadata stores a workbook's numbers as numbers.
"""

from __future__ import annotations

import datetime as dt
import json
import math
from typing import Any

# Integral floats up to this magnitude are exact as ints; beyond it a float is only an approximation anyway.
EXACT_INT_LIMIT = 2**53
TRUE_TEXT = "TRUE"
FALSE_TEXT = "FALSE"


def canonical_value(value: Any) -> Any:
    """A workbook's or a JSON file's typed value, with 3.0 and 3 made the same number."""
    if isinstance(value, float) and math.isfinite(value) and value.is_integer() and abs(value) < EXACT_INT_LIMIT:
        return int(value)
    return value


def _number_text(value: float) -> str:
    if not math.isfinite(value):
        return repr(value)
    if value.is_integer() and abs(value) < EXACT_INT_LIMIT:
        return str(int(value))
    return format(value, ".15g")


def cell_text(value: Any) -> str:
    """A cell as the text every reader agrees on (see the module docstring)."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, bool):
        return TRUE_TEXT if value else FALSE_TEXT
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _number_text(value)
    if isinstance(value, dt.datetime):
        if value.time() == dt.time(0) and value.tzinfo is None:
            return value.date().isoformat()
        return value.isoformat()
    if isinstance(value, dt.date | dt.time):
        return value.isoformat()
    if isinstance(value, dict | list):
        return json.dumps(value, ensure_ascii=False)
    return str(value).strip()


def cell_number(text: str) -> float | None:
    """The number a cell's text stands for, or None when it is not one (NaN and infinities are not)."""
    text = text.strip()
    upper = text.upper()
    if upper == TRUE_TEXT:
        return 1.0
    if upper == FALSE_TEXT:
        return 0.0
    if text.count(",") == 1 and "." not in text:
        text = text.replace(",", ".")
    try:
        number = float(text)
    except ValueError:
        return None
    return number if math.isfinite(number) else None
