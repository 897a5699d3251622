"""Reading a judge's answer into a task type's value, without ever guessing.

In order: the structured answer (the whole reply is the JSON object the schema
asked for); the JSON object the model meant, found in a code fence or among
prose and read strictly, forgiving only raw newlines/tabs inside strings and a
trailing comma; and, only when the answer holds no JSON at all, the task type's
unambiguous free-text patterns ("Answer: A", "Rating: 2", a lone label, a
negation read as such). Refusals, hedges, cut-off JSON and anything else are
unparseable with the reason — never silently a tie, a zero or a default label.
Every value is finally checked by the task type's own ``validate``, exactly as
a human's answer would be, and ``Parsed.method`` says which way it was read;
the judging job stores it in the judgment's provenance (``parse.method``).
"""

from dataclasses import dataclass, field
from typing import Any

from django.core.exceptions import ValidationError

from annotation.task_types import get_task_type

from .task_types import judging_type
from .task_types.reading import Unparseable, find_json_object, read_json, refuse_unclear

#: Parse methods a judgment can record; a text pattern records ``text_pattern:<its name>``.
STRUCTURED, JSON, JSON_REPAIRED, TEXT_PATTERN = "structured", "json", "json_repaired", "text_pattern"


@dataclass
class Parsed:
    value: Any = None
    method: str = ""  # structured | json | json_repaired | text_pattern:<name>, when parsed
    error: str = ""
    extras: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.value is not None


def parse_answer(
    *,
    task_type: str,
    text: str | None,
    shown_order: list[str],
    config: dict[str, Any],
    item_text: str = "",
    structured: bool = False,
) -> Parsed:
    """Parse and validate one answer; ``Parsed.error`` says why when it fails.

    ``structured``: the answer was requested with structured output (a JSON
    schema or JSON mode), so a reply that is exactly one valid object is
    recorded as ``structured`` rather than ``json``.
    """
    if text is None or not text.strip():
        return Parsed(error="the answer is empty")
    kind = get_task_type(task_type)
    # Each task type's parser lives with its judging side (judging/task_types/).
    reader = judging_type(task_type)
    try:
        found = read_json(text)
        if found is not None:
            # An object that fails is not re-read word by word: the model's own structure said otherwise.
            value, extras = reader.from_json(found.obj, shown=shown_order, config=config)
            method = STRUCTURED if structured and found.whole and found.method == JSON else found.method
        else:
            refuse_unclear(text, hedges=not reader.reads_prose)
            value, pattern = reader.from_text(text, shown=shown_order, config=config)
            extras, method = {}, f"{TEXT_PATTERN}:{pattern}"
        value = kind.validate(value, candidate_keys=shown_order, config=config, item_text=item_text)
    except Unparseable as exc:
        return Parsed(error=str(exc))
    except ValidationError as exc:
        return Parsed(error="; ".join(exc.messages))
    return Parsed(value=value, method=method, extras=extras)


__all__ = ["Parsed", "Unparseable", "find_json_object", "parse_answer"]
