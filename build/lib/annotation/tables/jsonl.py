"""JSON Lines, one value per line, with limits that keep one line from taking the server down.

``json.loads`` on a line of ten thousand ``[`` raises RecursionError, and an
integer of thousands of digits takes quadratic time to convert (Python
refuses past 4,300 digits with a ValueError): both were server errors. Here a
line that nests deeper than MAX_JSON_DEPTH or writes a number longer than
MAX_JSON_NUMBER_CHARS refuses the file with a message naming the line.
``json_limits_problem`` and ``json_depth`` are the same checks for callers
that parse JSON or YAML themselves (study files).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO, Any

from .problems import Problem, TableError
from .text import text_lines

# Item metadata and gold answers nest a few levels; nothing real comes near this.
MAX_JSON_DEPTH = 32
# A 40-digit number is already beyond any id or count; Python's own guard stops at 4,300 digits.
MAX_JSON_NUMBER_CHARS = 40


class JsonLimitError(ValueError):
    """A JSON text goes past a limit; the message says which, without a location."""


def _int(text: str) -> int:
    if len(text) > MAX_JSON_NUMBER_CHARS:
        raise JsonLimitError(f"holds a number {len(text):,} digits long; the limit is {MAX_JSON_NUMBER_CHARS}.")
    return int(text)


def _float(text: str) -> float:
    if len(text) > MAX_JSON_NUMBER_CHARS:
        raise JsonLimitError(f"holds a number {len(text):,} characters long; the limit is {MAX_JSON_NUMBER_CHARS}.")
    return float(text)


def json_depth(value: Any) -> int:
    """How deeply lists and objects nest in an already parsed value (0 for a scalar), without recursion."""
    deepest = 0
    stack = [(value, 1)]
    while stack:
        current, depth = stack.pop()
        if isinstance(current, dict):
            children = current.values()
        elif isinstance(current, list | tuple):
            children = current
        else:
            continue
        deepest = max(deepest, depth)
        if deepest > MAX_JSON_DEPTH:
            break  # deep enough to refuse; no need to walk the rest
        stack.extend((child, depth + 1) for child in children)
    return deepest


def json_limits_problem(value: Any) -> str | None:
    """Why a parsed JSON/YAML value is refused (too deep, a number too long), or None."""
    if json_depth(value) > MAX_JSON_DEPTH:
        return f"nests lists and objects more than {MAX_JSON_DEPTH} levels deep."
    stack = [value]
    while stack:
        current = stack.pop()
        if isinstance(current, bool):
            continue
        if isinstance(current, int) and current.bit_length() > MAX_JSON_NUMBER_CHARS * 4:
            return f"holds a number over {MAX_JSON_NUMBER_CHARS} digits long."
        if isinstance(current, dict):
            stack.extend(current.values())
        elif isinstance(current, list | tuple):
            stack.extend(current)
    return None


def loads_bounded(text: str) -> Any:
    """``json.loads`` that raises JsonLimitError for deep nesting or overlong numbers.

    Invalid JSON still raises ``json.JSONDecodeError``.
    """
    try:
        value = json.loads(text, parse_int=_int, parse_float=_float)
    except RecursionError:
        raise JsonLimitError(f"nests lists and objects more than {MAX_JSON_DEPTH} levels deep.") from None
    if json_depth(value) > MAX_JSON_DEPTH:
        raise JsonLimitError(f"nests lists and objects more than {MAX_JSON_DEPTH} levels deep.")
    return value


@dataclass(frozen=True)
class JsonLine:
    """A non-blank line: its value, or why it is not JSON (``error``, a row-level message)."""

    number: int
    value: Any = None
    error: str | None = None


def read_json_lines(stream: IO[bytes]) -> Iterator[JsonLine]:
    """Every non-blank line of a UTF-8 JSON Lines file, in order.

    A line that is not JSON is yielded with its error so every such line is
    reported; a line past a limit refuses the file (TableError naming it).
    """
    for number, line in text_lines(stream):
        if not line.strip():
            continue
        try:
            yield JsonLine(number=number, value=loads_bounded(line))
        except JsonLimitError as exc:
            raise TableError(Problem(f"the line {exc}", row=number, unit="Line")) from None
        except json.JSONDecodeError as exc:
            yield JsonLine(number=number, error=f"not valid JSON ({exc.msg} at column {exc.colno}).")
