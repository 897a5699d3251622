"""Pick the funniest (or best) of N candidates, shown in a random order per rater.

Value: ``{"choice": <candidate key>}``.
"""

from collections.abc import Callable
from typing import Any

from django.core.exceptions import ValidationError
from django.utils.translation import gettext, gettext_noop

from .base import Level, Shortcut, TaskType, posted_position, require_dict


class PickOne(TaskType):
    name = "pick_one"
    title = "Pick one of N"
    level = Level.NOMINAL
    template = "annotation/task_types/pick_one.html"
    candidates = (2, 9)
    shuffle_candidates = True
    default_config = {"question": gettext_noop("Which one is the funniest?")}
    gold_field = "choice"
    # The question is a setting every type has (the builder's task section): nothing of its own.
    config_fields = ()

    def shortcuts(self, config: dict[str, Any]) -> list[Shortcut]:
        return [Shortcut(("1", "9"), gettext("Choose the option with that number"), joiner="to")]

    def value_from_form(self, data: Any, *, shown_order: list[str], config: dict[str, Any]) -> Any:
        return {"choice": posted_position(data, "choice", shown_order)}

    def validate(self, value: Any, *, candidate_keys: list[str], config: dict[str, Any], item_text: str = "") -> Any:
        choice = require_dict(value, "choice")["choice"]
        if choice not in candidate_keys:
            raise ValidationError(f"Unknown candidate {choice!r}.")
        return {"choice": choice}

    def to_number(self, value: Any, *, candidate_keys: list[str], config: dict[str, Any]) -> float | None:
        return float(candidate_keys.index(value["choice"]))

    def scale(self, config: dict[str, Any], *, max_candidates: Callable[[], int]) -> list[tuple[float, str]]:
        return [(float(i), f"candidate {i + 1}") for i in range(max(2, max_candidates()))]

    def coding_note(self, config: dict[str, Any]) -> str:
        return "Coding: the chosen candidate's listed position (0 = first)."
