"""Reading a judge's answer into a task type's value.

First the structured answer: a JSON object (as the schema asked for), found
even inside code fences or surrounding chatter. Second, a tolerant fallback
that accepts only unambiguous plain-text answers ("B", "Rating: 2", a lone
label). Anything else is unparseable, with the reason — never silently a tie,
a zero or a default label. Every value is finally checked by the task type's
own ``validate``, exactly as a human's answer would be.
"""

from dataclasses import dataclass, field
from typing import Any

from django.core.exceptions import ValidationError

from annotation.task_types import get_task_type

from .task_types import judging_type
from .task_types.reading import Unparseable, find_json_object


@dataclass
class Parsed:
    value: Any = None
    method: str = ""  # "json" or "fallback" when parsed
    error: str = ""
    extras: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.value is not None


def parse_answer(
    *, task_type: str, text: str | None, shown_order: list[str], config: dict[str, Any], item_text: str = ""
) -> Parsed:
    """Parse and validate one answer; ``Parsed.error`` says why when it fails."""
    if text is None or not text.strip():
        return Parsed(error="the answer is empty")
    kind = get_task_type(task_type)
    # Each task type's parser lives with its judging side (judging/task_types/).
    reader = judging_type(task_type)
    obj = find_json_object(text)
    errors = []
    attempts = [("json", lambda: reader.from_json(obj, shown=shown_order, config=config))] if obj is not None else []
    # The fallback only reads plain text: an object that failed is not re-read word by word.
    if obj is None:
        attempts.append(("fallback", lambda: (reader.from_text(text, shown=shown_order, config=config), {})))
    for method, attempt in attempts:
        try:
            value, extras = attempt()
            value = kind.validate(value, candidate_keys=shown_order, config=config, item_text=item_text)
        except Unparseable as exc:
            errors.append(str(exc))
            continue
        except ValidationError as exc:
            errors.append("; ".join(exc.messages))
            continue
        return Parsed(value=value, method=method, extras=extras)
    return Parsed(error=errors[-1] if errors else "nothing to parse")


__all__ = ["Parsed", "Unparseable", "find_json_object", "parse_answer"]
