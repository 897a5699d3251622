"""Gold answers as people write them in files, turned into the task type's value shape.

A study file or a spreadsheet says ``gold: 2`` or ``gold: funny``; the database
stores ``{"rating": 2}`` or ``{"label": "funny"}``. One converter per family of
value shapes; a gold already written as an object passes through unchanged and
is validated by the task type like any answer.
"""

import json
from collections import Counter
from collections.abc import Callable
from typing import Any

from ..json_limits import DataTooComplex, load_json
from ..tables import cell_text
from ..task_types import TIE, TaskType
from .cells import CellProblem


def _no_boolean(raw: Any) -> None:
    if isinstance(raw, bool):
        # YAML reads an unquoted yes/no/true/false as a boolean, not as a label.
        raise CellProblem(f'{str(raw).lower()} was read as a yes/no value; quote it in YAML (gold: "yes").')


def rating_gold(raw: Any) -> dict[str, Any]:
    _no_boolean(raw)
    if isinstance(raw, int):
        return {"rating": raw}
    text = cell_text(raw)
    try:
        number = float(text)
    except ValueError:
        raise CellProblem(f"{text!r} is not a rating; write a whole number such as 2.") from None
    if not number.is_integer():
        raise CellProblem(f"{text!r} is not a whole number.")
    return {"rating": int(number)}


def label_gold(raw: Any) -> dict[str, Any]:
    _no_boolean(raw)
    return {"label": cell_text(raw)}


def choice_gold(raw: Any) -> dict[str, Any]:
    _no_boolean(raw)
    choice = cell_text(raw)
    return {"choice": TIE if choice.lower() == TIE else choice}


def votes_gold(raw: Any) -> dict[str, Any]:
    """Candidate keys, each mention one vote: ``a``, ``a, a, b`` or a list ``[a, a, b]``."""
    _no_boolean(raw)
    keys = raw if isinstance(raw, list) else cell_text(raw).split(",")
    counts = Counter(cell_text(k) for k in keys if cell_text(k))
    if not counts:
        raise CellProblem("name at least one candidate key.")
    return {"votes": dict(counts)}


def replacement_gold(raw: Any) -> dict[str, Any]:
    _no_boolean(raw)
    return {"replacement": cell_text(raw)}


def text_gold(raw: Any) -> dict[str, Any]:
    _no_boolean(raw)
    return {"text": cell_text(raw)}


# Keyed by the value field a task type's bare gold cell fills (``TaskType.gold_field``).
GOLD_CONVERTERS: dict[str, Callable[[Any], dict[str, Any]]] = {
    "rating": rating_gold,
    "label": label_gold,
    "choice": choice_gold,
    "votes": votes_gold,
    "replacement": replacement_gold,
    "text": text_gold,
}


def gold_from_file(task_type: TaskType, raw: Any) -> Any:
    """The gold answer in value shape, or None when the file leaves it empty.

    A spreadsheet cell may also hold the full value as a JSON object
    (``{"votes": {"a": 2}}``). The result still goes through the task type's
    own validation, which checks the scale, the labels and the candidate keys.
    """
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return None
    if isinstance(raw, str) and raw.strip().startswith("{"):
        try:
            raw = load_json(raw)
        except json.JSONDecodeError as exc:
            raise CellProblem(f"the gold answer looks like JSON but is not valid JSON ({exc.msg}).") from None
        except DataTooComplex as exc:
            raise CellProblem(str(exc)) from None
    if isinstance(raw, dict):
        return raw
    converter = GOLD_CONVERTERS.get(task_type.gold_field)
    if isinstance(raw, list) and converter is not votes_gold:
        raise CellProblem("write a single gold answer, not a list.")
    if converter is None:
        raise CellProblem(f"write the gold answer of a {task_type.title.lower()} item as an object.")
    return converter(raw)
