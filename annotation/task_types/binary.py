"""A binary label, e.g. funny / not funny or explains / does not explain.

Value: ``{"label": <option value>}``. Coded 1.0 for the positive label.
"""

from collections.abc import Callable
from typing import Any

from django.core.exceptions import ValidationError
from django.utils.translation import gettext_noop

from .base import ConfigField, Level, Option, TaskType, require_dict


class BinaryLabel(TaskType):
    name = "binary"
    title = "Binary label"
    level = Level.NOMINAL
    template = "annotation/task_types/choice_buttons.html"
    default_config = {
        "options": [
            {"value": "funny", "label": gettext_noop("Funny")},
            {"value": "not_funny", "label": gettext_noop("Not funny")},
        ],
        "positive": "funny",
    }
    question = gettext_noop("Which label fits?")
    dichotomous = True
    gold_field = "label"
    config_fields = (
        ConfigField(
            "options",
            "options",
            "Labels",
            "Two lines, each “value: label” — the value is stored, the label shown.",
            count=2,
        ),
        ConfigField(
            "positive", "text", "Positive label", "The value of the label that counts as a hit (for MCC, FPR, FNR)."
        ),
    )

    def _values(self, config: dict[str, Any]) -> list[str]:
        return [str(o["value"]) for o in config["options"]]

    def check_config(self, config: dict[str, Any]) -> None:
        options = config.get("options")
        if not isinstance(options, list) or len(options) != 2:
            raise ValidationError("A binary label needs exactly two options.")
        if not all(isinstance(o, dict) and o.get("value") and o.get("label") for o in options):
            raise ValidationError("Each option needs a value and a label.")
        if config.get("positive") not in self._values(config):
            raise ValidationError("The positive label must be one of the two options.")

    def options(self, config: dict[str, Any]) -> list[Option]:
        return [Option(str(o["value"]), o["label"], str(i + 1)) for i, o in enumerate(config["options"])]

    def value_from_form(self, data: Any, *, shown_order: list[str], config: dict[str, Any]) -> Any:
        return {"label": data.get("label", "")}

    def validate(self, value: Any, *, candidate_keys: list[str], config: dict[str, Any], item_text: str = "") -> Any:
        label = str(require_dict(value, "label")["label"])
        if label not in self._values(config):
            raise ValidationError(f"Unknown label {label!r}; expected one of {', '.join(self._values(config))}.")
        return {"label": label}

    def to_number(self, value: Any, *, candidate_keys: list[str], config: dict[str, Any]) -> float | None:
        return 1.0 if value["label"] == config["positive"] else 0.0

    def scale(self, config: dict[str, Any], *, max_candidates: Callable[[], int]) -> list[tuple[float, str]]:
        positive = str(config["positive"])
        negative = next(str(o["value"]) for o in config["options"] if str(o["value"]) != positive)
        return [(0.0, negative), (1.0, positive)]

    def coding_note(self, config: dict[str, Any]) -> str:
        return f"Coding: 1 = {config.get('positive')}, 0 = the other label."
