"""Turning spreadsheet cells and parsed JSON/YAML values into clean item fields.

How a cell reads as text is the table reader's rule (``annotation.tables.cell_text``).
"""

import datetime as dt
import math
from typing import Any

from ..json_limits import unstorable
from ..tables import cell_text

# A cell longer than this is almost certainly a mistake (a pasted document, a
# broken quote swallowing the rest of the file), and would wreck the annotator's page.
MAX_CELL_CHARS = 20_000

TRUE_WORDS = {"1", "true", "yes", "y", "x"}
FALSE_WORDS = {"", "0", "false", "no", "n"}


class CellProblem(ValueError):
    """A value that cannot be used; the message is shown to the user as is."""


def cell_json(value: Any) -> Any:
    """A cell as a JSON-ready value for metadata and provenance: numbers stay numbers."""
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, float) and not math.isfinite(value):
        return repr(value)
    if isinstance(value, bool | int | float) or value is None:
        return value
    return cell_text(value)


def json_ready(value: Any, *, field: str) -> Any:
    """A parsed YAML/JSON value made storable in a JSONField (YAML dates become text)."""
    if isinstance(value, dict):
        clean = {}
        for key, inner in value.items():
            if not isinstance(key, str | int | float) or isinstance(key, bool):
                raise CellProblem(f"{field} has a key that is not text: {key!r}.")
            _refuse_unstorable(str(key), field=field)
            clean[str(key)] = json_ready(inner, field=field)
        return clean
    if isinstance(value, list | tuple):
        return [json_ready(inner, field=field) for inner in value]
    if isinstance(value, str):
        _refuse_unstorable(value, field=field)
        return value
    if isinstance(value, bool | int) or value is None:
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else repr(value)
    if isinstance(value, dt.datetime | dt.date | dt.time):
        return value.isoformat()
    raise CellProblem(f"{field} holds a value that cannot be stored: {value!r}.")


def _refuse_unstorable(text: str, *, field: str) -> None:
    # Refused up front, such text is a message for its row instead of a database error after every check passed.
    if problem := unstorable(text):
        raise CellProblem(f"{field} holds {problem}")


def check_text(value: Any, *, field: str) -> None:
    """Refuse text that cannot be stored anywhere in a value (nested too): enormous, or unstorable (a NUL)."""
    if isinstance(value, str):
        if len(value) > MAX_CELL_CHARS:
            raise CellProblem(f"{field} holds {len(value):,} characters; the limit is {MAX_CELL_CHARS:,}.")
        _refuse_unstorable(value, field=field)
    elif isinstance(value, dict):
        for key, inner in value.items():
            if isinstance(key, str):
                _refuse_unstorable(key, field=field)
            check_text(inner, field=field)
    elif isinstance(value, list | tuple):
        for inner in value:
            check_text(inner, field=field)


def attention_flag(value: Any) -> bool:
    """Read an attention-check marker: yes/no, true/false, 1/0, x or empty."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float) and value in (0, 1):
        return bool(value)
    word = cell_text(value).lower()
    if word in TRUE_WORDS:
        return True
    if word in FALSE_WORDS:
        return False
    raise CellProblem(f"attention_check must be yes or no (or true/false, 1/0), not {cell_text(value)!r}.")
